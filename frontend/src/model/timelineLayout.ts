/**
 * The Timeline view's data: a `diff/timeline` side decoded into typed
 * arrays, laid out in lanes (one per thread or stream, one row per nesting
 * depth), and hit-tested. Pure: no DOM, no canvas.
 */
import type { DiffTimelineResponse, TimelineKind, TimelineSide } from "../api";

export const ROW_H = 16;
export const LANE_GAP = 8;
/** Space for a side's title above its lanes. */
export const SIDE_HEAD = 20;

export type SideName = "baseline" | "experimental";

export interface LaneBox {
  label: string;
  device: boolean;
  /** Top of the lane inside its side, px. */
  top: number;
  depths: number;
}

/** Events (or merged aggregates) of one lane row, as indices sorted by start. */
export interface RowIndex {
  lane: number;
  depth: number;
  events: Int32Array;
  merged: Int32Array;
}

export interface SideModel {
  side: SideName;
  pieceName: string;
  /** The piece's host window (µs, absolute) and the end of its last event. */
  startUs: number;
  lengthUs: number;
  extentUs: number;
  lanes: LaneBox[];
  heightPx: number;
  names: string[];
  kinds: readonly TimelineKind[];
  n: number;
  ts: Float64Array;
  dur: Float64Array;
  lane: Int32Array;
  depth: Int32Array;
  name: Int32Array;
  kind: Uint8Array;
  /** -1: no match. */
  match: Int32Array;
  /** NaN: no match. */
  delta: Float64Array;
  merged: { n: number; ts: Float64Array; dur: Float64Array; lane: Int32Array; depth: Int32Array; count: Int32Array; mergedUs: Float64Array };
  mergedCount: number;
  eventsTotal: number;
  minDrawUs: number;
  rows: RowIndex[];
  /** rows[rowOf[lane][depth]] */
  rowOf: number[][];
  byMatch: Map<number, number>;
}

function rowsOf(lanes: number, laneDepths: number[], lane: Int32Array, depth: Int32Array, ts: Float64Array): number[][][] {
  const out: number[][][] = [];
  for (let l = 0; l < lanes; l++) out.push(Array.from({ length: laneDepths[l] ?? 1 }, () => []));
  for (let i = 0; i < lane.length; i++) out[lane[i]!]![depth[i]!]!.push(i);
  for (const l of out) for (const r of l) r.sort((a, b) => ts[a]! - ts[b]!);
  return out;
}

export function decodeSide(side: TimelineSide, which: SideName, kinds: readonly TimelineKind[]): SideModel {
  const ev = side.events;
  const n = ev.ts_us.length;
  const ts = Float64Array.from(ev.ts_us);
  const lane = Int32Array.from(ev.lane);
  const depth = Int32Array.from(ev.depth);
  const m = side.merged;
  const mTs = Float64Array.from(m.ts_us);
  const mLane = Int32Array.from(m.lane);
  const mDepth = Int32Array.from(m.depth);
  const laneDepths = side.lanes.map(() => 1);
  for (let i = 0; i < n; i++) laneDepths[lane[i]!] = Math.max(laneDepths[lane[i]!]!, depth[i]! + 1);
  for (let i = 0; i < mLane.length; i++) laneDepths[mLane[i]!] = Math.max(laneDepths[mLane[i]!]!, mDepth[i]! + 1);
  let top = SIDE_HEAD;
  const lanes: LaneBox[] = side.lanes.map((l, i) => {
    const box = { label: l.label, device: l.device, top, depths: laneDepths[i]! };
    top += box.depths * ROW_H + LANE_GAP;
    return box;
  });
  const evRows = rowsOf(lanes.length, laneDepths, lane, depth, ts);
  const mRows = rowsOf(lanes.length, laneDepths, mLane, mDepth, mTs);
  const rows: RowIndex[] = [];
  const rowOf: number[][] = [];
  for (let l = 0; l < lanes.length; l++) {
    rowOf.push([]);
    for (let d = 0; d < laneDepths[l]!; d++) {
      rowOf[l]!.push(rows.length);
      rows.push({ lane: l, depth: d, events: Int32Array.from(evRows[l]![d]!), merged: Int32Array.from(mRows[l]![d]!) });
    }
  }
  const match = Int32Array.from(ev.match, (x) => (x === null ? -1 : x));
  const byMatch = new Map<number, number>();
  for (let i = 0; i < n; i++) if (match[i]! >= 0) byMatch.set(match[i]!, i);
  return {
    side: which,
    pieceName: side.piece_name,
    startUs: side.start_us,
    lengthUs: Math.max(side.end_us - side.start_us, 0),
    extentUs: Math.max(side.events_end_us - side.start_us, side.end_us - side.start_us, 0),
    lanes,
    heightPx: top,
    names: side.names,
    kinds,
    n,
    ts,
    dur: Float64Array.from(ev.dur_us),
    lane,
    depth,
    name: Int32Array.from(ev.name),
    kind: Uint8Array.from(ev.kind),
    match,
    delta: Float64Array.from(ev.delta_us, (x) => (x === null ? NaN : x)),
    merged: { n: mTs.length, ts: mTs, dur: Float64Array.from(m.dur_us), lane: mLane, depth: mDepth, count: Int32Array.from(m.count), mergedUs: Float64Array.from(m.merged_us) },
    mergedCount: side.merged_count,
    eventsTotal: side.events_total,
    minDrawUs: side.min_draw_us,
    rows,
    rowOf,
    byMatch,
  };
}

