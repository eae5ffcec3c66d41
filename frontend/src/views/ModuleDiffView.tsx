/**
 * Module diff: the two executions cut into aligned pieces (diff/modules).
 * "Execution comparison" = bars per piece for both runs + their accumulated
 * time; "Execution difference" = per-piece delta + accumulated delta.
 * Clicking a piece zooms into its children; the breadcrumb goes back; the
 * selected piece restricts the operator table below.
 */
import { useEffect, useMemo, useRef } from "preact/hooks";
import type uPlot from "uplot";
import type { ApiClient, DiffModulesResponse, DiffPiece, DiffSelection } from "../api";
import { DeltaText } from "../components/Delta";
import { SignificanceMark } from "../components/Explanation";
import type { Significance } from "../model/explain";
import { Loading } from "../components/Loading";
import { ErrorMessage, Message } from "../components/Message";
import { NoteText } from "../components/NoteText";
import { TimelinePair } from "../components/TimelineLink";
import { ChartCard } from "../components/UPlotChart";
import { formatMs, formatMsWithUnit, formatPct, formatSignedMs, formatSignedMsWithUnit } from "../model/format";
import { accumulated, bandOf, clockOf, clockTimes, hasBackward, moduleDiffSeries, passesOf, pieceName, pieceStep, type Band, type Clock, type TimeKind } from "../model/moduleDiff";
import { sidesOf } from "../model/timeline";
import type { UrlState } from "../model/urlState";
import { useRequest } from "../useRequest";
import { BASELINE_COLOR, barsPath, BETTER_COLOR, EXPERIMENTAL_COLOR, indexAxis, msAxis, WORSE_COLOR } from "./chartKit";
import { DiffTableView } from "./DiffTableView";

interface Props {
  client: ApiClient;
  sel: DiffSelection;
  state: UrlState;
  onChange: (patch: Partial<UrlState>) => void;
  reloadToken: number;
}

const STATUS_TEXT: Record<"baseline_only" | "experimental_only", string> = {
  baseline_only: "baseline only",
  experimental_only: "experimental only",
};
const BAND_FILL: Record<Band, string> = {
  baseline_only: "rgba(25,118,210,0.10)",
  experimental_only: "rgba(245,124,0,0.14)",
  unknown: "rgba(158,158,158,0.16)",
};
const ACC_B = "#0d47a1";
const ACC_E = "#bf360c";
const ACC_D = "#424242";
/** Above this many pieces the two charts are stacked, each the full width. */
const STACK_CHARTS_ABOVE = 12;

const TIME_HINT = {
  host: "Host time: each piece's wall time on the CPU side; a step is its CPU-side ProfilerStep window.",
  device:
    "Device time: the summed duration of the kernels, memcpy and memset launched in the piece. Overlapping streams add up, so it can exceed the wall time.",
} as const;
const TIME_HEADING: Record<Clock, string> = {
  host: "host time (CPU-side ProfilerStep window)",
  device: "device time (Σ kernel/memcpy/memset durations)",
  with_backward: "host time, forward + backward (each module's backward operators moved to it)",
};
const CLOCK_AXIS: Record<Clock, string> = { host: "host", device: "device", with_backward: "forward + backward" };
const PASS_HINT = {
  both:
    "Forward + backward: a module's cost is its forward plus the backward operators its forward created (fwdbwd flows); the backward piece keeps what no module claims, shown as “backward (unattributed)”.",
  forward: "Forward only: a module's own call (its forward); all backward stays in the backward piece.",
} as const;

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

