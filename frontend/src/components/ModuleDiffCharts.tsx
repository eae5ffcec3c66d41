/**
 * The module diff's two charts: "Execution comparison" (bars per piece for
 * both runs + their accumulated time) and "Execution difference" (per-piece
 * Δ + accumulated Δ), with one-sided and unknown pieces tinted behind the
 * bars. The series come from model/moduleDiff.ts's moduleDiffSeries.
 */
import { useMemo } from "preact/hooks";
import type uPlot from "uplot";
import type { DiffModulesResponse, DiffPiece } from "../api";
import { formatMsWithUnit, formatPct, formatSignedMsWithUnit } from "../model/format";
import { accumulated, BAND_TEXT, bandOf, CLOCK_HEADING, clockTimes, moduleDiffSeries, passesOf, pieceName, pieceStep, renamedText, type Band, type Clock } from "../model/moduleDiff";
import { BASELINE_COLOR, barsPath, BETTER_COLOR, EXPERIMENTAL_COLOR, indexAxis, msAxis, WORSE_COLOR } from "./chartKit";
import { ChartCard, type LegendItem } from "./UPlotChart";

const BAND_FILL: Record<Band, string> = {
  baseline_only: "rgba(25,118,210,0.10)",
  experimental_only: "rgba(245,124,0,0.14)",
  inside_compiled: "rgba(123,31,162,0.10)",
  unknown: "rgba(158,158,158,0.16)",
};
const ACC_B = "#0d47a1";
const ACC_E = "#bf360c";
const ACC_D = "#424242";
/** Above this many pieces the two charts are stacked, each the full width. */
const STACK_CHARTS_ABOVE = 12;
const CLOCK_AXIS: Record<Clock, string> = { host: "host", device: "device", with_backward: "forward + backward" };
const CMP_LEGEND: LegendItem[] = [
  { label: "Baseline per piece", color: BASELINE_COLOR, kind: "bar" },
  { label: "Experimental per piece", color: EXPERIMENTAL_COLOR, kind: "bar" },
  { label: "Baseline accumulated", color: ACC_B, kind: "dashed" },
  { label: "Experimental accumulated", color: ACC_E, kind: "dashed" },
];
const DIFF_LEGEND: LegendItem[] = [
  { label: "Δ per piece, slower (experimental − baseline > 0)", color: WORSE_COLOR, kind: "bar" },
  { label: "Δ per piece, faster", color: BETTER_COLOR, kind: "bar" },
  { label: "Accumulated Δ", color: ACC_D, kind: "line" },
];

/** drawClear hook: tint the columns of one-sided and unknown pieces behind the bars. */
function statusBands(pieces: DiffPiece[]): (u: uPlot) => void {
  return (u) => {
    const ctx = u.ctx;
    const { top, height } = u.bbox;
    pieces.forEach((p, i) => {
      const band = bandOf(p);
      if (!band) return;
      const x0 = u.valToPos(i - 0.5, "x", true);
      const x1 = u.valToPos(i + 0.5, "x", true);
      ctx.fillStyle = BAND_FILL[band];
      ctx.fillRect(x0, top, x1 - x0, height);
    });
  };
}

function Tip({ p, i, clock, acc, step }: { p: DiffPiece; i: number; clock: Clock; acc: ReturnType<typeof accumulated>; step: string }) {
  const t = clockTimes(p, clock);
  const passes = clock === "with_backward" ? passesOf(p) : null;
  const band = bandOf(p);
  const renamed = renamedText(p);
  return (
    <div>
      <div class="name">
        #{i + 1} {pieceName(p, clock)}
        {step && p.kind !== "step" ? ` (step ${step})` : ""}
      </div>
      <div style={{ opacity: 0.8 }}>{CLOCK_HEADING[clock]}</div>
      {renamed && <div>{renamed}</div>}
      {band && <div>{BAND_TEXT[band]}</div>}
      <div>
        <span class="k" style={{ background: BASELINE_COLOR }} />
        Baseline {formatMsWithUnit(t.baseline)} (accumulated {formatMsWithUnit(acc.baseline[i])})
      </div>
      <div>
        <span class="k" style={{ background: EXPERIMENTAL_COLOR }} />
        Experimental {formatMsWithUnit(t.experimental)} (accumulated {formatMsWithUnit(acc.experimental[i])})
      </div>
      <div>
        Δ {formatSignedMsWithUnit(t.delta)} ({formatPct(t.pct)}), accumulated Δ {formatSignedMsWithUnit(acc.delta[i])}
      </div>
      {passes && (
        <div>
          forward Δ {formatSignedMsWithUnit(passes.forward.delta)}, backward Δ {formatSignedMsWithUnit(passes.backward.delta)}
        </div>
      )}
      <div style={{ opacity: 0.8 }}>{p.has_children ? "Click to zoom in" : "Click to list its operators"}</div>
    </div>
  );
}

