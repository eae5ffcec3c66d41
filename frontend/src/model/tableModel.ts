/**
 * Pure model of the operator / kernel delta tables: columns, deltas,
 * filtering, sorting (default: largest absolute delta of the primary
 * duration first) and CSV export. No DOM here, so it is unit-tested and the
 * table component only renders what this returns.
 *
 * Row fields follow the contract (DiffOperatorRow, DiffKernelRow): for a
 * metric `m` (`calls`, `host_self_us`, ...) a row has `baseline_m`,
 * `experimental_m`, `delta_m` and its delta % under `pctKey(m)`, all
 * computed by the server; nothing here derives a delta.
 */
import type { DiffPipelineCallbackRow, DiffPipelineStageRow, DiffTableRow, PercentileDeltaRow, RankDeltaRow, RankRow } from "../api";
import type { Significance } from "./explain";
import { DELTA_PCT_FIELDS, MAGNITUDE_SORTED } from "../generated/tableRules";
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
}

/**
 * Name (and shape), then four columns per metric. The primary duration's
 * group comes first so the default sort column is in view without
 * scrolling sideways; the others keep the server's order.
 */
export function buildColumns(metrics: readonly string[], withShape: boolean | readonly TextColumn[], primary: string | null = null): Column[] {
  const cols: Column[] = [{ key: "name", role: "name", metric: null, label: "Name", title: "Name" }];
  const texts: readonly TextColumn[] = withShape === true ? [{ key: "input_shape", label: "Input shape" }] : withShape || [];
  for (const t of texts) cols.push({ key: t.key, role: t.wide ? "wide_text" : "shape", metric: null, label: t.label, title: t.title ?? t.label });
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

// ---------------------------------------------------------------- filter
// Offline: the rows already fetched are filtered and sorted here, as the
// server would (diff/tables.py:filter_mask, sort_table), so typing in the
// filter or clicking a header needs no request. When the table we hold is
// cut at the server's row limit, the server filters (`needsServerFilter`).

/** Offline mirror of diff/tables.py:filter_mask: case-insensitive substring on the name (and input shape); never a regex. */
export function filterRows(rows: readonly DiffTableRow[], text: string): DiffTableRow[] {
  const needle = text.trim().toLowerCase();
  if (!needle) return rows.slice();
  const second = (r: DiffTableRow) => inputShape(r) ?? ("module" in r ? r.module : null);
  return rows.filter((r) => r.name.toLowerCase().includes(needle) || (second(r)?.toLowerCase().includes(needle) ?? false));
}

// ---------------------------------------------------- partial tables

/**
 * Whether a filter has to be sent to the server: the table we hold was cut
 * at the server's row limit (`total` rows exist, fewer were received), so
 * a row matching the filter may be outside it.
 */
export function needsServerFilter(filter: string, total: number, received: number): boolean {
  return filter.trim() !== "" && total > received;
}

/** The server's answer to a filtered request, as far as it got. */
export type ServerMatches =
  | { state: "none" }
  | { state: "pending" }
  | { state: "ok"; rows: readonly DiffTableRow[]; total: number }
  | { state: "error"; message: string };

export interface FilteredTable {
  /** Rows to show, unsorted. */
  rows: DiffTableRow[];
  /**
   * True when the server has rows that belong here but are not in `rows`:
   * the unfiltered table beyond the row limit, or a filter whose matches
   * the server has not sent (still searching, failed, or too many).
   */
  partial: boolean;
}

function rowKey(r: DiffTableRow): string {
  return `${r.name}\u0000${inputShape(r) ?? ""}`;
}

/**
 * What the table shows for a filter. `all` is the unfiltered table as
 * fetched (`total` rows on the server). When it is complete, the filter is
 * applied here. When it is not, the server's matches (names, over the whole
 * table) are merged with the local ones (name or input shape, among the
 * rows held), each row once.
 */
export function filteredTable(all: readonly DiffTableRow[], total: number, filter: string, server: ServerMatches): FilteredTable {
  const local = filterRows(all, filter);
  const cut = total > all.length;
  if (!filter.trim()) return { rows: local, partial: cut };
  if (!cut) return { rows: local, partial: false };
  if (server.state !== "ok") return { rows: local, partial: true };
  const seen = new Set(local.map(rowKey));
  const rows = local.slice();
  for (const r of server.rows) {
    const k = rowKey(r);
    if (!seen.has(k)) {
      seen.add(k);
      rows.push(r);
    }
  }
  return { rows, partial: server.total > server.rows.length };
}

// ---------------------------------------------------------------- sort

export function defaultSort(primary: string): SortSpec {
  return { key: `delta_${primary}`, dir: "desc" };
}

/** Whether `key` sorts by magnitude ("what changed most"), by the server's rule (generated tableRules.ts). */
export function sortsByMagnitude(key: string): boolean {
  return MAGNITUDE_SORTED.has(key);
}

function isTextKey(key: string): boolean {
  return key === "name" || key === "input_shape";
}

/**
 * Header click: the same column flips its direction; a new column starts
 * descending for numbers (largest first is what one looks for) and
 * ascending for text.
 */
export function nextSort(current: SortSpec, key: string): SortSpec {
  if (current.key === key) return { key, dir: current.dir === "asc" ? "desc" : "asc" };
  return { key, dir: isTextKey(key) ? "asc" : "desc" };
}

/**
 * Returns a new sorted array. Missing values (null percentages) sort last in
 * both directions; ties fall back to the name so the order is deterministic.
 * Keys are extracted once (not per comparison) and text is compared by
 * lower-cased code units rather than Intl.Collator, which is several times
 * slower: 10k rows sort in a few ms.
 */
export function sortRows<R extends TableRow>(rows: readonly R[], spec: SortSpec, nameOrder?: (row: R) => string): R[] {
  const n = rows.length;
  const idx = new Array<number>(n);
  for (let i = 0; i < n; i++) idx[i] = i;
  const sign = spec.dir === "asc" ? 1 : -1;
  // `nameOrder`: how names sort when their text would sort wrong ("rank 10" before "rank 2").
  const names = rows.map(nameOrder ?? ((r) => r.name));

  if (isTextKey(spec.key)) {
    const keys = rows.map((r, i) => {
      if (spec.key === "name" && nameOrder) return names[i] ?? null;
      const v = field(r, spec.key);
      return typeof v === "string" ? v.toLowerCase() : null;
    });
    idx.sort((a, b) => {
      const ka = keys[a] ?? null;
      const kb = keys[b] ?? null;
      if (ka === null || kb === null) return ka === kb ? cmpStr(names[a], names[b]) : ka === null ? 1 : -1;
      return sign * cmpStr(ka, kb) || cmpStr(names[a], names[b]);
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
      if (na || nb) return na === nb ? cmpStr(names[a], names[b]) : na ? 1 : -1;
      return sign * (ka - kb) || cmpStr(names[a], names[b]);
    });
  }
  return idx.map((i) => rows[i] as R);
}

function cmpStr(a: string | undefined, b: string | undefined): number {
  const x = a ?? "";
  const y = b ?? "";
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Filter then sort: what the table shows. */
export function viewRows(rows: readonly DiffTableRow[], filter: string, sort: SortSpec): DiffTableRow[] {
  return sortRows(filterRows(rows, filter), sort);
}

// ---------------------------------------------------------------- cell text

export function cellText(row: TableRow, col: Column): string {
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