export function ModuleDiffView({ client, sel, state, onChange, reloadToken }: Props) {
  const req = useRequest<DiffModulesResponse>(
    (opts) => client.diffModules(sel, state.path, opts),
    [client, sel.baseline, sel.bWorker, sel.bSpan, sel.experimental, sel.eWorker, sel.eSpan, reloadToken, state.path],
  );

  // After a zoom or a breadcrumb step the view is replaced while the new
  // level loads: put the focus on the new level's name once it is there.
  const focusCrumb = useRef(false);
  const crumbRef = useRef<HTMLSpanElement>(null);
  useEffect(() => {
    if (req.state === "ok" && focusCrumb.current) {
      focusCrumb.current = false;
      crumbRef.current?.focus();
    }
  }, [req.state]);
  const goTo = (path: string) => {
    if (path !== state.path) focusCrumb.current = true;
    onChange({ path, piece: path });
  };

  if (req.state === "loading" || req.state === "idle") return <Loading what="the module comparison" waitingFor={req.state === "loading" ? req.waitingFor : null} />;
  if (req.state === "error") return <ErrorMessage error={req.error} what="the module comparison" />;
  const d = req.data;
  // Whether either trace has device activity is the server's answer, for the whole pair (any level).
  const noDevice = !d.device_present;
  const time: TimeKind = noDevice ? "host" : state.time;
  const backward = hasBackward(d);
  const clock = clockOf(time, state.pass, backward);
  const pieces = d.children;
  const stepOf = (p: DiffPiece) => pieceStep(p, d);
  const nodeTimes = clockTimes(d.node, clock);

  const zoom = (p: DiffPiece) => goTo(p.path);
  const select = (p: DiffPiece) => onChange({ piece: p.path });
  const pick = (idx: number) => {
    const p = pieces[idx];
    if (!p) return;
    if (p.has_children) zoom(p);
    else select(p);
  };
  const selected = pieces.find((p) => p.path === state.piece) ?? (state.piece === d.path ? d.node : null);

  return (
    <div data-view="modules">
      <div class="toolbar">
        <nav class="crumbs" aria-label="Module zoom level">
          <ol>
            {d.breadcrumb.map((b, i) => {
              const current = i === d.breadcrumb.length - 1;
              return (
                <li key={b.path}>
                  {current ? (
                    <span aria-current="page" tabIndex={-1} ref={crumbRef}>
                      {b.name}
                    </span>
                  ) : (
                    <button type="button" onClick={() => goTo(b.path)}>
                      {b.name}
                    </button>
                  )}
                </li>
              );
            })}
          </ol>
        </nav>
        <span class="seg" role="group" aria-label="Which time to compare">
          {(["host", "device"] as const).map((t) => {
            const off = t === "device" && noDevice;
            return (
              <button
                key={t}
                type="button"
                aria-pressed={time === t}
                disabled={off}
                data-time={t}
                title={off ? "Neither trace has device activity (no kernels, memcpy or memset): there is no device time to compare." : TIME_HINT[t]}
                onClick={() => onChange({ time: t })}
              >
                {t === "host" ? "Host time" : "Device time"}
              </button>
            );
          })}
        </span>
        <span class="seg" role="group" aria-label="Which passes a module's time includes">
          {(["both", "forward"] as const).map((pass) => {
            const off = time === "device" || !backward;
            return (
              <button
                key={pass}
                type="button"
                aria-pressed={off ? pass === "forward" : state.pass === pass}
                disabled={off}
                data-pass={pass}
                title={
                  time === "device"
                    ? "Backward is attributed to modules on host time only."
                    : !backward
                      ? "No backward operator at this level is linked to a module call (no fwdbwd flows into these modules)."
                      : PASS_HINT[pass]
                }
                onClick={() => onChange({ pass })}
              >
                {pass === "both" ? "Forward + backward" : "Forward only"}
              </button>
            );
          })}
        </span>
        <span class="muted small">
          {d.node.name}: baseline {formatMsWithUnit(nodeTimes.baseline)}, experimental {formatMsWithUnit(nodeTimes.experimental)} (
          <DeltaText value={nodeTimes.delta} text={formatSignedMsWithUnit(nodeTimes.delta)} />)
        </span>
      </div>
      <p class="muted small time-hint" data-testid="time-hint">
        {noDevice ? `${TIME_HINT.host} Device time is off: neither trace has kernels, memcpy or memset.` : TIME_HINT[time]}
        {clock === "with_backward" ? ` ${PASS_HINT.both}` : ""}
      </p>
      {d.node.note ? (
        <Message kind="info" title="How this level is compared">
          <NoteText text={d.node.note} />
        </Message>
      ) : null}
      {d.approximate || d.children_total > d.children.length ? (
        <Message kind="info" title="A very wide level">
          {d.children_total > d.children.length
            ? `Showing the first ${d.children.length.toLocaleString()} of ${d.children_total.toLocaleString()} pieces. `
            : ""}
          {d.approximate
            ? "This level has so many pieces that they were aligned approximately: a few pieces may be paired with a neighbour of the same kind instead of their true counterpart."
            : ""}
        </Message>
      ) : null}
      {pieces.length === 0 ? (
        <Message kind="info" title="Nothing to compare at this level">
          {d.path === ""
            ? "Neither trace has module, data loading (DataLoader) or optimizer events. Record with torch.profiler(with_stack=True, with_modules=True) to get the module tree."
            : "This piece has no sub-pieces."}
        </Message>
      ) : (
        <>
          <DiffCharts pieces={pieces} d={d} time={clock} onPick={pick} />
          <PieceTable pieces={pieces} accDelta={accumulated(d, clock).delta} time={clock} selectedPath={state.piece} onZoom={zoom} onSelect={select} stepOf={stepOf} />
        </>
      )}
      <section aria-labelledby="md-ops">
        <h2 id="md-ops">
          Operators in {selected ? `“${selected.name}”` : "all steps"}
          {selected && state.piece !== "" && <TimelinePair {...sidesOf(sel)} find={selected.name} />}
          {selected && state.piece !== "" && (
            <>
              {" "}
              <button class="linklike small" type="button" onClick={() => onChange({ piece: "" })}>
                show all operators
              </button>
            </>
          )}
        </h2>
        <DiffTableView
          client={client}
          sel={sel}
          table="operators"
          state={state}
          onChange={onChange}
          reloadToken={reloadToken}
          piece={state.piece && selected ? { path: state.piece, name: selected.name } : null}
          height={360}
        />
      </section>
    </div>
  );
}

