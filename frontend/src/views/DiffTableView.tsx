/**
 * A diff table (operators, kernels, ...). Everything table-specific comes
 * from the answer's `table` id through the registry in model/diffTables.ts;
 * the `table` prop only says which route to ask. Fetches the whole table once (up to the
 * server's 10k limit) and filters/sorts it in the pure table model, so a
 * header click re-sorts in milliseconds without a round trip. When the
 * server has more rows than that, a filter is also sent to the server so
 * rows outside the fetched ones can be found, and the page says whenever
 * it shows a partial set.
 */
import { useMemo, useState } from "preact/hooks";
import { MAX_TABLE_ROWS, type ApiClient, type DiffSelection, type DiffTableKind, type DiffTableResponse, type RequestOpts } from "../api";
import { Loading } from "../components/Loading";
import { ErrorMessage, Message } from "../components/Message";
import { VirtualTable } from "../components/VirtualTable";
import { csvFileName, DIFF_TABLES, groupByParam, KERNEL_GROUPINGS, kernelCells, launchColumns } from "../model/diffTables";
import { ProfilerPair, useProfilerPresent } from "../components/ProfilerLink";
import { sidesOf } from "../model/profilerLink";
import { formatInt } from "../model/format";
import {
  buildColumns,
  csvDataUrl,
  defaultSort,
  filteredTable,
  informativeMetrics,
  metricLabel,
  needsServerFilter,
  nextSort,
  sortRows,
  toCsv,
  type ServerMatches,
  type SortSpec,
} from "../model/tableModel";
import { timelineOf, type UrlState } from "../model/urlState";
import { useDebounced } from "../useDebounced";
import { useRequest } from "../useRequest";

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

