/**
 * Pure data shaping for the charts (kept out of the components so the
 * numbers drawn are easy to check): stacking, shares, labels, axis ranges.
 */
import { BREAKDOWN_CATEGORIES, type BreakdownCategory, type DiffPiece, type StepInfo } from "../api";
import { BREAKDOWN_LABELS } from "../generated/tableRules";

/** Each category's label, as the overview's rows name it (generated from diff/overview.py). */
export const CATEGORY_LABELS: Readonly<Record<BreakdownCategory, string>> = BREAKDOWN_LABELS;

export const CATEGORY_COLORS: Record<BreakdownCategory, string> = {
  kernel: "#3f51b5",
  memcpy: "#009688",
  memset: "#8bc34a",
  communication: "#9c27b0",
  runtime: "#ff7043",
  data_loading: "#fbc02d",
  cpu_exec: "#78909c",
  other: "#cfd8dc",
};

/** Categories with any time in any of the given step lists (empty ones would only clutter the legend). */
export function presentCategories(...stepLists: (readonly StepInfo[])[]): BreakdownCategory[] {
  return BREAKDOWN_CATEGORIES.filter((c) => stepLists.some((steps) => steps.some((s) => s.breakdown_us[c] > 0)));
}

/**
 * Cumulative stacks, top of the stack first: uPlot paints series in order,
 * so drawing the tallest (sum of all parts) first and each shorter partial
 * sum over it gives a stacked bar chart without a stacking plugin.
 * `valueAt(part, i)` is bar i's height of `part`; returns one array per
 * part in reversed order, i.e. result[0] is the total and belongs to the
 * last part.
 */
export function stackParts<P>(count: number, parts: readonly P[], valueAt: (part: P, i: number) => number): { part: P; values: number[] }[] {
  const out: { part: P; values: number[] }[] = [];
  const running = new Array<number>(count).fill(0);
  for (const part of parts) {
    for (let i = 0; i < count; i++) running[i] = (running[i] ?? 0) + valueAt(part, i);
    out.push({ part, values: running.slice() });
  }
  return out.reverse();
}

/** Per-step breakdown stacks in ms (see stackParts), one per category in `cats` reversed order. */
export function stackedSeries(steps: readonly StepInfo[], cats: BreakdownCategory[]): { cat: BreakdownCategory; values: number[] }[] {
  return stackParts(steps.length, cats, (cat, i) => (steps[i]?.breakdown_us[cat] ?? 0) / 1000).map((s) => ({ cat: s.part, values: s.values }));
}

/** One y maximum (ms, 8 % headroom) for charts that must compare by eye; never 0. */
export function sharedYMaxMs(valuesUs: Iterable<number>): number {
  let max = 0;
  for (const v of valuesUs) if (Number.isFinite(v) && v > max) max = v;
  return Math.max(1e-3, max / 1000) * 1.08;
}

/** Share of a step's time in one category, in % (null for a zero-length step). */
export function categorySharePct(step: StepInfo, cat: BreakdownCategory): number | null {
  return step.duration_us ? (100 * step.breakdown_us[cat]) / step.duration_us : null;
}

/**
 * Tick labels of an axis over integer positions: `labelAt(i)` at integers,
 * nothing between them (uPlot may place ticks at fractions when zoomed).
 */
export function integerTickLabels(splits: readonly number[], labelAt: (i: number) => string): string[] {
  return splits.map((s) => (Number.isInteger(s) ? labelAt(s) : ""));
}

/** The time fields of a piece for the chosen clock; host and device are never mixed. */
export function pieceTimes(p: Pick<DiffPiece, "baseline_host_us" | "experimental_host_us" | "delta_host_us" | "delta_host_pct" | "baseline_device_us" | "experimental_device_us" | "delta_device_us" | "delta_device_pct">, time: "host" | "device"): { baseline: number; experimental: number; delta: number; pct: number | null } {
  return time === "host"
    ? { baseline: p.baseline_host_us, experimental: p.experimental_host_us, delta: p.delta_host_us, pct: p.delta_host_pct }
    : { baseline: p.baseline_device_us, experimental: p.experimental_device_us, delta: p.delta_device_us, pct: p.delta_device_pct };
}

