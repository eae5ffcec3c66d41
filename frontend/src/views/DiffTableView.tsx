/**
 * A diff table (operators, kernels, ...). Everything table-specific comes
 * from the answer's `table` id through the registry in model/diffTables.ts;
 * the `table` prop only says which route to ask. The server filters and
 * (for a table larger than one answer) sorts (diff/tables.py): the
 * frontend holds no copy of either rule. The whole table is fetched once
 * (up to the server's row limit); a filter asks the route again once typing
 * stops; a table held whole is re-sorted here by the server's generated
 * rule, so a header click needs no round trip, and a larger one is asked
 * again in the new order. The page says whenever it shows a part.
 */
import { useMemo, useRef, useState } from "preact/hooks";
import { MAX_TABLE_ROWS, type ApiClient, type DiffSelection, type DiffTableKind, type DiffTableResponse, type DiffTableRow, type RequestOpts } from "../api";
import { Loading } from "../components/Loading";
import { ErrorMessage, Message } from "../components/Message";
import { VirtualTable } from "../components/VirtualTable";
import { csvFileName, DIFF_TABLES, groupByParam, KERNEL_GROUPINGS, kernelCells, launchColumns } from "../model/diffTables";
import { ProfilerPair, useProfilerPresent } from "../components/ProfilerLink";
import { sidesOf } from "../model/profilerLink";
import { formatInt } from "../model/format";
import {
  askedSort,
  buildColumns,
  withSummedScope,
  csvDataUrl,
  defaultSort,
  diffTableId,
  informativeMetrics,
  isCut,
  metricLabel,
  nextSort,
  sortRows,
  tableAsk,
  tableKeys,
  toCsv,
  type Column,
  type SortSpec,
} from "../model/tableModel";
import { timelineOf, type UrlState } from "../model/urlState";
import { useDebounced } from "../useDebounced";
import { useRequest, type RequestState } from "../useRequest";

/** Wait this long after the last key press before asking the server to filter. */
const FILTER_DEBOUNCE_MS = 300;

export interface DiffTableViewProps {
  client: ApiClient;
  sel: DiffSelection;
  /** The route to ask (`diff/<table>`); the answer's own `table` decides how it is shown. */
  table: DiffTableKind;
  state: UrlState;
  onChange: (patch: Partial<UrlState>) => void;
  reloadToken: number;
  /** Restrict the rows to this diff/modules piece (and say so). */
  piece?: { path: string; name: string } | null;
  height?: number;
}

/**
 * The latest answer of a request for one table (`identity`: the runs,
 * grouping and piece), kept while the request is asked again (a new filter
 * or order), so the rows stay on screen instead of a "Loading" flash.
 */
function useKept<T>(req: RequestState<T>, identity: string): T | null {
  const kept = useRef<{ identity: string; data: T } | null>(null);
  if (req.state === "ok") kept.current = { identity, data: req.data };
  return kept.current && kept.current.identity === identity ? kept.current.data : null;
}

/** An answer with the filter and order it was asked with. */
interface Tagged {
  filter: string;
  order: string;
  resp: DiffTableResponse;
}

const TEXT_ROLES: ReadonlySet<Column["role"]> = new Set(["name", "shape", "wide_text"]);

/** A kernel table's name column, in px: most short kernel names whole. */
const KERNEL_NAME_W = 340;

