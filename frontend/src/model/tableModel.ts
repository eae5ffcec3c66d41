/**
 * Pure model of the delta tables: columns, what a diff table asks its
 * route (the server filters; it sorts a table larger than one answer), the
 * sort of rows held whole by the server's generated rule (default: largest
 * absolute delta of the primary duration first) and CSV export. No DOM here, so it is unit-tested and the
 * table component only renders what this returns.
 *
 * Row fields follow the contract (DiffOperatorRow, DiffKernelRow): for a
 * metric `m` (`calls`, `host_self_us`, ...) a row has `baseline_m`,
 * `experimental_m`, `delta_m` and its delta % under `pctKey(m)`, all
 * computed by the server; nothing here derives a delta.
 */
import type { DiffPipelineCallbackRow, DiffPipelineStageRow, DiffTableRow, PercentileDeltaRow, RankDeltaRow, RankRow } from "../api";
import type { Significance } from "./explain";
import { DELTA_PCT_FIELDS, MAGNITUDE_SORTED, SUMMED_TIMES, TABLE_KEYS, TABLE_SORT_KEYS } from "../generated/tableRules";
import { formatDecimal, formatInt, formatMs, formatPct, formatSignedInt, formatSignedMs } from "./format";

/** A row of any delta table: the paged trace tables, or the pipeline's stage and callback tables (stages named for display). */
export type TableRow =
  | DiffTableRow
  | (DiffPipelineStageRow & { name: string })
  | DiffPipelineCallbackRow
  | (RankDeltaRow & { name: string })
  | (RankRow & { name: string })
  | (PercentileDeltaRow & { name: string; rank: number });

export type SortDir = "asc" | "desc";
export interface SortSpec {
  key: string;
  dir: SortDir;
}

export type ColumnRole = "name" | "shape" | "wide_text" | "baseline" | "experimental" | "delta" | "delta_pct";

export interface Column {
  /** Field of the row this column shows (also the server's sort key). */
  key: string;
  role: ColumnRole;
  /** Metric the column belongs to (`host_self_us`), null for name/shape. */
  metric: string | null;
  /** Short header under the metric's group header. */
  label: string;
  /** Full description for tooltips, screen readers and CSV headers. */
  title: string;
  /** False for a column the table cannot sort by (one made here from a row's lists, not a field the route sorts). */
  sortable?: boolean;
  /** The metric's group header, when it says more than its label and unit (what a time is summed over). */
  group?: string;
  /**
   * Field shown instead of `key` where the row has it (a kernel's short name, analysis/kernel_names.py);
   * `key`'s value (the full name) is then the cell's tooltip, the sort, the filter and the CSV.
   */
  display?: string;
  /** The column's least width in px, where it is not its role's (a kernel table's names, short as they are). */
  width?: number;
}

const METRIC_LABELS: Record<string, string> = {
  calls: "Calls",
  host_self_us: "Host self",
  host_total_us: "Host total",
  device_self_us: "Device self",
  device_total_us: "Device total",
  total_us: "Total",
  mean_us: "Mean",
  min_us: "Min",
  max_us: "Max",
  // Pipeline statistics (seconds, shown in ms).
  per_step_s: "Per step",
  mean_s: "Mean",
  total_s: "Total",
  task_mean_s: "Task mean",
  // Working vs waiting: far below the task mean, the workers wait (I/O, the GIL).
  task_cpu_mean_s: "Task CPU mean",
  put_wait_mean_s: "Put wait mean",
  get_wait_mean_s: "Get wait mean",
  qps: "Items/s",
  occupancy_pct: "Queue occupancy %",
  busy_pct: "Workers busy %",
  concurrency: "Concurrency",
  // Ranks of a distributed run (average per step).
  steps: "Steps",
  step_time_us: "Step time",
  computation_us: "Computation",
  communication_us: "Communication",
  idle_us: "Idle",
  vs_median_us: "Against the median rank",
};