export function ModuleDiffCharts({ d, clock, onPick }: { d: DiffModulesResponse; clock: Clock; onPick: (i: number) => void }) {
  const pieces = d.children;
  const stacked = pieces.length > STACK_CHARTS_ABOVE;
  const model = useMemo(() => {
    const s = moduleDiffSeries(d, clock);
    const xAxis = indexAxis("Pieces in execution order (shaded or −/+: only in the baseline / experimental run)", (i) => s.labels[i] ?? "", s.rotate, s.ticks);
    const xScale: uPlot.Scale = { time: false, range: [-0.6, pieces.length - 0.4] };
    const tint = statusBands(pieces);
    const cmp: Omit<uPlot.Options, "width" | "height"> = {
      scales: { x: xScale, y: { range: (_u, _min, max) => [0, max * 1.08 || 1] }, acc: { range: (_u, _min, max) => [0, max * 1.05 || 1] } },
      axes: [xAxis, msAxis(`Piece ${CLOCK_AXIS[clock]} time (ms)`), msAxis("Accumulated (ms)", 1, "acc")],
      series: [
        {},
        { label: "Baseline", fill: BASELINE_COLOR, stroke: BASELINE_COLOR, width: 0, paths: barsPath({ size: [0.38, 40], align: -1 }), points: { show: false } },
        { label: "Experimental", fill: EXPERIMENTAL_COLOR, stroke: EXPERIMENTAL_COLOR, width: 0, paths: barsPath({ size: [0.38, 40], align: 1 }), points: { show: false } },
        { label: "Baseline accumulated", scale: "acc", stroke: ACC_B, width: 2, dash: [6, 3], points: { show: true, size: 5 } },
        { label: "Experimental accumulated", scale: "acc", stroke: ACC_E, width: 2, dash: [6, 3], points: { show: true, size: 5 } },
      ],
      hooks: { drawClear: [tint] },
      cursor: { drag: { x: false, y: false } },
    };
    const diff: Omit<uPlot.Options, "width" | "height"> = {
      scales: { x: xScale, y: { range: () => s.deltaRange }, acc: { range: () => s.accDeltaRange } },
      axes: [xAxis, msAxis(`Δ ${CLOCK_AXIS[clock]} time per piece (ms)`), msAxis("Accumulated Δ (ms)", 1, "acc")],
      series: [
        {},
        { label: "Slower", fill: WORSE_COLOR, stroke: WORSE_COLOR, width: 0, paths: barsPath({ size: [0.5, 50] }), points: { show: false } },
        { label: "Faster", fill: BETTER_COLOR, stroke: BETTER_COLOR, width: 0, paths: barsPath({ size: [0.5, 50] }), points: { show: false } },
        { label: "Accumulated Δ", scale: "acc", stroke: ACC_D, width: 2, points: { show: true, size: 5 } },
      ],
      hooks: { drawClear: [tint] },
      cursor: { drag: { x: false, y: false } },
    };
    return {
      labelled: s.ticks.length,
      acc: accumulated(d, clock),
      cmp,
      cmpData: [s.xs, s.baselineMs, s.experimentalMs, s.accBaselineMs, s.accExperimentalMs] as uPlot.AlignedData,
      diff,
      diffData: [s.xs, s.slowerMs, s.fasterMs, s.accDeltaMs] as uPlot.AlignedData,
    };
  }, [pieces, d, clock]);

  const tooltip = (i: number) => {
    const p = pieces[i];
    return p ? <Tip p={p} i={i} clock={clock} acc={model.acc} step={pieceStep(p, d)} /> : null;
  };
  const bandLegend = (
    <span class="legend small" style={{ margin: 0 }}>
      <span class="item">
        <span class="bar" style={{ background: BAND_FILL.baseline_only, border: "1px solid #90caf9" }} />
        baseline only
      </span>
      <span class="item">
        <span class="bar" style={{ background: BAND_FILL.experimental_only, border: "1px solid #ffcc80" }} />
        experimental only
      </span>
      {pieces.some((p) => p.status === "inside_compiled") && (
        <span class="item" title="One run has this piece inside a module the other run compiled with torch.compile: its work is that compiled module's there, not missing.">
          <span class="bar" style={{ background: BAND_FILL.inside_compiled, border: "1px solid #ce93d8" }} />
          inside the other run's compiled module
        </span>
      )}
      <span class="item">
        <span class="bar" style={{ background: BAND_FILL.unknown, border: "1px dashed #9e9e9e" }} />
        unknown (not in any module)
      </span>
    </span>
  );
  const shared = { bandLegend, height: stacked ? 320 : 300, tooltip, onPick };
  return (
    <>
      {model.labelled < pieces.length && (
        <p class="muted small" data-testid="labels-skipped">
          {pieces.length} pieces: {model.labelled} are labelled on the x axis (always including the tallest bar and the largest change). Hover a bar or read the Pieces table below for
          the others.
        </p>
      )}
      <div class={stacked ? "stack" : "grid2"}>
        <ChartCard id="md-cmp" chart="execution-comparison" title="Execution comparison" legend={CMP_LEGEND} options={model.cmp} data={model.cmpData} {...shared}
          label={`${CLOCK_AXIS[clock]} time of each piece for baseline and experimental, with accumulated time, in milliseconds`} />
        <ChartCard id="md-diff" chart="execution-difference" title="Execution difference" legend={DIFF_LEGEND} options={model.diff} data={model.diffData} {...shared}
          label={`Difference of ${CLOCK_AXIS[clock]} time per piece and accumulated difference, in milliseconds`} />
      </div>
    </>
  );
}