export function DiffTableView({ client, sel, table: asked, state, onChange, reloadToken, piece = null, height }: DiffTableViewProps) {
  const groupBy = groupByParam(asked, state.byShape, state.launch);
  const timeline = useProfilerPresent();
  const id = diffTableId(asked, groupBy);
  const keys = tableKeys(id);
  const wanted = askedSort(id, state.sort, state.dir);
  const fetchTable = (filter: string, serverSorts: boolean, opts: RequestOpts) =>
    client.diffTable(asked, sel, { limit: MAX_TABLE_ROWS, ...tableAsk(filter, wanted, serverSorts), groupBy, path: piece?.path || undefined }, opts);
  const tableDeps = [client, asked, sel.baseline, sel.bWorker, sel.bSpan, sel.experimental, sel.eWorker, sel.eSpan, groupBy, piece?.path, reloadToken];
  const identity = JSON.stringify(tableDeps.slice(1));

  // The table unfiltered. Held whole, it is sorted here; cut at the row
  // limit, the server sorts it, and a new order is a new request.
  const lastAll = useRef<{ identity: string; cut: boolean } | null>(null);
  const serverSorts = lastAll.current !== null && lastAll.current.identity === identity && lastAll.current.cut;
  const order = serverSorts && wanted ? `${wanted.key}:${wanted.dir}` : "";
  const allReq = useRequest<DiffTableResponse>((opts) => fetchTable("", serverSorts, opts), [...tableDeps, order]);
  const all = useKept(allReq, identity);
  if (all) lastAll.current = { identity, cut: isCut(all) };

  // The server's matches of the filter, once typing stops, tagged with the filter and order they answer.
  const filter = state.filter.trim();
  const settled = useDebounced(filter, FILTER_DEBOUNCE_MS);
  const asking = settled !== "" && settled === filter;
  const matchReq = useRequest<Tagged>(
    asking ? (opts) => fetchTable(settled, serverSorts, opts).then((resp) => ({ filter: settled, order, resp })) : null,
    [...tableDeps, settled, order],
  );
  // Kept across filters: the last matches stay on screen while the server searches for the next.
  const kept = useKept(matchReq, identity);
  const matches = kept?.resp ?? null;
  const fresh = filter !== "" && matchReq.state === "ok" && matchReq.data.filter === filter && matchReq.data.order === order;
  const sorting = allReq.state === "loading" && all !== null;

  const table = useMemo(() => {
    if (!all) return null;
    const r = all;
    const byShape = r.group_by === "name_and_shape";
    // Kernels grouped by what launched them: the module and each run's kernels beside the operator.
    const launched = r.table === "kernels" && r.group_by !== "name";
    const shownMetrics = informativeMetrics(r.rows, r.columns, r.primary);
    const hidden = r.columns.filter((m) => !shownMetrics.includes(m));
    const texts = launched ? launchColumns(r.group_by ?? "") : byShape;
    const built = withSummedScope(buildColumns(shownMetrics, texts, r.primary), r.per_unit, r.path !== "");
    // Kernel names, short as they are (analysis/kernel_names.py), get room for about 48 characters.
    const columns = r.table === "kernels" && !launched ? built.map((c) => (c.role === "name" ? { ...c, width: KERNEL_NAME_W } : c)) : built;
    return { resp: r, byShape, columns, hidden };
  }, [all]);

  const sort: SortSpec = useMemo(() => {
    if (!table) return { key: "", dir: "desc" };
    return wanted ?? defaultSort(table.resp.primary);
  }, [table, wanted?.key, wanted?.dir]);

  // What the table shows: the matches when a filter is on (the last filter's, marked "Searching…",
  // while the server searches for the next; none before its first answer, never the unfiltered rows).
  const source = filter ? matches : all;
  const shown = useMemo(() => {
    if (!table || !source) return [];
    const rows = source.table === "kernels" && source.group_by !== "name" ? source.rows.map((row) => ({ ...row, ...kernelCells(row) })) : source.rows;
    return serverSorts ? rows : sortRows<DiffTableRow>(rows, sort, undefined, keys);
  }, [table, source, sort, serverSorts, keys]);
  const [note, setNote] = useState<string | null>(null);

  const what = DIFF_TABLES[asked].title;
  if (!all) {
    if (allReq.state === "error") return <ErrorMessage error={allReq.error} what={what} />;
    if (allReq.state === "loading") return <Loading what={what} waitingFor={allReq.waitingFor} />;
    return <Loading what={what} waitingFor={null} />;
  }
  if (!table) return null;
  const { resp, columns, hidden, byShape } = table;
  const look = DIFF_TABLES[resp.table];
  const noun = look.noun;
  const matchError = filter && asking && matchReq.state === "error" ? matchReq.error : null;
  const allError = allReq.state === "error" ? allReq.error : null;
  // Where the filter looks: the name and the text key beside it (diff/tables.py:filter_mask), as shown.
  const textCols = columns.filter((c) => c.role !== "name" && TEXT_ROLES.has(c.role) && keys.includes(c.key));
  const filterWhere = ["name", ...textCols.map((c) => c.label.toLowerCase())].join(" or ");

  const exportCsv = () => {
    const a = document.createElement("a");
    a.href = csvDataUrl(toCsv(shown, columns));
    a.download = csvFileName(resp.table, sel.baseline, sel.experimental);
    document.body.appendChild(a);
    a.click();
    a.remove();
    setNote(`Saved ${formatInt(shown.length)} rows as CSV.`);
  };
  const copyCsv = async () => {
    try {
      await navigator.clipboard.writeText(toCsv(shown, columns));
      setNote(`Copied ${formatInt(shown.length)} rows as CSV.`);
    } catch {
      setNote("The browser did not allow copying here; use “Export CSV” instead.");
    }
  };

  const primaryLabel = metricLabel(resp.primary);
  return (
    <div data-view={resp.table}>
      <div class="tbl-tools">
        <label>
          <span class="muted">Filter </span>
          <input
            type="search"
            placeholder={`Filter ${noun} by ${filterWhere}`}
            aria-label={`Filter ${noun} by ${filterWhere}`}
            value={state.filter}
            onInput={(e) => onChange({ filter: e.currentTarget.value })}
          />
        </label>
        {look.canGroupByShape && (
          <label>
            <input type="checkbox" checked={byShape} onChange={(e) => onChange({ byShape: e.currentTarget.checked })} /> Group by input shape
          </label>
        )}
        {resp.table === "kernels" && (
          <label>
            <span class="muted">Group by </span>
            <select data-testid="kernel-grouping" value={state.launch} onChange={(e) => onChange({ launch: e.currentTarget.value as UrlState["launch"], sort: "", filter: "" })}>
              {KERNEL_GROUPINGS.map((g) => (
                <option key={g.value} value={g.value} title={g.title}>
                  {g.label}
                </option>
              ))}
            </select>
          </label>
        )}
        <span class="count" aria-live="polite" data-testid="row-count" data-partial={source !== null && isCut(source) ? "true" : "false"}>
          {!filter
            ? `${formatInt(resp.rows.length)} ${noun}`
            : fresh && matches
              ? `${formatInt(matches.total)} of ${formatInt(resp.total)} ${noun}`
              : `Searching ${formatInt(resp.total)} ${noun}…`}
          {sorting && " (sorting…)"}
        </span>
        <span style={{ marginLeft: "auto", display: "flex", gap: "8px" }}>
          {(state.sort || state.filter) && (
            <button class="btn" type="button" onClick={() => onChange({ sort: "", dir: "desc", filter: "" })}>
              Reset order
            </button>
          )}
          <button class="btn" type="button" onClick={() => void copyCsv()} disabled={shown.length === 0}>
            Copy CSV
          </button>
          <button class="btn primary" type="button" onClick={exportCsv} disabled={shown.length === 0}>
            Export CSV
          </button>
        </span>
      </div>
      <p class="muted small" style={{ margin: "0 0 6px" }}>
        {sort.key === `delta_${resp.primary}`
          ? `Sorted by the largest absolute change in ${primaryLabel.toLowerCase()} time first. `
          : "Click a column header (or focus it and press Enter) to sort; again to reverse. "}
        Red ▲ = slower or more in the experimental run, green ▼ = faster or less.
        {hidden.length > 0 && resp.rows.length > 0 && ` Not shown: ${hidden.map(metricLabel).join(", ")} (zero in both runs).`}
        {note && <span role="status"> {note}</span>}
      </p>
      {resp.per_unit_note && (
        <Message kind="info" title={`Times per ${resp.per_unit}`}>
          <span data-testid="per-unit-note" data-unit={resp.per_unit ?? ""}>{resp.per_unit_note}</span>
        </Message>
      )}
      {allError || matchError ? (
        <ErrorMessage error={allError ?? matchError} what={allError ? what : `the ${noun} matching “${filter}”`} />
      ) : (
        source && isCut(source) && <PartialNote noun={noun} filter={fresh ? filter : ""} total={source.total} held={source.rows.length} />
      )}
      {resp.rows.length === 0 ? (
        <Message kind="info" title={`No ${noun}`}>
          {look.emptyText(piece?.name ?? null)}
        </Message>
      ) : shown.length === 0 ? (
        !fresh ? null : (
          <Message kind="info" title={`No ${noun} match “${state.filter}”`}>
            The filter is a case-insensitive part of the {filterWhere}.
          </Message>
        )
      ) : (
        <VirtualTable
          columns={columns}
          rows={shown}
          sort={sort}
          onSort={(key) => {
            const next = nextSort(sort, key, TEXT_ROLES.has(columns.find((c) => c.key === key)?.role ?? "delta"));
            onChange({ sort: next.key, dir: next.dir });
          }}
          label={look.label}
          rowExtra={(row) => (
            <>
              <button
                class="linklike small"
                type="button"
                data-timeline-of={String(row.name)}
                title={`Open the first ${String(row.name)} of ${piece ? `“${piece.name}”` : "the first step"} in the Timeline view`}
                onClick={() => onChange(timelineOf(piece?.path || "0", String(row.name)))}
              >
                Timeline
              </button>
              {timeline && <ProfilerPair {...sidesOf(sel)} find={String(row.name)} bare />}
            </>
          )}
          markKey={`delta_${resp.primary}`}
          height={height ?? Math.max(320, window.innerHeight - 300)}
        />
      )}
    </div>
  );
}

/** Says what is missing when the answer holds fewer rows than the server has (the server sorted and cut it). */
function PartialNote(props: { noun: string; filter: string; total: number; held: number }) {
  const { noun, filter, total, held } = props;
  const limit = formatInt(MAX_TABLE_ROWS);
  if (!filter)
    return (
      <Message kind="warn" title={`Showing ${formatInt(held)} of ${formatInt(total)} ${noun}`}>
        The server sends at most {limit} rows: the first in the table's order (the largest change first, unless a column is
        sorted). A column sorts, and a filter searches, all {formatInt(total)} on the server.
      </Message>
    );
  return (
    <Message kind="warn" title={`Showing the first ${formatInt(held)} of ${formatInt(total)} matches`}>
      The server sends at most {limit} rows, the first in the table's order. Narrow the filter to see the others.
    </Message>
  );
}
