/**
 * The Timeline view's time axis: the visible range, zoom and pan, where a
 * side's event lands in pixels (each side from its piece's start, or both
 * stretched to one length), the colour of a delta, and axis ticks. Pure.
 */
import type { SideModel } from "./timelineLayout";

/** Visible range on the common axis, µs after the pieces' starts. */
export interface Viewport {
  t0: number;
  t1: number;
}

export const MIN_SPAN_US = 0.01;

/** The axis length: the longer side's extent; stretched, the longer piece. */
export function axisLength(sides: readonly (SideModel | null)[], stretch: boolean): number {
  let len = 0;
  for (const s of sides) if (s) len = Math.max(len, stretch ? s.lengthUs : s.extentUs);
  return len > 0 ? len : 1;
}

/** Factor from a side's own µs to the axis: 1, or stretched so its piece fills the axis. */
export function sideScale(side: SideModel, axisUs: number, stretch: boolean): number {
  return stretch && side.lengthUs > 0 ? axisUs / side.lengthUs : 1;
}

function clampView(t0: number, t1: number, axisUs: number): Viewport {
  // A little room past the end: device work outlasting the host window.
  const max = axisUs * 1.02;
  let span = Math.min(Math.max(t1 - t0, MIN_SPAN_US), max);
  let a = t0;
  if (a < 0) a = 0;
  if (a + span > max) a = Math.max(0, max - span);
  return { t0: a, t1: a + span };
}

export function fullView(axisUs: number): Viewport {
  return clampView(0, axisUs, axisUs);
}

/** Zoom by `factor` (< 1 in, > 1 out) keeping the time under `anchorFrac` (0..1 of the plot) in place. */
export function zoomAt(v: Viewport, anchorFrac: number, factor: number, axisUs: number): Viewport {
  const span = v.t1 - v.t0;
  const anchor = v.t0 + anchorFrac * span;
  const next = Math.max(span * factor, MIN_SPAN_US);
  return clampView(anchor - anchorFrac * next, anchor + (1 - anchorFrac) * next, axisUs);
}

/** Pan by a fraction of the visible span (positive: later). */
export function panBy(v: Viewport, frac: number, axisUs: number): Viewport {
  const d = (v.t1 - v.t0) * frac;
  return clampView(v.t0 + d, v.t1 + d, axisUs);
}

/** The view around one event (its own µs times its side's scale), with some room either side. */
export function viewAround(startUs: number, durUs: number, scale: number, axisUs: number): Viewport {
  const s = startUs * scale;
  const span = Math.max(durUs * scale * 4, MIN_SPAN_US * 10);
  return clampView(s - span * 0.3, s - span * 0.3 + span, axisUs);
}

/** Pixel x of a side's time `t` (its own µs) in a plot of `widthPx` starting at `leftPx`. */
export function xOf(t: number, scale: number, v: Viewport, leftPx: number, widthPx: number): number {
  return leftPx + ((t * scale - v.t0) / (v.t1 - v.t0)) * widthPx;
}

/** A side's own µs at pixel x. */
export function timeAt(x: number, scale: number, v: Viewport, leftPx: number, widthPx: number): number {
  return (v.t0 + ((x - leftPx) / widthPx) * (v.t1 - v.t0)) / scale;
}

/**
 * Colour bucket of a matched event's delta: 0 is unchanged, +1..+STEPS
 * slower (red, deeper with the relative change), -1..-STEPS faster (green).
 * Buckets, not a continuous scale, so the canvas fills each colour once.
 */
export const STEPS = 5;
/** Below this relative change an event counts as unchanged. */
export const UNCHANGED_REL = 0.05;

export function deltaBucket(deltaUs: number, baselineUs: number, experimentalUs: number): number {
  const ref = Math.max(baselineUs, experimentalUs);
  if (!(ref > 0) || !Number.isFinite(deltaUs)) return 0;
  const rel = deltaUs / ref;
  if (Math.abs(rel) < UNCHANGED_REL) return 0;
  const k = Math.min(STEPS, Math.ceil(((Math.abs(rel) - UNCHANGED_REL) / (1 - UNCHANGED_REL)) * STEPS));
  return Math.sign(rel) * Math.max(1, k);
}

const RED = [198, 40, 40];
const GREEN = [46, 125, 50];
const NEUTRAL = [144, 164, 174];

function mix(a: number[], b: number[], f: number): string {
  const c = a.map((x, i) => Math.round(x + (b[i]! - x) * f));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

/** CSS colour of a bucket (see deltaBucket). */
export function bucketColor(bucket: number): string {
  if (bucket === 0) return mix(NEUTRAL, NEUTRAL, 0);
  return mix(NEUTRAL, bucket > 0 ? RED : GREEN, 0.35 + (0.65 * Math.abs(bucket)) / STEPS);
}

/** Round tick values covering [t0, t1], about `count` of them. */
export function ticks(t0: number, t1: number, count: number): { values: number[]; step: number } {
  const span = t1 - t0;
  if (!(span > 0)) return { values: [t0], step: 1 };
  const raw = span / Math.max(count, 1);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((k) => k * mag).find((s) => s >= raw) ?? 10 * mag;
  const values: number[] = [];
  for (let v = Math.ceil(t0 / step) * step; v <= t1 + step * 1e-9; v += step) values.push(Number(v.toPrecision(12)));
  return { values, step };
}

/** A tick label: µs for steps under 0.1 ms, else ms, with as many decimals as the step needs. */
export function tickLabel(us: number, step: number): string {
  if (step < 100) {
    const d = step >= 1 ? 0 : Math.min(3, Math.ceil(-Math.log10(step)));
    return `${us.toFixed(d)} µs`;
  }
  const d = step >= 1e6 ? 0 : Math.min(3, Math.max(0, Math.ceil(-Math.log10(step / 1000))));
  return `${(us / 1000).toFixed(d)} ms`;
}