export interface TimelineModel {
  resp: DiffTimelineResponse;
  baseline: SideModel | null;
  experimental: SideModel | null;
}

export function decodeTimeline(resp: DiffTimelineResponse): TimelineModel {
  return {
    resp,
    baseline: resp.baseline_side ? decodeSide(resp.baseline_side, "baseline", resp.kinds) : null,
    experimental: resp.experimental_side ? decodeSide(resp.experimental_side, "experimental", resp.kinds) : null,
  };
}

/** Index of the last entry of `idx` (sorted by `ts`) starting at or before `t`, -1 if none. */
export function lastStartingBy(idx: Int32Array, ts: Float64Array, t: number): number {
  let lo = 0;
  let hi = idx.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ts[idx[mid]!]! <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

export type Hit = { type: "event"; index: number } | { type: "merged"; index: number } | null;

/**
 * What is under (t, y) in one side: `t` in the side's own µs (after its
 * start), `y` px inside the side, `tolUs` how far off an event may be (a
 * few pixels, so a one-pixel event can be hovered).
 */
export function hitTest(m: SideModel, t: number, y: number, tolUs: number): Hit {
  const laneIdx = m.lanes.findIndex((l) => y >= l.top && y < l.top + l.depths * ROW_H);
  if (laneIdx < 0) return null;
  const lane = m.lanes[laneIdx]!;
  const row = m.rows[m.rowOf[laneIdx]![Math.floor((y - lane.top) / ROW_H)]!];
  if (!row) return null;
  const pick = (idx: Int32Array, ts: Float64Array, dur: Float64Array): number => {
    let best = -1;
    let bestGap = Infinity;
    const k = lastStartingBy(idx, ts, t + tolUs);
    for (let j = k; j >= 0 && j >= k - 3; j--) {
      const i = idx[j]!;
      const s = ts[i]!;
      const e = s + dur[i]!;
      const gap = t < s ? s - t : t > e ? t - e : 0;
      if (gap <= tolUs && gap < bestGap) {
        best = i;
        bestGap = gap;
      }
    }
    return best;
  };
  const ev = pick(row.events, m.ts, m.dur);
  if (ev >= 0) return { type: "event", index: ev };
  const mg = pick(row.merged, m.merged.ts, m.merged.dur);
  return mg >= 0 ? { type: "merged", index: mg } : null;
}

/** The first event named `name` (of `kinds` when given) by start, -1 if none. */
export function firstNamed(m: SideModel, name: string, kinds: readonly TimelineKind[] = []): number {
  const id = m.names.indexOf(name);
  if (id < 0) return -1;
  let best = -1;
  for (let i = 0; i < m.n; i++) {
    if (m.name[i] !== id || (kinds.length && !kinds.includes(m.kinds[m.kind[i]!]!))) continue;
    if (m.ts[i]! >= 0 && (best < 0 || m.ts[i]! < m.ts[best]!)) best = i;
  }
  return best;
}

/** Both sides' numbers of an event, for the tooltip: its side's, and the matched one's (from the delta when that one is not drawn). */
export function eventNumbers(m: SideModel, i: number): { name: string; kind: TimelineKind; startUs: number; baselineUs: number | null; experimentalUs: number | null; deltaUs: number | null; matched: boolean } {
  const dur = m.dur[i]!;
  const d = m.delta[i]!;
  const matched = m.match[i]! >= 0;
  const other = matched ? (m.side === "baseline" ? dur + d : dur - d) : null;
  return {
    name: m.names[m.name[i]!] ?? "",
    kind: m.kinds[m.kind[i]!]!,
    startUs: m.ts[i]!,
    baselineUs: m.side === "baseline" ? dur : other,
    experimentalUs: m.side === "experimental" ? dur : other,
    deltaUs: matched ? d : null,
    matched,
  };
}

/** What identifies an event across answers for one piece (a window's answer has other indices). */
export interface EventKey {
  side: SideName;
  ts: number;
  dur: number;
  name: string;
}

export function eventKey(m: SideModel, i: number): EventKey {
  return { side: m.side, ts: m.ts[i]!, dur: m.dur[i]!, name: m.names[m.name[i]!] ?? "" };
}

/** The index of the keyed event in `m` (same start, length and name), -1 if this answer does not draw it. */
export function findEvent(m: SideModel, key: EventKey): number {
  if (m.side !== key.side) return -1;
  for (let j = 0; j < m.n; j++)
    if (Math.abs(m.ts[j]! - key.ts) < 1e-3 && Math.abs(m.dur[j]! - key.dur) < 1e-3 && m.names[m.name[j]!] === key.name) return j;
  return -1;
}
