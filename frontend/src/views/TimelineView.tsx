/**
 * Timeline: the piece at `path` of both runs, baseline above, experimental
 * below, on one canvas (components/timelineDraw.ts). Matched events are
 * coloured by their delta, events only one run has are hatched. Wheel
 * zooms, drag pans, a click selects an event and its match and offers its
 * row in the operators (or kernels) table. Zoomed in past the detail the
 * answer holds, the visible window is asked for again at full width.
 */
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import type { ApiClient, DiffSelection, DiffTimelineResponse } from "../api";
import { Loading } from "../components/Loading";
import { ErrorMessage, Message } from "../components/Message";
import { DeltaText } from "../components/Delta";
import { drawTimeline, GUTTER, markedIn, sideTops, type Mark } from "../components/timelineDraw";
import { formatInt, formatMsWithUnit, formatSignedMsWithUnit } from "../model/format";
import { exportFileName, toChromeTrace } from "../model/timelineExport";
import { decodeTimeline, eventKey, eventNumbers, findEvent, firstNamed, hitTest, type EventKey, type SideModel, type TimelineModel } from "../model/timelineLayout";
import { axisLength, fullView, panBy, sideScale, timeAt, viewAround, zoomAt, type Viewport } from "../model/timelineViewport";
import type { UrlState } from "../model/urlState";
import { useRequest } from "../useRequest";

interface Props {
  client: ApiClient;
  sel: DiffSelection;
  state: UrlState;
  onChange: (patch: Partial<UrlState>) => void;
  reloadToken: number;
}

/** Ask for the visible window again once the view shows at most this share of the piece. */
const DETAIL_SHARE = 0.5;
const DETAIL_DEBOUNCE_MS = 250;
const WHEEL_ZOOM = 1.0015;

interface Tip {
  x: number;
  y: number;
  /** Width of the view, px: a tip near the right edge opens to the left. */
  width?: number;
  mark: Mark | null;
  merged: { count: number; us: number; span: number } | null;
}

/**
 * The piece shown: `path`, or the first step when none is named (the
 * timeline of all steps at once would align every operator of the run).
 */
export function timelinePath(path: string): string {
  return path === "" ? "0" : path;
}