export function metricLabel(metric: string): string {
  return METRIC_LABELS[metric] ?? metric.replace(/_us$/, "").replace(/_/g, " ");
}

/** Whether a metric is a duration (µs, shown in ms) rather than a count. */
export function isDuration(metric: string): boolean {
  return metric.endsWith("_us") || metric.endsWith("_s");
}

/** A duration of `metric` in µs (trace tables are in µs, pipeline statistics in seconds). */
export function durationUs(metric: string, v: number): number {
  return metric.endsWith("_us") ? v : v * 1e6;
}

/**
 * Which way a delta of `metric` is good: times lower; throughput higher;
 * counts and how busy a stage or queue is are facts, neither good nor bad
 * (a busier stage may be one that finally gets work).
 */
export function metricPolarity(metric: string): "lower" | "higher" | "neutral" {
  if (metric === "qps") return "higher";
  if (isCount(metric) || metric === "concurrency" || metric === "busy_pct" || metric === "occupancy_pct") return "neutral";
  return "lower";
}

/** Counts print as integers; rates, shares and concurrencies keep two decimals. */
function isCount(metric: string): boolean {
  return metric === "calls" || metric === "tasks" || metric === "items" || metric === "steps";
}

/**
 * The delta % field of a metric, as the server names it: read from the
 * generated rules (diff/delta.py:pct_name over the contract's rows), never
 * derived here. An unknown metric is a programming error.
 */
export function pctKey(metric: string): string {
  const key = DELTA_PCT_FIELDS[metric];
  if (key === undefined) throw new Error(`no delta % field for ${metric}: not a delta row's quantity in the contract`);
  return key;
}

/** A text column beside the name: an operator's input shape, a launch row's module or its kernels. */
export interface TextColumn {
  key: string;
  label: string;
  title?: string;
  /** A long text (kernel names): a wider column. */
  wide?: boolean;
  /** False: not a field the route sorts by (see Column). */
  sortable?: boolean;
  /** Field shown instead of `key` where the row has it (see Column). */
  display?: string;
}

/**
 * Name (and shape), then four columns per metric. The primary duration's
 * group comes first so the default sort column is in view without
 * scrolling sideways; the others keep the server's order.
 */
export function buildColumns(metrics: readonly string[], withShape: boolean | readonly TextColumn[], primary: string | null = null): Column[] {
  const cols: Column[] = [{ key: "name", role: "name", metric: null, label: "Name", title: "Name", display: "short_name" }];
  const texts: readonly TextColumn[] = withShape === true ? [{ key: "input_shape", label: "Input shape" }] : withShape || [];
  for (const t of texts) {
    const col: Column = { key: t.key, role: t.wide ? "wide_text" : "shape", metric: null, label: t.label, title: t.title ?? t.label };
    if (t.display) col.display = t.display;
    if (t.sortable === false) col.sortable = false;
    cols.push(col);
  }
  const ordered = primary && metrics.includes(primary) ? [primary, ...metrics.filter((m) => m !== primary)] : metrics;
  for (const m of ordered) {
    const g = metricLabel(m);
    const unit = isDuration(m) ? " (ms)" : "";
    cols.push(
      { key: `baseline_${m}`, role: "baseline", metric: m, label: "Base", title: `${g}${unit}, baseline` },
      { key: `experimental_${m}`, role: "experimental", metric: m, label: "Exp", title: `${g}${unit}, experimental` },
      { key: `delta_${m}`, role: "delta", metric: m, label: "Δ", title: `${g}${unit}, delta (experimental − baseline)` },
      { key: pctKey(m), role: "delta_pct", metric: m, label: "Δ %", title: `${g}, delta %` },
    );
  }
  return cols;
}

/**
 * A trace table's columns with what each summed time is over in its header
 * and tooltips: the Overview's times are per step, a table's are each run's
 * totals over its profiled steps ("Host self (ms, all profiled steps)"),
 * inside the piece when the table is cut to one, or per sample (token) when
 * the runs' work per step differs. Which times are sums is the server's rule
 * (diff/table_view.py, generated into SUMMED_TIMES).
 */
