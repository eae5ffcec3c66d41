/**
 * Draws a decoded timeline (model/timelineLayout.ts) on a 2D canvas:
 * baseline above, experimental below, under one time axis. One pass over
 * the visible events of each lane row; events closer than a pixel to the
 * previous one of their row are folded into it, and rectangles are filled
 * one colour at a time, so 100k visible events cost one path per colour,
 * not one DOM node (or one fill) each.
 */
import type { SideModel, TimelineModel } from "../model/timelineLayout";
import { lastStartingBy, ROW_H } from "../model/timelineLayout";
import { bucketColor, deltaBucket, sideScale, STEPS, tickLabel, ticks, xOf, type Viewport } from "../model/timelineViewport";

export const AXIS_H = 24;
export const GUTTER = 190;
export const SIDE_GAP = 14;

// Text is the costliest thing to raster: names only on wide events, and not too many.
const LABEL_MIN_PX = 60;
const MAX_LABELS = 150;
const MIXED_RUN_PX = 3;
const UNMATCHED = 2 * STEPS + 1;
const MERGED = 2 * STEPS + 2;
const BUCKETS = 2 * STEPS + 3;

export interface Mark {
  side: "baseline" | "experimental";
  index: number;
}

export interface DrawOptions {
  view: Viewport;
  axisUs: number;
  stretch: boolean;
  widthPx: number;
  selected: Mark | null;
  hover: Mark | null;
  /** The band of the canvas on screen (px from its top): rows outside it are not drawn (redraw on scroll). */
  visibleTop?: number;
  visibleBottom?: number;
}

export interface DrawStats {
  visited: number;
  rects: number;
  ms: number;
}

/** Top of each side inside the canvas, px. */
export function sideTops(model: TimelineModel): { baseline: number; experimental: number; height: number } {
  const b = model.baseline?.heightPx ?? 40;
  const e = model.experimental?.heightPx ?? 40;
  return { baseline: AXIS_H, experimental: AXIS_H + b + SIDE_GAP, height: AXIS_H + b + SIDE_GAP + e };
}

let hatch: CanvasPattern | null = null;

function unmatchedFill(ctx: CanvasRenderingContext2D): CanvasPattern | string {
  if (hatch) return hatch;
  const tile = document.createElement("canvas");
  tile.width = tile.height = 6;
  const t = tile.getContext("2d");
  if (!t) return "#b0bec5";
  t.fillStyle = "#eceff1";
  t.fillRect(0, 0, 6, 6);
  t.strokeStyle = "#90a4ae";
  t.lineWidth = 1.5;
  t.beginPath();
  t.moveTo(0, 6);
  t.lineTo(6, 0);
  t.stroke();
  hatch = ctx.createPattern(tile, "repeat");
  return hatch ?? "#b0bec5";
}

export function drawTimeline(ctx: CanvasRenderingContext2D, model: TimelineModel, o: DrawOptions): DrawStats {
  const t0 = performance.now();
  const tops = sideTops(model);
  const plotW = Math.max(o.widthPx - GUTTER, 10);
  // Raster work is per pixel: only the band on screen is painted.
  const bandTop = Math.max(0, Math.floor(o.visibleTop ?? 0));
  const bandBottom = Math.min(tops.height, Math.ceil(o.visibleBottom ?? tops.height));
  ctx.save();
  ctx.beginPath();
  ctx.rect(0, bandTop, o.widthPx, Math.max(bandBottom - bandTop, 0));
  ctx.clip();
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, bandTop, o.widthPx, bandBottom - bandTop);
  ctx.font = "11px system-ui, sans-serif";
  ctx.textBaseline = "middle";
  const stats = { visited: 0, rects: 0, ms: 0 };
  drawAxis(ctx, o, plotW, tops.height);
  for (const which of ["baseline", "experimental"] as const) {
    const side = model[which];
    const top = tops[which];
    ctx.fillStyle = which === "baseline" ? "#1976d2" : "#f57c00";
    ctx.font = "bold 12px system-ui, sans-serif";
    const title = side ? `${which === "baseline" ? "Baseline" : "Experimental"} — ${side.pieceName}` : `${which === "baseline" ? "Baseline" : "Experimental"}: no such piece in this run`;
    ctx.fillText(title, 4, top + 10);
    ctx.font = "11px system-ui, sans-serif";
    if (!side) continue;
    const other = model[which === "baseline" ? "experimental" : "baseline"];
    const marks = [o.hover, o.selected].map((mark) => ({ index: markedIn(mark, side, other), strong: mark === o.selected }));
    drawSide(ctx, side, top, o, plotW, stats, marks, bandTop - top, bandBottom - top);
  }
  ctx.restore();
  stats.ms = performance.now() - t0;
  return stats;
}

