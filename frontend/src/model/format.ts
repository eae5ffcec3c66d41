/**
 * Number formatting shared by tables, charts and CSV. Pure functions.
 *
 * Durations arrive in µs (the unit of Chrome traces); the UI shows ms with
 * three decimals so a 1 µs operator stays visible and every figure in the
 * plugin uses one unit.
 */

const msFmt = new Intl.NumberFormat("en-US", { minimumFractionDigits: 3, maximumFractionDigits: 3 });
const intFmt = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const pctFmt = new Intl.NumberFormat("en-US", { minimumFractionDigits: 1, maximumFractionDigits: 1 });
const oneFmt = new Intl.NumberFormat("en-US", { maximumFractionDigits: 2 });

export const EM_DASH = "—";

export function usToMs(us: number): number {
  return us / 1000;
}

/** 1234.5 µs -> "1.235" (ms, unit in the column header). */
export function formatMs(us: number | null | undefined): string {
  if (us === null || us === undefined || !Number.isFinite(us)) return EM_DASH;
  return msFmt.format(us / 1000);
}

export function formatMsWithUnit(us: number | null | undefined): string {
  const s = formatMs(us);
  return s === EM_DASH ? s : `${s} ms`;
}

export function formatInt(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return EM_DASH;
  return intFmt.format(n);
}

/** Signed: "+1.200", "−0.300", "0.000" (a real minus sign reads better in tables). */
export function formatSignedMs(us: number | null | undefined): string {
  if (us === null || us === undefined || !Number.isFinite(us)) return EM_DASH;
  const s = msFmt.format(Math.abs(us) / 1000);
  if (s === msFmt.format(0)) return s;
  return (us > 0 ? "+" : "−") + s;
}

/** "+1.200 ms"; "—" with no unit when there is no value. */
export function formatSignedMsWithUnit(us: number | null | undefined): string {
  const s = formatSignedMs(us);
  return s === EM_DASH ? s : `${s} ms`;
}

/** A difference of two percentages, in percentage points: "+2.5 pp", "−0.3 pp", "0.0 pp". */
export function formatSignedPoints(pp: number | null | undefined): string {
  if (pp === null || pp === undefined || !Number.isFinite(pp)) return EM_DASH;
  const body = pctFmt.format(Math.abs(pp));
  if (body === pctFmt.format(0)) return `${body} pp`;
  return `${pp > 0 ? "+" : "−"}${body} pp`;
}

export function formatSignedInt(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return EM_DASH;
  if (n === 0) return "0";
  return (n > 0 ? "+" : "−") + intFmt.format(Math.abs(n));
}

/** 12.34 -> "+12.3 %"; null (baseline 0) -> "—". */
export function formatPct(pct: number | null | undefined, signed = true): string {
  if (pct === null || pct === undefined || !Number.isFinite(pct)) return EM_DASH;
  const body = pctFmt.format(Math.abs(pct));
  if (!signed) return `${pctFmt.format(pct)} %`;
  if (body === pctFmt.format(0)) return `${body} %`;
  return `${pct > 0 ? "+" : "−"}${body} %`;
}

const BYTE_UNITS = ["B", "KB", "MB", "GB", "TB"] as const;

/** Binary-prefixed but labelled the way TensorBoard's memory view does (KB = 1024 B). */
export function formatBytes(bytes: number | null | undefined, signed = false): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return EM_DASH;
  let v = Math.abs(bytes);
  let i = 0;
  while (v >= 1024 && i < BYTE_UNITS.length - 1) {
    v /= 1024;
    i++;
  }
  const sign = signed ? (bytes > 0 ? "+" : bytes < 0 ? "−" : "") : bytes < 0 ? "−" : "";
  return `${sign}${oneFmt.format(v)} ${BYTE_UNITS[i]}`;
}

/** Direction of a delta for colouring: slower/bigger is "worse". */
export type DeltaDirection = "worse" | "better" | "same" | "none";

export function deltaDirection(delta: number | null | undefined): DeltaDirection {
  if (delta === null || delta === undefined || !Number.isFinite(delta)) return "none";
  if (delta > 0) return "worse";
  if (delta < 0) return "better";
  return "same";
}

/** A glyph so the direction is not told by colour alone: ▲ = the value went up, ▼ = down. */
export function deltaArrow(delta: number | null | undefined): string {
  const d = deltaDirection(delta);
  return d === "worse" ? "▲" : d === "better" ? "▼" : "";
}

/**
 * Which way is good for a figure: `lower` (times, memory: up = worse),
 * `higher` (utilisation: up = better), `neutral` (facts about the setup such
 * as the step or device count: no good/bad at all).
 */
export type Polarity = "lower" | "higher" | "neutral";

/**
 * Colour class and arrow of a delta. The arrow always follows the sign of the
 * raw delta (▲ = went up); the colour says whether that is better or worse
 * for the figure; neutral figures get neither colour nor arrow.
 */
export function deltaLook(delta: number | null | undefined, polarity: Polarity = "lower"): { dir: DeltaDirection; arrow: string } {
  const raw = deltaDirection(delta);
  if (raw === "none") return { dir: "none", arrow: "" };
  if (polarity === "neutral") return { dir: "same", arrow: "" };
  const arrow = deltaArrow(delta);
  if (raw === "same" || polarity === "lower") return { dir: raw, arrow };
  return { dir: raw === "worse" ? "better" : "worse", arrow };
}

/** Fraction digits that tell ticks `incr` apart (0.25 -> 2, 0.001 -> 3, 5 -> 0). */
export function decimalsForIncrement(incr: number): number {
  if (!Number.isFinite(incr) || incr <= 0) return 3;
  for (let d = 0; d < 10; d++) {
    const scaled = incr * 10 ** d;
    if (Math.abs(scaled - Math.round(scaled)) < 1e-6 * Math.max(1, scaled)) return d;
  }
  return 10;
}

/** Tick labels with one number of decimals for the whole axis, chosen from the tick increment. */
export function formatTicks(splits: readonly number[], incr: number): string[] {
  const d = decimalsForIncrement(incr);
  const f = new Intl.NumberFormat("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });
  // -0 would print as "-0.000".
  return splits.map((v) => f.format(Math.abs(v) < 0.5 * 10 ** -d ? 0 : v));
}