export function withSummedScope(cols: readonly Column[], perUnit: string | null, inPiece: boolean): Column[] {
  const scope = perUnit ? `ms per ${perUnit}` : inPiece ? "ms, in this piece" : "ms, all profiled steps";
  return cols.map((c) => {
    if (!c.metric || !SUMMED_TIMES.has(c.metric)) return c;
    const what = metricLabel(c.metric);
    const group = `${what} (${scope})`;
    // A delta % has no unit to scope; the other three say it as their header does.
    return c.role === "delta_pct" ? { ...c, group } : { ...c, group, title: `${group}${c.title.slice(c.title.indexOf(","))}` };
  });
}

// ---------------------------------------------------------------- fields

/** The significance of a diff-table row's primary delta; null on other tables and inside a piece. */
export function rowSignificance(row: TableRow): Significance | null {
  const sig = (row as { significance?: Significance | null }).significance;
  return sig ?? null;
}

/**
 * A row's scalar field by name. The columns come from the answer (`columns`,
 * `primary`), so keys are strings; a non-scalar field (a row's
 * `significance`) is not a column and reads as undefined.
 */
export function field(row: TableRow, key: string): number | string | null | undefined {
  const v: unknown = (row as Readonly<Record<string, unknown>>)[key];
  return typeof v === "number" || typeof v === "string" || v === null ? v : undefined;
}

function num(v: unknown): number {
  return typeof v === "number" && Number.isFinite(v) ? v : 0;
}

/** The input shape of an operator row grouped by shape; null otherwise (kernels have none). */
export function inputShape(row: TableRow): string | null {
  return "input_shape" in row ? row.input_shape : null;
}

/**
 * Metrics worth a column: those with a non-zero value on either side in
 * some row. A CPU-only pair of traces has all-zero device columns, which
 * would only push the useful ones off screen. `calls` and `keep` (the
 * primary metric, the default sort) always stay.
 */
export function informativeMetrics(rows: readonly DiffTableRow[], metrics: readonly string[], keep: string | null = null): string[] {
  return metrics.filter(
    (m) => m === "calls" || m === keep || rows.some((r) => num(field(r, `baseline_${m}`)) !== 0 || num(field(r, `experimental_${m}`)) !== 0),
  );
}

// ------------------------------------------------- what a diff table asks
// The server filters the diff tables, and sorts them when it has more rows
// than one answer holds (diff/tables.py:query): the frontend holds no copy
// of either rule. A table held whole is sorted here, by the rule generated
// from the server (tableRules.ts; checked against diff/tables.py:sort_table's
// own order in sortCases.ts), so a header click needs no request.

/** A diff table as `<route>:<group_by>`, the key of the generated TABLE_KEYS and TABLE_SORT_KEYS. */
export function diffTableId(table: string, groupBy: string | null | undefined): string {
  return `${table}:${groupBy || "name"}`;
}

const NAME_ONLY: readonly string[] = ["name"];

/** The key columns of a diff table (its text sort keys, in the order ties fall back to), by the server's rule. */
export function tableKeys(id: string): readonly string[] {
  return TABLE_KEYS[id] ?? NAME_ONLY;
}

/**
 * The sort the URL asks for, when the table's route sorts by it; null
 * (the server's default, the largest change of the primary first) for an
 * empty or stale key, which the route would refuse.
 */
export function askedSort(id: string, key: string, dir: SortDir): SortSpec | null {
  return key && (TABLE_SORT_KEYS[id] ?? []).includes(key) ? { key, dir } : null;
}

/** Whether the server holds more rows of a table than its answer: the server then sorts it (and the answer is a part). */
export function isCut(answer: { total: number; rows: readonly unknown[] }): boolean {
  return answer.total > answer.rows.length;
}