function drawAxis(ctx: CanvasRenderingContext2D, o: DrawOptions, plotW: number, height: number): void {
  const { values, step } = ticks(o.view.t0, o.view.t1, Math.max(2, Math.floor(plotW / 110)));
  ctx.strokeStyle = "#e0e0e0";
  ctx.fillStyle = "#616161";
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (const v of values) {
    const x = Math.round(xOf(v, 1, o.view, GUTTER, plotW)) + 0.5;
    ctx.moveTo(x, AXIS_H - 4);
    ctx.lineTo(x, height);
  }
  ctx.stroke();
  for (const v of values) {
    const x = xOf(v, 1, o.view, GUTTER, plotW);
    const label = o.stretch ? `${((v / o.axisUs) * 100).toFixed(step / o.axisUs < 0.01 ? 1 : 0)} %` : tickLabel(v, step);
    ctx.fillText(label, x + 3, AXIS_H / 2);
  }
}

/** The event of `side` a mark points at: itself, or the match of the other side's marked event; -1 if none drawn. */
export function markedIn(mark: Mark | null, side: SideModel, other: SideModel | null): number {
  if (!mark) return -1;
  if (mark.side === side.side) return mark.index;
  const id = other?.match[mark.index];
  return id !== undefined && id >= 0 ? (side.byMatch.get(id) ?? -1) : -1;
}

function drawSide(
  ctx: CanvasRenderingContext2D,
  m: SideModel,
  top: number,
  o: DrawOptions,
  plotW: number,
  stats: DrawStats,
  marks: { index: number; strong: boolean }[],
  bandTop: number,
  bandBottom: number,
): void {
  const scale = sideScale(m, o.axisUs, o.stretch);
  const left = GUTTER;
  const right = GUTTER + plotW;
  const tStart = o.view.t0 / scale;
  const tEnd = o.view.t1 / scale;
  // Lane backgrounds and labels.
  m.lanes.forEach((lane, i) => {
    ctx.fillStyle = i % 2 ? "#fafafa" : "#f3f6f9";
    ctx.fillRect(0, top + lane.top, right, lane.depths * ROW_H);
    ctx.fillStyle = lane.device ? "#6a1b9a" : "#37474f";
    ctx.fillText(clip(lane.label, GUTTER - 8), 4, top + lane.top + ROW_H / 2);
  });
  const rects: number[][] = Array.from({ length: BUCKETS }, () => []);
  const labels: [number, number, number, string][] = [];
  const px = (t: number) => xOf(t, scale, o.view, left, plotW);
  for (const row of m.rows) {
    const lane = m.lanes[row.lane]!;
    const rowTop = lane.top + row.depth * ROW_H;
    if (rowTop + ROW_H < bandTop || rowTop > bandBottom) continue;
    const y = top + rowTop + 1;
    // Merged aggregates first: events drawn over them stay visible.
    emitRow(row.merged, m.merged.ts, m.merged.dur, () => MERGED, tStart, tEnd, px, left, right, y, rects[MERGED]!, null, stats, rects);
    emitRow(row.events, m.ts, m.dur, (i) => bucketOf(m, i), tStart, tEnd, px, left, right, y, null, labels, stats, rects, m);
  }
  ctx.save();
  ctx.beginPath();
  ctx.rect(left, top, plotW, m.heightPx);
  ctx.clip();
  for (let b = 0; b < BUCKETS; b++) {
    const r = rects[b]!;
    if (r.length === 0) continue;
    ctx.fillStyle = b === UNMATCHED ? unmatchedFill(ctx) : b === MERGED ? "rgba(120,144,156,0.35)" : bucketColor(b - STEPS);
    ctx.beginPath();
    for (let k = 0; k < r.length; k += 3) ctx.rect(r[k]!, r[k + 1]!, r[k + 2]!, ROW_H - 2);
    ctx.fill();
    stats.rects += r.length / 3;
  }
  ctx.fillStyle = "#102027";
  for (const [x, yy, w, name] of labels) ctx.fillText(clip(name, w - 6), Math.max(x, left) + 3, yy + ROW_H / 2 - 1);
  for (const { index: i, strong } of marks) {
    if (i < 0 || i >= m.n) continue;
    const row = m.rows[m.rowOf[m.lane[i]!]![m.depth[i]!]!]!;
    const lane = m.lanes[row.lane]!;
    const x0 = px(m.ts[i]!);
    const w = Math.max(px(m.ts[i]! + m.dur[i]!) - x0, 2);
    ctx.strokeStyle = strong ? "#000" : "#455a64";
    ctx.lineWidth = strong ? 2 : 1;
    ctx.strokeRect(x0, top + lane.top + row.depth * ROW_H + 1, w, ROW_H - 2);
  }
  ctx.restore();
}

