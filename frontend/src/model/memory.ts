/**
 * The Memory view's pure parts: both runs' curves on one x axis (µs from
 * each run's peak step start), and the spans of a row's live blocks.
 */
import type { components } from "../generated/api";

type Schemas = components["schemas"];

export type DiffMemoryResponse = Schemas["DiffMemoryResponse"];
export type MemoryDeviceDiff = Schemas["MemoryDeviceDiff"];
export type MemoryRow = Schemas["MemoryRow"];
export type MemoryCurve = Schemas["MemoryCurve"];

/** Level of a step function (value from each sample on) at each of `xs`. */
function holdAt(t: readonly number[], v: readonly number[], xs: readonly number[]): (number | null)[] {
  const out: (number | null)[] = [];
  let j = -1;
  for (const x of xs) {
    while (j + 1 < t.length && (t[j + 1] ?? Infinity) <= x) j++;
    out.push(j >= 0 ? (v[j] ?? null) : null);
  }
  return out;
}

/**
 * [x (ms), baseline allocated (bytes), experimental allocated (bytes)] on the
 * union of both runs' sample times; each curve holds its level until its
 * next sample and stops at its own step's end.
 */
export function alignedCurves(b: MemoryCurve | null, e: MemoryCurve | null): [number[], (number | null)[], (number | null)[]] {
  const xs = Array.from(new Set([...(b?.t_us ?? []), ...(e?.t_us ?? [])])).sort((x, y) => x - y);
  const side = (c: MemoryCurve | null) =>
    c ? holdAt(c.t_us, c.allocated_bytes, xs).map((v, i) => ((xs[i] ?? Infinity) <= c.duration_us ? v : null)) : xs.map(() => null);
  return [xs.map((x) => x / 1000), side(b), side(e)];
}

/** The [start, end] ms spans of a row's blocks on one side, clipped to [0, duration]; never-freed blocks run to the end. */
export function lifetimeSpans(lifetimes: readonly (readonly (number | null)[])[], duration_us: number): [number, number][] {
  const out: [number, number][] = [];
  for (const [s, t] of lifetimes) {
    const start = Math.max(0, s ?? 0);
    const end = Math.min(duration_us, t ?? duration_us);
    if (end >= start) out.push([start / 1000, end / 1000]);
  }
  return out;
}

/** The device a view opens on: the one the sentence is about, else the first. */
export function shownDevice(r: DiffMemoryResponse, wanted: string): MemoryDeviceDiff | null {
  return r.devices.find((d) => d.device === wanted) ?? r.devices.find((d) => d.device === r.device) ?? r.devices[0] ?? null;
}

/** What a row is called in the table: the key with its phase. */
export function rowLabel(row: MemoryRow): string {
  return row.phase && !row.key.includes(row.phase) ? `${row.key} · ${row.phase}` : row.key;
}