/** The filter, sort and order a diff table's request carries: the filter always; the sort only when the server sorts. */
export function tableAsk(filter: string, sort: SortSpec | null, serverSorts: boolean): { filter?: string; sort?: string; order?: SortDir } {
  const out: { filter?: string; sort?: string; order?: SortDir } = {};
  const text = filter.trim();
  if (text) out.filter = text;
  if (serverSorts && sort) {
    out.sort = sort.key;
    out.order = sort.dir;
  }
  return out;
}

// ---------------------------------------------------------------- sort

export function defaultSort(primary: string): SortSpec {
  return { key: `delta_${primary}`, dir: "desc" };
}

/** Whether `key` sorts by magnitude ("what changed most"), by the server's rule (generated tableRules.ts). */
export function sortsByMagnitude(key: string): boolean {
  return MAGNITUDE_SORTED.has(key);
}

/**
 * Header click: the same column flips its direction; a new column starts
 * descending for numbers (largest first is what one looks for) and
 * ascending for text (`text`: the column holds text, as a table's key
 * columns do).
 */
export function nextSort(current: SortSpec, key: string, text = key === "name"): SortSpec {
  if (current.key === key) return { key, dir: current.dir === "asc" ? "desc" : "asc" };
  return { key, dir: text ? "asc" : "desc" };
}

/**
 * Returns a new sorted array, by diff/tables.py:sort_table's rule (generated
 * parts: which deltas sort by magnitude, the key columns): `keys` are the
 * table's key columns (tableKeys), sorted by lower-cased text; deltas by
 * magnitude; missing values (null percentages) last in both directions;
 * ties by the keys, ascending, so the order is deterministic. Keys are
 * extracted once (not per comparison) and text is compared by code units
 * rather than Intl.Collator, which is several times slower: 10k rows sort
 * in a few ms. The tables of routes that send every row and never sort
 * (pipeline stages, ranks) use the same rule with the name as their key.
 */
export function sortRows<R extends TableRow>(rows: readonly R[], spec: SortSpec, nameOrder?: (row: R) => string, keys: readonly string[] = ["name"]): R[] {
  const n = rows.length;
  const idx = new Array<number>(n);
  for (let i = 0; i < n; i++) idx[i] = i;
  const sign = spec.dir === "asc" ? 1 : -1;
  // `nameOrder`: how names sort when their text would sort wrong ("rank 10" before "rank 2").
  const ties = keys.map((k) =>
    k === "name"
      ? rows.map(nameOrder ?? ((r) => r.name))
      : rows.map((r) => {
          const v = field(r, k);
          return typeof v === "string" ? v : "";
        }),
  );
  const tie = (a: number, b: number): number => {
    for (const t of ties) {
      const c = cmpStr(t[a], t[b]);
      if (c) return c;
    }
    return 0;
  };

  if (keys.includes(spec.key)) {
    const byName = spec.key === "name" && nameOrder;
    const values = rows.map((r, i) => {
      if (byName) return ties[keys.indexOf("name")]?.[i] ?? null;
      const v = field(r, spec.key);
      return typeof v === "string" ? v.toLowerCase() : null;
    });
    idx.sort((a, b) => {
      const ka = values[a] ?? null;
      const kb = values[b] ?? null;
      if (ka === null || kb === null) return ka === kb ? tie(a, b) : ka === null ? 1 : -1;
      return sign * cmpStr(ka, kb) || tie(a, b);
    });
  } else {
    const magnitude = sortsByMagnitude(spec.key);
    const keys = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      const r = rows[i];
      const v = r ? field(r, spec.key) : undefined;
      keys[i] = typeof v === "number" && Number.isFinite(v) ? (magnitude ? Math.abs(v) : v) : Number.NaN;
    }
    idx.sort((a, b) => {
      const ka = keys[a] as number;
      const kb = keys[b] as number;
      const na = Number.isNaN(ka);
      const nb = Number.isNaN(kb);
      if (na || nb) return na === nb ? tie(a, b) : na ? 1 : -1;
      return sign * (ka - kb) || tie(a, b);
    });
  }
  return idx.map((i) => rows[i] as R);
}