function bucketOf(m: SideModel, i: number): number {
  if (m.match[i]! < 0) return UNMATCHED;
  const dur = m.dur[i]!;
  const d = m.delta[i]!;
  const b = m.side === "baseline" ? dur : dur - d;
  const e = m.side === "baseline" ? dur + d : dur;
  return deltaBucket(d, b, e) + STEPS;
}

function emitRow(
  idx: Int32Array,
  ts: Float64Array,
  dur: Float64Array,
  bucket: (i: number) => number,
  tStart: number,
  tEnd: number,
  px: (t: number) => number,
  left: number,
  right: number,
  y: number,
  only: number[] | null,
  labels: [number, number, number, string][] | null,
  stats: DrawStats,
  rects: number[][],
  m?: SideModel,
): void {
  let j = Math.max(0, lastStartingBy(idx, ts, tStart));
  let pendX0 = 0;
  let pendX1 = -Infinity;
  let pendB = -1;
  let pendDur = 0;
  const flush = () => {
    if (pendB < 0) return;
    const w = pendX1 - pendX0;
    (only ?? rects[pendB]!).push(pendX0, y, w > 3 ? w - 1 : Math.max(w, 1));
  };
  for (; j < idx.length; j++) {
    const i = idx[j]!;
    const s = ts[i]!;
    if (s > tEnd) break;
    const e = s + dur[i]!;
    if (e < tStart) continue;
    stats.visited++;
    const x0 = Math.max(px(s), left - 1);
    const x1 = Math.min(Math.max(px(e), x0 + 1), right + 1);
    const b = bucket(i);
    const d = dur[i]!;
    // Touching events of one colour become one rectangle; sub-pixel events of
    // other colours join it for a few pixels at most, coloured by the longest.
    if (pendB >= 0 && x0 <= pendX1 + 0.5 && (b === pendB || (x1 - x0 < 2 && pendX1 - pendX0 < MIXED_RUN_PX))) {
      if (x1 > pendX1) pendX1 = x1;
      if (d > pendDur) {
        pendDur = d;
        pendB = b;
      }
      continue;
    }
    flush();
    pendX0 = x0;
    pendX1 = x1;
    pendB = b;
    pendDur = d;
    if (labels && m && x1 - x0 > LABEL_MIN_PX && labels.length < MAX_LABELS) labels.push([x0, y, x1 - x0, m.names[m.name[i]!] ?? ""]);
  }
  flush();
}

/** Text cut to about `px` pixels (11 px font: ~6 px a character). */
function clip(text: string, px: number): string {
  const n = Math.floor(px / 6);
  if (n <= 1) return "";
  return text.length <= n ? text : `${text.slice(0, n - 1)}…`;
}