function Tip({ p, i, time, acc, step }: { p: DiffPiece; i: number; time: Clock; acc: ReturnType<typeof accumulated>; step: string }) {
  const t = clockTimes(p, time);
  const passes = time === "with_backward" ? passesOf(p) : null;
  const band = bandOf(p);
  const renamed = p.baseline_name && p.experimental_name && p.baseline_name !== p.experimental_name;
  return (
    <div>
      <div class="name">
        #{i + 1} {pieceName(p, time)}
        {step && p.kind !== "step" ? ` (step ${step})` : ""}
      </div>
      <div style={{ opacity: 0.8 }}>{TIME_HEADING[time]}</div>
      {renamed && (
        <div>
          {p.baseline_name} → {p.experimental_name}
        </div>
      )}
      {band && <div>{band === "unknown" ? "time outside any module" : STATUS_TEXT[band]}</div>}
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

function DiffCharts({
  pieces,
  d,
  time,
  onPick,
}: {
  pieces: DiffPiece[];
  d: DiffModulesResponse;
  time: Clock;
  onPick: (i: number) => void;
}) {
  const stepOf = (p: DiffPiece) => pieceStep(p, d);
  const stacked = pieces.length > STACK_CHARTS_ABOVE;
  const model = useMemo(() => {
    const s = moduleDiffSeries(d, time);
    const xAxis = indexAxis("Pieces in execution order (shaded or −/+: only in the baseline / experimental run)", (i) => s.labels[i] ?? "", s.rotate, s.ticks);
    const xScale: uPlot.Scale = { time: false, range: [-0.6, pieces.length - 0.4] };
    const tint = statusBands(pieces);
    const cmp: Omit<uPlot.Options, "width" | "height"> = {
      scales: { x: xScale, y: { range: (_u, _min, max) => [0, max * 1.08 || 1] }, acc: { range: (_u, _min, max) => [0, max * 1.05 || 1] } },
      axes: [xAxis, msAxis(`Piece ${CLOCK_AXIS[time]} time (ms)`), msAxis("Accumulated (ms)", 1, "acc")],
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
      axes: [xAxis, msAxis(`Δ ${CLOCK_AXIS[time]} time per piece (ms)`), msAxis("Accumulated Δ (ms)", 1, "acc")],
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
      acc: accumulated(d, time),
      cmp,
      cmpData: [s.xs, s.baselineMs, s.experimentalMs, s.accBaselineMs, s.accExperimentalMs] as uPlot.AlignedData,
      diff,
      diffData: [s.xs, s.slowerMs, s.fasterMs, s.accDeltaMs] as uPlot.AlignedData,
    };
  }, [pieces, d, time]);

  const tooltip = (i: number) => {
    const p = pieces[i];
    return p ? <Tip p={p} i={i} time={time} acc={model.acc} step={stepOf(p)} /> : null;
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
      <span class="item">
        <span class="bar" style={{ background: BAND_FILL.unknown, border: "1px dashed #9e9e9e" }} />
        unknown (not in any module)
      </span>
    </span>
  );
  return (
    <>
      {model.labelled < pieces.length && (
        <p class="muted small" data-testid="labels-skipped">
          {pieces.length} pieces: {model.labelled} are labelled on the x axis (always including the tallest bar and the largest change). Hover a bar or read the Pieces table below for
          the others.
        </p>
      )}
      <div class={stacked ? "stack" : "grid2"}>
        <ChartCard
          id="md-cmp"
          chart="execution-comparison"
          title="Execution comparison"
          legend={[
            { label: "Baseline per piece", color: BASELINE_COLOR, kind: "bar" },
            { label: "Experimental per piece", color: EXPERIMENTAL_COLOR, kind: "bar" },
            { label: "Baseline accumulated", color: ACC_B, kind: "dashed" },
            { label: "Experimental accumulated", color: ACC_E, kind: "dashed" },
          ]}
          bandLegend={bandLegend}
          options={model.cmp}
          data={model.cmpData}
          height={stacked ? 320 : 300}
          tooltip={tooltip}
          onPick={onPick}
          label={`${CLOCK_AXIS[time]} time of each piece for baseline and experimental, with accumulated time, in milliseconds`}
        />
        <ChartCard
          id="md-diff"
          chart="execution-difference"
          title="Execution difference"
          legend={[
            { label: "Δ per piece, slower (experimental − baseline > 0)", color: WORSE_COLOR, kind: "bar" },
            { label: "Δ per piece, faster", color: BETTER_COLOR, kind: "bar" },
            { label: "Accumulated Δ", color: ACC_D, kind: "line" },
          ]}
          bandLegend={bandLegend}
          options={model.diff}
          data={model.diffData}
          height={stacked ? 320 : 300}
          tooltip={tooltip}
          onPick={onPick}
          label={`Difference of ${CLOCK_AXIS[time]} time per piece and accumulated difference, in milliseconds`}
        />
      </div>
    </>
  );
}

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

const ACROSS_STEPS = "The mark judges the module across steps (its per-step time in every step of each run), not this one call.";

function PieceTable({
  pieces,
  accDelta,
  time,
  selectedPath,
  onZoom,
  onSelect,
  stepOf,
}: {
  pieces: DiffPiece[];
  /** The server's accumulated Δ (µs) up to each piece. */
  accDelta: number[];
  time: Clock;
  selectedPath: string;
  onZoom: (p: DiffPiece) => void;
  onSelect: (p: DiffPiece) => void;
  stepOf: (p: DiffPiece) => string;
}) {
  // Forward + backward: each module's forward, backward and total side by side.
  const split = time === "with_backward";
  return (
    <section aria-labelledby="md-pieces">
      <h2 id="md-pieces" data-time={time}>
        Pieces — {TIME_HEADING[time]}
      </h2>
      {time !== "device" && (
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
              const t = clockTimes(p, time);
              const band = bandOf(p);
              const renamed = p.baseline_name && p.experimental_name && p.baseline_name !== p.experimental_name;
              const name = pieceName(p, time);
              const passes = split ? passesOf(p) : null;
              // The backward piece is all backward: with both passes, the part no module claims.
              const rest = split && p.kind === "backward";
              const bOff = p.status === "experimental_only";
              const eOff = p.status === "baseline_only";
              return (
                <tr key={p.path} class={selectedPath === p.path ? "selected" : ""} data-path={p.path} data-status={p.status} data-kind={p.kind}>
                  <td>{i + 1}</td>
                  <td class="text name" title={renamed ? `${p.baseline_name} → ${p.experimental_name}` : name}>
                    {name}{" "}
                    {/* An unknown piece's name already says so: the badge only marks one-sided pieces. */}
                    {band && band !== "unknown" && <span class={`badge ${band}`}>{STATUS_TEXT[band]}</span>}
                    {renamed && <span class="muted small"> ({p.baseline_name} → {p.experimental_name})</span>}
                  </td>
                  <td data-col="step">{stepOf(p)}</td>
                  {split && (
                    <>
                      <MsCell us={passes?.forward.baseline ?? null} absent={bOff} what="Baseline forward" />
                      <MsCell us={passes?.forward.experimental ?? null} absent={eOff} what="Experimental forward" />
                      <DeltaCell us={passes?.forward.delta ?? null} what="Δ forward" sig={p.forward_significance} col="fwd-d" />
                      <MsCell us={passes ? passes.backward.baseline : rest ? t.baseline : null} absent={bOff} what="Baseline backward" />
                      <MsCell us={passes ? passes.backward.experimental : rest ? t.experimental : null} absent={eOff} what="Experimental backward" />
                      <DeltaCell us={passes ? passes.backward.delta : rest ? t.delta : null} what="Δ backward" sig={p.backward_significance} col="bwd-d" />
                    </>
                  )}
                  <td data-col="b" title={`Baseline ${TIME_HEADING[time]}: ${formatMsWithUnit(t.baseline)}`}>{bOff ? "—" : formatMs(t.baseline)}</td>
                  <td data-col="e" title={`Experimental ${TIME_HEADING[time]}: ${formatMsWithUnit(t.experimental)}`}>{eOff ? "—" : formatMs(t.experimental)}</td>
                  <DeltaCell us={t.delta} what={`Δ ${TIME_HEADING[time]}`} sig={time === "with_backward" ? p.significance : time === "host" ? p.forward_significance : null} col="d" />
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
