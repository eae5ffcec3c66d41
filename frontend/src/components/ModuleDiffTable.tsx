/**
 * The module diff's Pieces table: one row per aligned piece with its times,
 * Δ, the server's accumulated Δ and significance marks; with both passes,
 * each module's forward, backward and total side by side. The cells come
 * from model/moduleDiff.ts's pieceRow.
 */
import type { DiffPiece } from "../api";
import type { Significance } from "../model/explain";
import { formatMs, formatMsWithUnit, formatPct, formatSignedMs, formatSignedMsWithUnit } from "../model/format";
import { BAND_TEXT, CLOCK_HEADING, clockHasMarks, pieceRow, type Clock, type PassCells } from "../model/moduleDiff";
import { pieceTitle, regionTitle } from "../model/compiledRegion";
import { DeltaText } from "./Delta";
import { SignificanceMark } from "./Explanation";

/** A ms cell: "—" where the side has no such time (one-sided piece, or no split). */
function MsCell({ us, what, absent = false }: { us: number | null; what: string; absent?: boolean }) {
  if (absent || us === null) return <td>—</td>;
  return <td title={`${what}: ${formatMsWithUnit(us)}`}>{formatMs(us)}</td>;
}

function DeltaCell({ us, what, sig = null, col }: { us: number | null; what: string; sig?: Significance | null; col?: string }) {
  if (us === null) return <td data-col={col}>—</td>;
  return (
    <td data-col={col}>
      <DeltaText value={us} text={formatSignedMs(us)} title={`${what}: ${formatSignedMsWithUnit(us)}`} /> <SignificanceMark sig={sig} />
    </td>
  );
}

function PassCellGroup({ cells, pass, absent, col }: { cells: PassCells; pass: "forward" | "backward"; absent: { baseline: boolean; experimental: boolean }; col: string }) {
  return (
    <>
      <MsCell us={cells.baseline} absent={absent.baseline} what={`Baseline ${pass}`} />
      <MsCell us={cells.experimental} absent={absent.experimental} what={`Experimental ${pass}`} />
      <DeltaCell us={cells.delta} what={`Δ ${pass}`} sig={cells.significance} col={col} />
    </>
  );
}

const ACROSS_STEPS = "The mark judges the module across steps (its per-step time in every step of each run), not this one call.";

export function ModuleDiffTable({
  pieces,
  accDelta,
  clock,
  selectedPath,
  onZoom,
  onSelect,
  onTimeline,
  stepOf,
}: {
  pieces: DiffPiece[];
  /** The server's accumulated Δ (µs) up to each piece. */
  accDelta: number[];
  clock: Clock;
  selectedPath: string;
  onZoom: (p: DiffPiece) => void;
  onSelect: (p: DiffPiece) => void;
  /** Opens the piece in the Timeline view. */
  onTimeline: (p: DiffPiece) => void;
  stepOf: (p: DiffPiece) => string;
}) {
  const split = clock === "with_backward";
  const heading = CLOCK_HEADING[clock];
  return (
    <section aria-labelledby="md-pieces">
      <h2 id="md-pieces" data-time={clock}>
        Pieces — {heading}
      </h2>
      {clockHasMarks(clock) && (
        <p class="muted small" data-testid="pieces-marks">
          ● significant, ≈ within noise, ? too few steps: on module pieces. {ACROSS_STEPS}
        </p>
      )}
      <div style={{ maxHeight: "300px", overflow: "auto", border: "1px solid var(--tb-border)", borderRadius: "4px" }}>
        <table class="kv pieces" aria-label="Aligned pieces with their times and differences" data-split={split ? "passes" : "none"}>
          <thead>
            <tr>
              <th scope="col">#</th>
              <th scope="col" class="text">Piece</th>
              <th scope="col" title="The step's ProfilerStep number (baseline / experimental when they differ)">
                Step
              </th>
              {split && (
                <>
                  <th scope="col" data-col="fwd-b" title="A module call's own (forward) host time">Forward B (ms)</th>
                  <th scope="col" data-col="fwd-e">Forward E (ms)</th>
                  <th scope="col" data-col="fwd-d">Forward Δ (ms)</th>
                  <th scope="col" data-col="bwd-b" title="The backward operators the module's forward created (fwdbwd flows); on the backward piece, what no module claims">
                    Backward B (ms)
                  </th>
                  <th scope="col" data-col="bwd-e">Backward E (ms)</th>
                  <th scope="col" data-col="bwd-d">Backward Δ (ms)</th>
                </>
              )}
              <th scope="col" data-col="b">{split ? "Total B (ms)" : "Baseline (ms)"}</th>
              <th scope="col" data-col="e">{split ? "Total E (ms)" : "Experimental (ms)"}</th>
              <th scope="col" data-col="d">{split ? "Total Δ (ms)" : "Δ (ms)"}</th>
              <th scope="col" data-col="pct">Δ %</th>
              <th scope="col">Accumulated Δ (ms)</th>
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {pieces.map((p, i) => {
              const row = pieceRow(p, clock);
              const t = row.times;
              return (
                <tr key={p.path} class={selectedPath === p.path ? "selected" : ""} data-path={p.path} data-status={p.status} data-kind={p.kind}>
                  <td>{i + 1}</td>
                  <td class="text name" title={pieceTitle(p, row.renamed ?? row.name)}>
                    {row.name}{" "}
                    {p.compiled_region && (
                      <span class="badge compiled_region" title={regionTitle(p.compiled_region)}>
                        compiled vs eager
                      </span>
                    )}
                    {/* An unknown piece's name already says so: the badge only marks one-sided pieces. */}
                    {row.band && row.band !== "unknown" && <span class={`badge ${row.band}`}>{BAND_TEXT[row.band]}</span>}
                    {row.renamed && <span class="muted small"> ({row.renamed})</span>}
                  </td>
                  <td data-col="step">{stepOf(p)}</td>
                  {row.split && (
                    <>
                      <PassCellGroup cells={row.split.forward} pass="forward" absent={row.absent} col="fwd-d" />
                      <PassCellGroup cells={row.split.backward} pass="backward" absent={row.absent} col="bwd-d" />
                    </>
                  )}
                  <td data-col="b" title={`Baseline ${heading}: ${formatMsWithUnit(t.baseline)}`}>{row.absent.baseline ? "—" : formatMs(t.baseline)}</td>
                  <td data-col="e" title={`Experimental ${heading}: ${formatMsWithUnit(t.experimental)}`}>{row.absent.experimental ? "—" : formatMs(t.experimental)}</td>
                  <DeltaCell us={t.delta} what={`Δ ${heading}`} sig={row.significance} col="d" />
                  <td>
                    <DeltaText value={t.pct} text={formatPct(t.pct)} />
                  </td>
                  <td>
                    <DeltaText value={accDelta[i] ?? null} text={formatSignedMs(accDelta[i])} title={`Accumulated Δ up to this piece: ${formatSignedMsWithUnit(accDelta[i])}`} />
                  </td>
                  <td>
                    <span class="acts">
                      {p.has_children && (
                        <button class="btn" type="button" onClick={() => onZoom(p)} aria-label={`Zoom into ${p.name}`}>
                          Zoom in
                        </button>
                      )}
                      <button
                        class="btn"
                        type="button"
                        aria-pressed={selectedPath === p.path}
                        onClick={() => onSelect(p)}
                        aria-label={`Show operators of ${p.name}`}
                      >
                        Operators
                      </button>
                      <button class="btn" type="button" onClick={() => onTimeline(p)} aria-label={`Timeline of ${p.name}`}>
                        Timeline
                      </button>
                    </span>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </section>
  );
}