/** True for the time not attributed to any module (an "unknown" piece), whatever its match status. */
export function isUnknownPiece(p: DiffPiece): boolean {
  return p.kind === "unknown";
}

/** A short axis label: instance-free class name for modules, the piece's own name otherwise. */
export function shortPieceLabel(p: DiffPiece, max = 16): string {
  let name = p.name.replace(/^nn\.Module: /, "");
  if (p.kind === "data_loading") name = "Data loading";
  else if (p.kind === "unknown") name = "unknown";
  else if (p.kind === "optimizer") name = name.replace(/^Optimizer\.(\w+)#.*$/, "Optimizer.$1");
  const mark = p.status === "baseline_only" ? "−" : p.status === "experimental_only" ? "+" : p.status === "inside_compiled" ? "·" : "";
  const s = mark + name;
  return s.length > max ? s.slice(0, max - 1) + "…" : s;
}

/**
 * Which bars get an x label: every one up to `maxLabels`; beyond that an
 * even stride, always including `mustInclude` (the tallest bars) and
 * dropping stride labels too close to those so they do not overlap.
 */
export function labelIndexes(n: number, maxLabels: number, mustInclude: readonly number[] = []): number[] {
  if (n <= 0) return [];
  if (n <= maxLabels) return Array.from({ length: n }, (_, i) => i);
  const stride = Math.ceil(n / Math.max(1, maxLabels));
  const must = [...new Set(mustInclude.filter((i) => Number.isInteger(i) && i >= 0 && i < n))];
  const out = new Set(must);
  for (let i = 0; i < n; i += stride) {
    if (must.every((m) => Math.abs(m - i) >= stride / 2 || m === i)) out.add(i);
  }
  return [...out].sort((a, b) => a - b);
}

/** Index of the largest |value| (-1 for an empty list). */
export function argMaxAbs(values: readonly number[]): number {
  let best = -1;
  let bestV = -1;
  values.forEach((v, i) => {
    const a = Math.abs(v);
    if (Number.isFinite(a) && a > bestV) {
      bestV = a;
      best = i;
    }
  });
  return best;
}

/**
 * The number a step is known by: N of `ProfilerStep#N`, `all` for the
 * whole-trace step of a run without step annotations, else the name.
 */
export function stepLabel(name: string | null | undefined): string {
  if (!name) return "";
  const m = /ProfilerStep#(\d+)/.exec(name);
  return m ? (m[1] ?? name) : name;
}

/** One label for a step compared across two runs: "1011", or "2 / 5" when the runs number it differently. */
export function pairedStepLabel(baseline: string | null | undefined, experimental: string | null | undefined): string {
  const b = stepLabel(baseline);
  const e = stepLabel(experimental);
  if (!b) return e;
  if (!e || b === e) return b;
  return `${b} / ${e}`;
}

/**
 * Ranges for two y scales (per-piece Δ and accumulated Δ) that put zero at
 * the same height, so "above the line = slower" reads the same for bars and
 * line. Each range is padded by 8 %.
 */
export function zeroAlignedRanges(a: readonly number[], b: readonly number[]): [[number, number], [number, number]] {
  const ext = (v: readonly number[]) => ({ neg: Math.max(0, ...v.map((x) => -x)), pos: Math.max(0, ...v) });
  const ea = ext(a);
  const eb = ext(b);
  // Share of the height below zero: the mean of what each series needs,
  // kept off 0 and 1 when either series has values on that side (otherwise
  // those values would fall outside the plot).
  const needs = [ea, eb].filter((e) => e.neg + e.pos > 0).map((e) => e.neg / (e.neg + e.pos));
  let f = needs.length ? needs.reduce((x, y) => x + y, 0) / needs.length : 0;
  if (f === 0 && (ea.neg > 0 || eb.neg > 0)) f = 0.1;
  if (f === 1 && (ea.pos > 0 || eb.pos > 0)) f = 0.9;
  const range = (e: { neg: number; pos: number }): [number, number] => {
    const total = Math.max(f < 1 ? e.pos / (1 - f) : 0, f > 0 ? e.neg / f : 0) * 1.08 || 1e-3;
    return [-f * total, (1 - f) * total];
  };
  return [range(ea), range(eb)];
}