export function TimelineView({ client, sel, state, onChange, reloadToken }: Props) {
  const path = timelinePath(state.path);
  const wrapRef = useRef<HTMLDivElement>(null);
  const canvasRef = useRef<HTMLCanvasElement>(null);
  // Null until measured: the first request is made at the width drawn, not at a guess and again.
  const [measuredPx, setMeasuredPx] = useState<number | null>(null);
  const widthPx = measuredPx ?? 1200;
  const [stretch, setStretch] = useState(false);
  // By identity, not index: the whole piece's answer and a window's number events differently.
  const [selected, setSelected] = useState<EventKey | null>(null);
  const [tip, setTip] = useState<Tip | null>(null);
  const [exporting, setExporting] = useState<string | null>(null);
  // The visible range lives in a ref: a pan redraws the canvas without a render.
  const viewRef = useRef<Viewport | null>(null);
  const [settledView, setSettledView] = useState<Viewport | null>(null);
  const plotPx = Math.max(Math.round((widthPx - GUTTER) / 100) * 100, 200);

  useLayoutEffect(() => {
    const el = wrapRef.current;
    if (!el) return;
    const measure = () => setMeasuredPx(Math.max(Math.floor(el.clientWidth), 400));
    measure();
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, []);

  const selKey = [client, sel.baseline, sel.bWorker, sel.bSpan, sel.experimental, sel.eWorker, sel.eSpan, reloadToken, path];
  const find = state.find || undefined;
  const base = useRequest<DiffTimelineResponse>(
    measuredPx === null ? null : (opts) => client.diffTimeline(sel, { path, widthPx: plotPx, find }, opts),
    [...selKey, plotPx, find, measuredPx === null],
  );
  const baseModel = useMemo(() => (base.state === "ok" ? decodeTimeline(base.data) : null), [base]);
  const axisUs = baseModel ? axisLength([baseModel.baseline, baseModel.experimental], stretch) : 1;

  // Zoomed in: the visible window at full width (both sides' offsets cover it, stretched or not).
  const detailWindow = useMemo(() => {
    if (!baseModel || !settledView) return null;
    const merged = (baseModel.baseline?.mergedCount ?? 0) + (baseModel.experimental?.mergedCount ?? 0);
    if (merged === 0 || settledView.t1 - settledView.t0 > axisUs * DETAIL_SHARE) return null;
    let from = Infinity;
    let to = 0;
    for (const s of [baseModel.baseline, baseModel.experimental]) {
      if (!s) continue;
      const k = sideScale(s, axisUs, stretch);
      from = Math.min(from, settledView.t0 / k);
      to = Math.max(to, settledView.t1 / k);
    }
    return { fromUs: Math.max(0, Math.floor(from)), toUs: Math.ceil(to) + 1 };
  }, [baseModel, settledView, axisUs, stretch]);
  const detail = useRequest<DiffTimelineResponse>(
    detailWindow ? (opts) => client.diffTimeline(sel, { path, widthPx: plotPx, find, ...detailWindow }, opts) : null,
    [...selKey, plotPx, find, detailWindow?.fromUs, detailWindow?.toUs],
  );
  const model: TimelineModel | null = useMemo(() => (detail.state === "ok" ? decodeTimeline(detail.data) : baseModel), [detail, baseModel]);
  // A hover names an event of the answer drawn when it happened.
  useEffect(() => setTip(null), [model]);

  // A new piece: the whole of it, nothing selected; `find` selects its first event of that name.
  useEffect(() => {
    if (!baseModel) return;
    viewRef.current = fullView(axisUs);
    setSettledView(viewRef.current);
    setSelected(null);
    if (state.find) {
      for (const side of [baseModel.baseline, baseModel.experimental]) {
        if (!side) continue;
        const i = firstNamed(side, state.find);
        if (i < 0) continue;
        setSelected(eventKey(side, i));
        viewRef.current = viewAround(side.ts[i]!, side.dur[i]!, sideScale(side, axisUs, stretch), axisUs);
        setSettledView(viewRef.current);
        break;
      }
    }
  }, [baseModel]);

  // Stretching changes the axis: start again from the whole piece.
  const firstStretch = useRef(true);
  useEffect(() => {
    if (firstStretch.current) {
      firstStretch.current = false;
      return;
    }
    if (!baseModel) return;
    viewRef.current = fullView(axisUs);
    setSettledView(viewRef.current);
  }, [stretch]);

  const selectedIn = (m: TimelineModel | null): Mark | null => {
    const side = selected && m ? m[selected.side] : null;
    const i = side && selected ? findEvent(side, selected) : -1;
    return selected && i >= 0 ? { side: selected.side, index: i } : null;
  };

  const frame = useRef<number | null>(null);
  const draw = () => {
    const c = canvasRef.current;
    const v = viewRef.current;
    if (!c || !model || !v) return;
    const tops = sideTops(model);
    const dpr = window.devicePixelRatio || 1;
    if (c.width !== Math.round(widthPx * dpr) || c.height !== Math.round(tops.height * dpr)) {
      c.width = Math.round(widthPx * dpr);
      c.height = Math.round(tops.height * dpr);
      c.style.height = `${tops.height}px`;
    }
    // Opaque: the compositor need not blend it with the page.
    const ctx = c.getContext("2d", { alpha: false });
    if (!ctx) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const rect = c.getBoundingClientRect();
    const stats = drawTimeline(ctx, model, {
      view: v,
      axisUs,
      stretch,
      widthPx,
      selected: selectedIn(model),
      hover: tip?.mark ?? null,
      visibleTop: -rect.top,
      visibleBottom: window.innerHeight - rect.top,
    });
    c.dataset.drawMs = stats.ms.toFixed(2);
    c.dataset.visited = String(stats.visited);
    c.dataset.rects = String(stats.rects);
    c.dataset.t0 = String(v.t0);
    c.dataset.t1 = String(v.t1);
  };
  const schedule = () => {
    if (frame.current !== null) return;
    frame.current = requestAnimationFrame(() => {
      frame.current = null;
      draw();
    });
  };
  useLayoutEffect(() => draw());
  // Only the part on screen is painted: scrolling shows the rest.
  useEffect(() => {
    window.addEventListener("scroll", schedule, { passive: true });
    window.addEventListener("resize", schedule);
    return () => {
      window.removeEventListener("scroll", schedule);
      window.removeEventListener("resize", schedule);
    };
  });
  useEffect(() => () => void (frame.current !== null && cancelAnimationFrame(frame.current)), []);

  // The settled view drives the detail request; pans and zooms only redraw.
  const settleTimer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const moved = (v: Viewport) => {
    viewRef.current = v;
    schedule();
    if (settleTimer.current) clearTimeout(settleTimer.current);
    settleTimer.current = setTimeout(() => setSettledView(viewRef.current), DETAIL_DEBOUNCE_MS);
  };
  useEffect(() => () => void (settleTimer.current && clearTimeout(settleTimer.current)), []);

  // Wheel: zoom at the pointer (a non-passive listener, so the page does not scroll).
  useEffect(() => {
    const c = canvasRef.current;
    if (!c) return;
    const onWheel = (ev: WheelEvent) => {
      const v = viewRef.current;
      if (!v) return;
      ev.preventDefault();
      const rect = c.getBoundingClientRect();
      const frac = Math.min(Math.max((ev.clientX - rect.left - GUTTER) / (rect.width - GUTTER), 0), 1);
      if (ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) moved(panBy(v, (ev.deltaX || ev.deltaY) / (rect.width - GUTTER), axisUs));
      else moved(zoomAt(v, frac, WHEEL_ZOOM ** ev.deltaY, axisUs));
    };
    c.addEventListener("wheel", onWheel, { passive: false });
    return () => c.removeEventListener("wheel", onWheel);
  });

  const locate = (clientX: number, clientY: number): { mark: Mark | null; merged: Tip["merged"] } => {
    const c = canvasRef.current;
    const v = viewRef.current;
    if (!c || !model || !v) return { mark: null, merged: null };
    const rect = c.getBoundingClientRect();
    const x = clientX - rect.left;
    const y = clientY - rect.top;
    if (x < GUTTER) return { mark: null, merged: null };
    const tops = sideTops(model);
    for (const which of ["baseline", "experimental"] as const) {
      const side = model[which];
      if (!side) continue;
      const top = tops[which];
      if (y < top || y >= top + side.heightPx) continue;
      const k = sideScale(side, axisUs, stretch);
      const plotW = widthPx - GUTTER;
      const t = timeAt(x, k, v, GUTTER, plotW);
      const tol = (3 * (v.t1 - v.t0)) / plotW / k;
      const hit = hitTest(side, t, y - top, tol);
      if (hit?.type === "event") return { mark: { side: which, index: hit.index }, merged: null };
      if (hit?.type === "merged") {
        const m = side.merged;
        return { mark: null, merged: { count: m.count[hit.index]!, us: m.mergedUs[hit.index]!, span: m.dur[hit.index]! } };
      }
    }
    return { mark: null, merged: null };
  };

  const drag = useRef<{ x: number; moved: boolean } | null>(null);
  const onPointerDown = (ev: PointerEvent) => {
    drag.current = { x: ev.clientX, moved: false };
    try {
      (ev.currentTarget as HTMLCanvasElement).setPointerCapture(ev.pointerId);
    } catch {
      // A pointer the browser does not track (a synthetic event): dragging still works inside the canvas.
    }
  };
  const onPointerMove = (ev: PointerEvent) => {
    const d = drag.current;
    const v = viewRef.current;
    if (d && v && (ev.buttons & 1) === 1) {
      const dx = ev.clientX - d.x;
      if (Math.abs(dx) > 2 || d.moved) {
        d.moved = true;
        d.x = ev.clientX;
        moved(panBy(v, -dx / (widthPx - GUTTER), axisUs));
        if (tip) setTip(null);
      }
      return;
    }
    const found = locate(ev.clientX, ev.clientY);
    const wrap = wrapRef.current?.getBoundingClientRect();
    if (!found.mark && !found.merged) {
      if (tip) setTip(null);
      return;
    }
    setTip({ x: ev.clientX - (wrap?.left ?? 0), y: ev.clientY - (wrap?.top ?? 0), width: wrap?.width ?? 0, ...found });
  };
  const onPointerUp = (ev: PointerEvent) => {
    const d = drag.current;
    drag.current = null;
    if (d && !d.moved) {
      const mark = locate(ev.clientX, ev.clientY).mark;
      const side = mark && model ? model[mark.side] : null;
      setSelected(mark && side ? eventKey(side, mark.index) : null);
    }
  };
  const onKey = (ev: KeyboardEvent) => {
    const v = viewRef.current;
    if (!v) return;
    const k = ev.key;
    if (k === "+" || k === "=") moved(zoomAt(v, 0.5, 0.5, axisUs));
    else if (k === "-") moved(zoomAt(v, 0.5, 2, axisUs));
    else if (k === "ArrowLeft") moved(panBy(v, -0.2, axisUs));
    else if (k === "ArrowRight") moved(panBy(v, 0.2, axisUs));
    else if (k === "0") moved(fullView(axisUs));
    else if (k === "Escape") setSelected(null);
    else return;
    ev.preventDefault();
  };

  const exportTrace = async () => {
    setExporting("Preparing the Chrome trace…");
    try {
      const full = await client.diffTimeline(sel, { path, widthPx: 0 });
      const blob = new Blob([JSON.stringify(toChromeTrace(full))], { type: "application/json" });
      const a = document.createElement("a");
      a.href = URL.createObjectURL(blob);
      a.download = exportFileName(full);
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
      setExporting(`Saved ${a.download}: open it in Perfetto (ui.perfetto.dev) or chrome://tracing.`);
    } catch (e) {
      setExporting(`Export failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  };

  if (base.state === "loading" || base.state === "idle") return <div ref={wrapRef}><Loading what="the timelines" waitingFor={base.state === "loading" ? base.waitingFor : null} /></div>;
  if (base.state === "error") return <div ref={wrapRef}><ErrorMessage error={base.error} what="the timelines" /></div>;
  const resp = base.data;
  const shown = selectedIn(model);
  return (
    <div data-view="timeline" data-detail={detail.state} ref={wrapRef} style={{ position: "relative" }}>
      <div class="toolbar">
        <nav class="crumbs" aria-label="Piece">
          <ol>
            {resp.breadcrumb.map((b, i) =>
              i === resp.breadcrumb.length - 1 || b.path === "" ? (
                <li key={b.path}>
                  <span aria-current={i === resp.breadcrumb.length - 1 ? "page" : undefined}>{b.name}</span>
                </li>
              ) : (
                <li key={b.path}>
                  <button type="button" onClick={() => onChange({ path: b.path, find: "" })}>
                    {b.name}
                  </button>
                </li>
              ),
            )}
          </ol>
        </nav>
        <span class="seg" role="group" aria-label="Time axis">
          <button type="button" aria-pressed={!stretch} data-axis="own" onClick={() => setStretch(false)} title="Each side in its own µs from the piece's start">
            Same scale
          </button>
          <button type="button" aria-pressed={stretch} data-axis="stretch" onClick={() => setStretch(true)} title="Both pieces stretched to one length">
            Stretch to one length
          </button>
        </span>
        <span class="seg" role="group" aria-label="Zoom">
          <button type="button" aria-label="Zoom in" onClick={() => viewRef.current && moved(zoomAt(viewRef.current, 0.5, 0.5, axisUs))}>+</button>
          <button type="button" aria-label="Zoom out" onClick={() => viewRef.current && moved(zoomAt(viewRef.current, 0.5, 2, axisUs))}>−</button>
          <button type="button" onClick={() => moved(fullView(axisUs))}>Whole piece</button>
        </span>
        <button class="btn" type="button" data-testid="export-trace" onClick={() => void exportTrace()}>
          Export Chrome trace
        </button>
        <button class="btn" type="button" onClick={() => onChange({ view: "modules", path: parentPath(resp.path), piece: resp.path })}>
          Module diff
        </button>
      </div>
      <p class="muted small" data-testid="timeline-summary">
        {summary(model?.baseline ?? null, "Baseline")} {summary(model?.experimental ?? null, "Experimental")} {formatInt(resp.matched)} matched pairs.{" "}
        <span class="tl-key tl-slower">slower</span> <span class="tl-key tl-faster">faster</span> <span class="tl-key tl-same">matched, within 5 %</span>{" "}
        <span class="tl-key tl-one">one run only</span> <span class="tl-key tl-merged">merged (too small to draw)</span>. Wheel zooms, drag pans, click selects.
        {detail.state === "loading" && " Loading detail…"}
      </p>
      {exporting && <p class="muted small" role="status">{exporting}</p>}
      {resp.recordings_note && (
        <Message kind="info" title="One recording of a group">
          <span data-testid="timeline-recordings-note">{resp.recordings_note}</span>
        </Message>
      )}
      {resp.status !== "matched" && (
        <Message
          kind="info"
          title={
            resp.status === "inside_compiled"
              ? "This piece ran inside a module the other run compiled (torch.compile): its work there is the compiled module's"
              : resp.status === "baseline_only"
                ? "Only the baseline run has this piece"
                : "Only the experimental run has this piece"
          }
        >
          Nothing in it is matched: every event is hatched.
        </Message>
      )}
      <canvas
        ref={canvasRef}
        class="tl-canvas"
        tabIndex={0}
        role="img"
        aria-label={`Timelines of ${resp.name}: baseline above, experimental below`}
        style={{ width: `${widthPx}px`, display: "block", cursor: "grab", touchAction: "none" }}
        onPointerDown={onPointerDown}
        onPointerMove={onPointerMove}
        onPointerUp={onPointerUp}
        onPointerLeave={() => tip && setTip(null)}
        onKeyDown={onKey}
      />
      {tip && model && <Tooltip tip={tip} model={model} />}
      {shown && model && <Selection mark={shown} model={model} onChange={onChange} />}
    </div>
  );
}

function parentPath(path: string): string {
  const i = path.lastIndexOf(".");
  return i < 0 ? "" : path.slice(0, i);
}

function summary(side: SideModel | null, label: string): string {
  if (!side) return `${label}: no such piece.`;
  const drawn = formatInt(side.n);
  const merged = side.mergedCount ? `, ${formatInt(side.mergedCount)} merged (shorter than ${formatMsWithUnit(side.minDrawUs)})` : "";
  return `${label}: ${formatMsWithUnit(side.lengthUs)}, ${drawn} events drawn of ${formatInt(side.eventsTotal)}${merged}.`;
}

function Numbers({ side, index }: { side: SideModel; index: number }) {
  const n = eventNumbers(side, index);
  return (
    <dl class="tl-numbers">
      <dt>Baseline</dt>
      <dd data-testid="tip-baseline">{n.baselineUs === null ? "—" : formatMsWithUnit(n.baselineUs)}</dd>
      <dt>Experimental</dt>
      <dd data-testid="tip-experimental">{n.experimentalUs === null ? "—" : formatMsWithUnit(n.experimentalUs)}</dd>
      <dt>Δ</dt>
      <dd>{n.deltaUs === null ? "not matched: only this run has it here" : <DeltaText value={n.deltaUs} text={formatSignedMsWithUnit(n.deltaUs)} />}</dd>
      <dt>Starts</dt>
      <dd>{formatMsWithUnit(n.startUs)} into the piece</dd>
    </dl>
  );
}

/** Beside the pointer, on the side with room for it. */
function tipStyle(tip: Tip): Record<string, string> {
  const wide = (tip.width ?? 0) - tip.x < 340;
  return wide ? { right: `${(tip.width ?? 0) - tip.x + 14}px`, top: `${tip.y + 14}px` } : { left: `${tip.x + 14}px`, top: `${tip.y + 14}px` };
}

function Tooltip({ tip, model }: { tip: Tip; model: TimelineModel }) {
  const style = tipStyle(tip);
  if (tip.merged)
    return (
      <div class="tl-tip" role="tooltip" style={style} data-testid="timeline-tip">
        <strong>{formatInt(tip.merged.count)} events merged</strong>
        <div class="muted small">
          each too short to draw at this zoom: {formatMsWithUnit(tip.merged.us)} in all over {formatMsWithUnit(tip.merged.span)}. Zoom in to see them.
        </div>
      </div>
    );
  const side = tip.mark ? model[tip.mark.side] : null;
  if (!side || !tip.mark) return null;
  const n = eventNumbers(side, tip.mark.index);
  return (
    <div class="tl-tip" role="tooltip" style={style} data-testid="timeline-tip">
      <strong>{n.name}</strong> <span class="muted small">{n.kind}, {side.side}</span>
      <Numbers side={side} index={tip.mark.index} />
    </div>
  );
}

const TABLE_OF: Partial<Record<string, "operators" | "kernels">> = { operator: "operators", kernel: "kernels", memcpy: "kernels", memset: "kernels" };

function Selection({ mark, model, onChange }: { mark: Mark; model: TimelineModel; onChange: (p: Partial<UrlState>) => void }) {
  const side = model[mark.side]!;
  const other = model[mark.side === "baseline" ? "experimental" : "baseline"];
  const n = eventNumbers(side, mark.index);
  const table = TABLE_OF[n.kind];
  const matchShown = other ? markedIn(mark, other, side) >= 0 : false;
  return (
    <section class="tl-selection" aria-label="Selected event" data-testid="timeline-selection">
      <h3>
        {n.name} <span class="muted small">({n.kind}, {mark.side})</span>
      </h3>
      <Numbers side={side} index={mark.index} />
      <p class="muted small">
        {n.matched
          ? matchShown
            ? "Its match in the other run is outlined."
            : "Its match in the other run is too short to draw at this zoom: zoom in to see it."
          : "The other run has no matching event in this piece."}
      </p>
      {table && (
        <button class="btn primary" type="button" data-testid="to-table" onClick={() => onChange({ view: table, filter: n.name, sort: "", dir: "desc", find: "" })}>
          Show “{n.name}” in the {table} table
        </button>
      )}
    </section>
  );
}
