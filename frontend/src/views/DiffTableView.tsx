/**
 * Operator or kernel delta table. Fetches the whole table once (up to the
 * server's 10k limit) and filters/sorts it in the pure table model, so a
 * header click re-sorts in milliseconds without a round trip.
 */
import { useMemo, useState } from "preact/hooks";
import { MAX_TABLE_ROWS, type ApiClient, type DiffSelection, type DiffTableResponse } from "../api";
import { Loading } from "../components/Loading";
import { ErrorMessage, Message } from "../components/Message";
import { VirtualTable } from "../components/VirtualTable";
import { formatInt } from "../model/format";
import { buildColumns, csvDataUrl, defaultSort, ensureDeltas, informativeMetrics, metricLabel, nextSort, toCsv, viewRows, type SortSpec } from "../model/tableModel";
import type { UrlState } from "../model/urlState";
import { useRequest } from "../useRequest";

export interface DiffTableViewProps {
  client: ApiClient;
  sel: DiffSelection;
  kind: "operators" | "kernels";
  state: UrlState;
  onChange: (patch: Partial<UrlState>) => void;
  reloadToken: number;
  /** Restrict operators to this diff/modules piece (and say so). */
  piece?: { path: string; name: string } | null;
  height?: number;
}

export function DiffTableView({ client, sel, kind, state, onChange, reloadToken, piece = null, height }: DiffTableViewProps) {
  const byShape = kind === "operators" && state.byShape;
  const req = useRequest<DiffTableResponse>(
    (opts) =>
      kind === "operators"
        ? client.diffOperators(sel, { limit: MAX_TABLE_ROWS, groupBy: byShape ? "name_and_shape" : "name", path: piece?.path || undefined }, opts)
        : client.diffKernels(sel, { limit: MAX_TABLE_ROWS }, opts),
    [client, kind, sel.baseline, sel.bWorker, sel.bSpan, sel.experimental, sel.eWorker, sel.eSpan, byShape, piece?.path, reloadToken],
  );

  const table = useMemo(() => {
    if (req.state !== "ok") return null;
    const r = req.data;
    const rows = ensureDeltas(r.rows, r.columns);
    const shownMetrics = informativeMetrics(rows, r.columns, r.primary);
    const hidden = r.columns.filter((m) => !shownMetrics.includes(m));
    return { resp: r, rows, columns: buildColumns(shownMetrics, byShape, r.primary), hidden };
  }, [req, byShape]);

  const sort: SortSpec = useMemo(() => {
    if (!table) return { key: "", dir: "desc" };
    const valid = state.sort && table.columns.some((c) => c.key === state.sort);
    return valid ? { key: state.sort, dir: state.dir } : defaultSort(table.resp.primary);
  }, [table, state.sort, state.dir]);

  const shown = useMemo(() => (table ? viewRows(table.rows, state.filter, sort) : []), [table, state.filter, sort]);
  const [note, setNote] = useState<string | null>(null);

  const what = kind === "operators" ? "the operator table" : "the kernel table";
  if (req.state === "loading" || req.state === "idle") return <Loading what={what} waitingFor={req.state === "loading" ? req.waitingFor : null} />;
  if (req.state === "error") return <ErrorMessage error={req.error} what={what} />;
  if (!table) return null;
  const { resp, rows, columns, hidden } = table;
  const noun = kind === "operators" ? "operators" : "kernels";

  const exportCsv = () => {
    const a = document.createElement("a");
    a.href = csvDataUrl(toCsv(shown, columns));
    a.download = `${kind}_${sel.baseline}_vs_${sel.experimental}.csv`.replace(/[^\w.-]+/g, "_");
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
    <div data-view={kind}>
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
        {kind === "operators" && (
          <label>
            <input type="checkbox" checked={byShape} onChange={(e) => onChange({ byShape: e.currentTarget.checked })} /> Group by input shape
          </label>
        )}
        <span class="count" aria-live="polite" data-testid="row-count">
          {state.filter ? `${formatInt(shown.length)} of ${formatInt(rows.length)} ${noun}` : `${formatInt(rows.length)} ${noun}`}
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
      {resp.total > rows.length && (
        <Message kind="warn" title={`Showing ${formatInt(rows.length)} of ${formatInt(resp.total)} ${noun}`}>
          The server sends at most {formatInt(MAX_TABLE_ROWS)} rows: the ones with the largest change. Filter to narrow the table.
        </Message>
      )}
      {rows.length === 0 ? (
        <Message kind="info" title={`No ${noun}`}>
          {piece ? `Neither run has ${noun} inside “${piece.name}”.` : `Neither trace records any ${noun}.`}
          {kind === "kernels" ? " Kernels come from GPU activity; a CPU-only trace has none." : ""}
        </Message>
      ) : shown.length === 0 ? (
        <Message kind="info" title={`No ${noun} match “${state.filter}”`}>
          The filter is a case-insensitive part of the name.
        </Message>
      ) : (
        <VirtualTable
          columns={columns}
          rows={shown}
          sort={sort}
          onSort={(key) => {
            const next = nextSort(sort, key);
            onChange({ sort: next.key, dir: next.dir });
          }}
          label={`${kind === "operators" ? "Operator" : "Kernel"} comparison, baseline versus experimental`}
          height={height ?? Math.max(320, window.innerHeight - 300)}
        />
      )}
    </div>
  );
}