function cmpStr(a: string | undefined, b: string | undefined): number {
  const x = a ?? "";
  const y = b ?? "";
  return x < y ? -1 : x > y ? 1 : 0;
}

// ---------------------------------------------------------------- cell text

/** A text cell's whole value (a kernel's full name where the cell shows its short name): its tooltip. */
export function cellFullText(row: TableRow, col: Column): string {
  const v = field(row, col.key);
  return typeof v === "string" ? v : "";
}

export function cellText(row: TableRow, col: Column): string {
  const shown = col.display ? field(row, col.display) : undefined;
  if (typeof shown === "string" && shown !== "" && (col.role === "name" || col.role === "shape" || col.role === "wide_text")) return shown;
  const v = field(row, col.key);
  switch (col.role) {
    case "name":
    case "shape":
    case "wide_text":
      return typeof v === "string" ? v : "";
    case "delta_pct":
      return formatPct(typeof v === "number" ? v : null);
    case "delta":
      if (typeof v !== "number") return formatPct(null);
      if (col.metric && isDuration(col.metric)) return formatSignedMs(durationUs(col.metric, v));
      return !col.metric || isCount(col.metric) ? formatSignedInt(v) : formatDecimal(v, true);
    default:
      if (typeof v !== "number") return formatPct(null);
      if (col.metric && isDuration(col.metric)) return formatMs(durationUs(col.metric, v));
      return !col.metric || isCount(col.metric) ? formatInt(v) : formatDecimal(v);
  }
}

/**
 * A value cell's tooltip: what the column is and the value, or, where the
 * row holds null for a side's value (that run did not measure it: a
 * DataLoader part's items/s), that it was not measured, on the side and on
 * the deltas that would need it: "—" alone reads as zero or as an error.
 */
export function cellTitle(row: TableRow, col: Column): string {
  const text = cellText(row, col);
  if (col.metric === null || field(row, col.key) !== null) return `${col.title}: ${text}`;
  if (col.role === "baseline" || col.role === "experimental") return `${col.title}: not measured in this run`;
  const unmeasured = (["baseline", "experimental"] as const).filter((side) => field(row, `${side}_${col.metric}`) === null);
  if (unmeasured.length === 0) return `${col.title}: ${text}`;
  return `${col.title}: none, ${unmeasured.length === 2 ? "neither run measured it" : `the ${unmeasured[0]} run did not measure it`}`;
}

// ---------------------------------------------------------------- CSV

function csvField(value: string): string {
  // Spreadsheet formula injection: a trace name like "=HYPERLINK(...)" must
  // stay text when the CSV is opened, so prefix it with a quote.
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\n\r]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/**
 * RFC 4180 CSV of the rows as shown (filtered, sorted), with raw numbers
 * (durations in ms, full precision) so a spreadsheet can compute with them.
 */
export function toCsv(rows: readonly DiffTableRow[], columns: readonly Column[]): string {
  const lines = [columns.map((c) => csvField(c.title)).join(",")];
  for (const row of rows) {
    const cells = columns.map((c) => {
      const v = field(row, c.key);
      if (typeof v === "string") return csvField(v);
      if (typeof v !== "number" || !Number.isFinite(v)) return "";
      // Durations are stored in µs (or s); export ms like the header says.
      const ms = c.metric !== null && isDuration(c.metric) && c.role !== "delta_pct";
      return String(ms && c.metric !== null ? durationUs(c.metric, v) / 1000 : v);
    });
    lines.push(cells.join(","));
  }
  return lines.join("\r\n") + "\r\n";
}

/** A data: URL (not a Blob URL) so the download works under any CSP and needs no revocation. */
export function csvDataUrl(csv: string): string {
  return `data:text/csv;charset=utf-8,${encodeURIComponent(csv)}`;
}
