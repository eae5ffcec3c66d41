/** The Memory tab's snapshot part (diff/memory's `snapshot`): which device and rows to show. */
import type { components } from "../generated/api";

type Schemas = components["schemas"];
export type SnapshotDiff = Schemas["SnapshotDiff"];
export type SnapshotDeviceDiff = Schemas["SnapshotDeviceDiff"];
export type SnapshotRow = Schemas["SnapshotRow"];
export type SnapshotBy = "category" | "frame" | "module";

export const SNAPSHOT_BY: { id: SnapshotBy; label: string }[] = [
  { id: "category", label: "By category" },
  { id: "frame", label: "By Python frame" },
  { id: "module", label: "By module" },
];

/** The first device both runs have, else the first. */
export function snapshotDevice(s: SnapshotDiff): SnapshotDeviceDiff | null {
  return s.devices.find((d) => d.baseline && d.experimental) ?? s.devices[0] ?? null;
}

export function snapshotRows(d: SnapshotDeviceDiff, by: SnapshotBy): SnapshotRow[] {
  return by === "category" ? d.by_category : by === "frame" ? d.by_frame : d.by_module;
}

export type SnapshotSide = Schemas["SnapshotSide"];
export type SnapshotCurve = Schemas["SnapshotCurve"];
export type SnapshotSegment = Schemas["SnapshotSegment"];
export type SnapshotRunId = "baseline" | "experimental";

/** Level of a step function (each sample's value until the next) at each of `xs`; null before the first and after the last. */
function holdAt(t: readonly number[], v: readonly number[], xs: readonly number[]): (number | null)[] {
  const out: (number | null)[] = [];
  const last = t.length ? (t[t.length - 1] ?? -Infinity) : -Infinity;
  let j = -1;
  for (const x of xs) {
    while (j + 1 < t.length && (t[j + 1] ?? Infinity) <= x) j++;
    out.push(j >= 0 && x <= last ? (v[j] ?? null) : null);
  }
  return out;
}

/** A run's highest allocated point on its curve: [ms, bytes], null without samples. */
export function curvePeak(c: SnapshotCurve | null | undefined): [number, number] | null {
  if (!c || c.allocated_bytes.length === 0) return null;
  let best = 0;
  c.allocated_bytes.forEach((v, i) => {
    if (v > (c.allocated_bytes[best] ?? -Infinity)) best = i;
  });
  return [c.t_ms[best] ?? 0, c.allocated_bytes[best] ?? 0];
}

export interface SnapshotMark {
  run: SnapshotRunId;
  step: string;
  t_ms: number;
}

export interface SnapshotChart {
  /** [ms, baseline allocated, baseline reserved, experimental allocated, experimental reserved] on the union of both runs' times. */
  data: [number[], (number | null)[], (number | null)[], (number | null)[], (number | null)[]];
  peaks: { run: SnapshotRunId; t_ms: number; bytes: number }[];
  steps: SnapshotMark[];
}

/**
 * Both runs' allocated and reserved bytes on one x axis (ms from each history's first action):
 * each curve holds its level until its next sample and stops at its own last one.
 */
export function snapshotChart(d: SnapshotDeviceDiff): SnapshotChart {
  const sides: [SnapshotRunId, SnapshotSide | null][] = [
    ["baseline", d.baseline],
    ["experimental", d.experimental],
  ];
  const xs = Array.from(new Set(sides.flatMap(([, s]) => s?.curve.t_ms ?? []))).sort((a, b) => a - b);
  const line = (s: SnapshotSide | null, key: "allocated_bytes" | "reserved_bytes") =>
    s ? holdAt(s.curve.t_ms, s.curve[key], xs) : xs.map(() => null);
  const peaks: SnapshotChart["peaks"] = [];
  const steps: SnapshotMark[] = [];
  for (const [run, s] of sides) {
    const p = curvePeak(s?.curve);
    if (p) peaks.push({ run, t_ms: p[0], bytes: p[1] });
    for (const m of s?.curve.steps ?? []) steps.push({ run, step: m.step, t_ms: m.t_ms });
  }
  return {
    data: [xs, line(d.baseline, "allocated_bytes"), line(d.baseline, "reserved_bytes"), line(d.experimental, "allocated_bytes"), line(d.experimental, "reserved_bytes")],
    peaks,
    steps,
  };
}

/** "ProfilerStep#12" -> "#12" (the chart's mark labels); other names as they are. */
export function stepMarkLabel(step: string): string {
  const m = /^ProfilerStep(#\d+)$/.exec(step);
  return m?.[1] ?? step;
}

export interface SegmentRow {
  run: SnapshotRunId;
  address: string;
  total_bytes: number;
  allocated_bytes: number;
  /** Reserved in the segment but not allocated. */
  free_bytes: number;
  /** allocated / total, 0..1; null for an empty segment. */
  used: number | null;
  stream: number;
  segment_type: string;
  blocks: number;
}

/** Each run's largest segments (as the route orders them), at most `limit` a run, baseline first. */
export function segmentRows(d: SnapshotDeviceDiff, limit = 8): SegmentRow[] {
  const out: SegmentRow[] = [];
  for (const [run, s] of [["baseline", d.baseline], ["experimental", d.experimental]] as const) {
    for (const g of (s?.largest_segments ?? []).slice(0, limit)) {
      out.push({
        run,
        address: `0x${g.address.toString(16)}`,
        total_bytes: g.total_bytes,
        allocated_bytes: g.allocated_bytes,
        free_bytes: Math.max(0, g.total_bytes - g.allocated_bytes),
        used: g.total_bytes > 0 ? g.allocated_bytes / g.total_bytes : null,
        stream: g.stream,
        segment_type: g.segment_type,
        blocks: g.blocks,
      });
    }
  }
  return out;
}

/**
 * A series with the inner points of each flat run set to null (drawn with spanGaps: the same line,
 * a few segments): chromium's canvas leaves a dashed line of thousands of tiny segments undrawn.
 */
export function thinFlat(v: readonly (number | null)[]): (number | null)[] {
  return v.map((x, i) => (x !== null && i > 0 && i < v.length - 1 && v[i - 1] === x && v[i + 1] === x ? null : x));
}