export function DiffTableView({ client, sel, table: asked, state, onChange, reloadToken, piece = null, height }: DiffTableViewProps) {
  const groupBy = groupByParam(asked, state.byShape, state.launch);
  const timeline = useProfilerPresent();
  const fetchTable = (filter: string | undefined, opts: RequestOpts) =>
    client.diffTable(asked, sel, { limit: MAX_TABLE_ROWS, filter, groupBy, path: piece?.path || undefined }, opts);
  const tableDeps = [client, asked, sel.baseline, sel.bWorker, sel.bSpan, sel.experimental, sel.eWorker, sel.eSpan, groupBy, piece?.path, reloadToken];
  const req = useRequest<DiffTableResponse>((opts) => fetchTable(undefined, opts), tableDeps);

  const table = useMemo(() => {
    if (req.state !== "ok") return null;
    const r = req.data;
    const byShape = r.group_by === "name_and_shape";
    // Kernels grouped by what launched them: the module and each run's kernels beside the operator.
    const launched = r.table === "kernels" && r.group_by !== "name";
    const rows = launched ? r.rows.map((row) => ({ ...row, ...kernelCells(row) })) : r.rows;
    const shownMetrics = informativeMetrics(rows, r.columns, r.primary);
    const hidden = r.columns.filter((m) => !shownMetrics.includes(m));
    const texts = launched ? launchColumns(r.group_by ?? "") : byShape;
    return { resp: r, rows, byShape, columns: buildColumns(shownMetrics, texts, r.primary), hidden };
  }, [req]);

  // The fetched table is cut at the row limit: filter on the server too.
  const settledFilter = useDebounced(state.filter.trim(), FILTER_DEBOUNCE_MS);
  const cut = table !== null && needsServerFilter(state.filter, table.resp.total, table.rows.length);
  const serverFilter = cut && settledFilter === state.filter.trim() ? settledFilter : "";
  const serverReq = useRequest<DiffTableResponse>(serverFilter ? (opts) => fetchTable(serverFilter, opts) : null, [...tableDeps, serverFilter]);
  const server: ServerMatches = useMemo(() => {
    if (!cut) return { state: "none" };
    if (!serverFilter || serverReq.state === "loading" || serverReq.state === "idle") return { state: "pending" };
    if (serverReq.state === "error") return { state: "error", message: serverReq.error instanceof Error ? serverReq.error.message : String(serverReq.error) };
    const r = serverReq.data;
    return { state: "ok", rows: r.rows, total: r.total };
  }, [cut, serverFilter, serverReq]);

  const sort: SortSpec = useMemo(() => {
    if (!table) return { key: "", dir: "desc" };
    const valid = state.sort && table.columns.some((c) => c.key === state.sort);
    return valid ? { key: state.sort, dir: state.dir } : defaultSort(table.resp.primary);
  }, [table, state.sort, state.dir]);

  const view = useMemo(
    () => (table ? filteredTable(table.rows, table.resp.total, state.filter, server) : { rows: [], partial: false }),
    [table, state.filter, server],
  );
  const shown = useMemo(() => sortRows(view.rows, sort), [view, sort]);
  const [note, setNote] = useState<string | null>(null);

  const what = DIFF_TABLES[asked].title;
  if (req.state === "loading" || req.state === "idle") return <Loading what={what} waitingFor={req.state === "loading" ? req.waitingFor : null} />;
  if (req.state === "error") return <ErrorMessage error={req.error} what={what} />;
  if (!table) return null;
  const { resp, rows, columns, hidden, byShape } = table;
  const look = DIFF_TABLES[resp.table];
  const noun = look.noun;
  const cutTotal = resp.total > rows.length;

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
            placeholder={`Filter ${noun} by name${byShape ? " or shape" : ""}`}
            aria-label={`Filter ${noun} by name`}
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
        <span class="count" aria-live="polite" data-testid="row-count" data-partial={view.partial ? "true" : "false"}>
          {state.filter
            ? `${formatInt(shown.length)} of ${formatInt(cutTotal ? resp.total : rows.length)} ${noun}${server.state === "pending" ? " (searching…)" : ""}`
            : `${formatInt(rows.length)} ${noun}`}
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
        {hidden.length > 0 && rows.length > 0 && ` Not shown: ${hidden.map(metricLabel).join(", ")} (zero in both runs).`}
        {note && <span role="status"> {note}</span>}
      </p>
      {resp.per_unit_note && (
        <Message kind="info" title={`Times per ${resp.per_unit}`}>
          <span data-testid="per-unit-note" data-unit={resp.per_unit ?? ""}>{resp.per_unit_note}</span>
        </Message>
      )}
      {cutTotal && <PartialNote noun={noun} filter={state.filter.trim()} total={resp.total} held={rows.length} server={server} byShape={byShape} />}
      {rows.length === 0 ? (
        <Message kind="info" title={`No ${noun}`}>
          {look.emptyText(piece?.name ?? null)}
        </Message>
      ) : shown.length === 0 ? (
        server.state === "pending" ? null : (
          <Message kind="info" title={`No ${noun} match “${state.filter}”`}>
            The filter is a case-insensitive part of the name.
          </Message>
        )
      ) : (
        <VirtualTable
          columns={columns}
          rows={shown}
          sort={sort}
          onSort={(key) => {
            const next = nextSort(sort, key);
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

/** Says what is missing when the table holds fewer rows than the server has. */
function PartialNote(props: { noun: string; filter: string; total: number; held: number; server: ServerMatches; byShape: boolean }) {
  const { noun, filter, total, held, server, byShape } = props;
  const limit = formatInt(MAX_TABLE_ROWS);
  if (!filter)
    return (
      <Message kind="warn" title={`Showing ${formatInt(held)} of ${formatInt(total)} ${noun}`}>
        The server sends at most {limit} rows: the ones with the largest change. A filter searches all {formatInt(total)} on the server.
      </Message>
    );
  if (server.state === "pending" || server.state === "none")
    return (
      <Message kind="info" title={`Searching all ${formatInt(total)} ${noun} for “${filter}”…`}>
        Meanwhile the table shows the matches among the {formatInt(held)} with the largest change only.
      </Message>
    );
  if (server.state === "error")
    return (
      <Message kind="warn" title={`Partial results: the server could not filter (${server.message})`}>
        The table shows the matches among the {formatInt(held)} {noun} with the largest change only, of {formatInt(total)}.
      </Message>
    );
  if (server.total > server.rows.length)
    return (
      <Message kind="warn" title={`Showing the ${formatInt(server.rows.length)} of ${formatInt(server.total)} matches with the largest change`}>
        The server sends at most {limit} rows. Narrow the filter to see the others.
      </Message>
    );
  // Complete for names; the server does not match input shapes.
  return byShape ? (
    <p class="muted small" style={{ margin: "0 0 6px" }}>
      Names are matched among all {formatInt(total)} {noun}; input shapes only among the {formatInt(held)} with the largest change.
    </p>
  ) : null;
}
