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

/** 37.6683 -> "37.67"; signed: "+37.67", "−0.5", "0". */
export function formatDecimal(n: number | null | undefined, signed = false): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return EM_DASH;
  const body = oneFmt.format(signed ? Math.abs(n) : n);
  if (!signed || body === oneFmt.format(0)) return body;
  return (n > 0 ? "+" : "−") + body;
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

/**
 * IEC binary units (KiB = 1024 B, MiB = 2^20 B): what PyTorch's memory summaries and nvidia-smi
 * print, so a 32 MiB tensor reads "32 MiB". Every byte figure of the UI and the server's sentences
 * (tb_pipeline_plugin/byte_units.py) uses them.
 */
const BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB"] as const;

/** The index in BYTE_UNITS of the largest unit under which |bytes| is at least 1. */
function byteUnitIndex(bytes: number): number {
  let i = 0;
  for (let v = Math.abs(bytes); v >= 1024 && i < BYTE_UNITS.length - 1; v /= 1024) i++;
  return i;
}

/** 1536 -> "1.5 KiB"; at most two decimals. */
export function formatBytes(bytes: number | null | undefined, signed = false): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return EM_DASH;
  const i = byteUnitIndex(bytes);
  const v = Math.abs(bytes) / 1024 ** i;
  const sign = signed ? (bytes > 0 ? "+" : bytes < 0 ? "−" : "") : bytes < 0 ? "−" : "";
  return `${sign}${oneFmt.format(v)} ${BYTE_UNITS[i]}`;
}

/**
 * Round ticks for a byte axis from `lo` to `hi`: multiples of 1, 2 or 5 × 10^k of the one unit
 * the top of the range is printed in (0, 5, 10, 15 MiB; 0, 0.2, 0.4 GiB), at most `maxTicks`.
 * uPlot's own ticks are decimal multiples of bytes, which print as 9.54 MiB, 19.07 MiB.
 */
export function byteTicks(lo: number, hi: number, maxTicks: number): number[] {
  if (!Number.isFinite(lo) || !Number.isFinite(hi) || hi < lo) return [];
  const unit = 1024 ** byteUnitIndex(Math.max(Math.abs(lo), Math.abs(hi)));
  const [a, b] = [lo / unit, hi / unit];
  const count = (step: number) => Math.floor(b / step + 1e-9) - Math.ceil(a / step - 1e-9) + 1;
  // The finest 1-2-5 step whose ticks fit: the densest round axis uPlot's spacing allows.
  let step = 1;
  if (b > a) {
    const pow0 = 10 ** Math.floor(Math.log10((b - a) / Math.max(1, maxTicks)));
    const steps = [pow0 / 10, pow0 / 5, pow0 / 2, pow0, pow0 * 2, pow0 * 5, pow0 * 10, pow0 * 20, pow0 * 50, pow0 * 100];
    step = steps.find((s) => count(s) <= Math.max(2, maxTicks)) ?? b - a;
  }
  const out: number[] = [];
  for (let k = Math.ceil(a / step - 1e-9); k * step <= b + 1e-9 * step; k++) out.push(Number((k * step).toPrecision(12)) * unit);
  return out;
}

/** Labels of byte ticks: all in the unit of the largest, with the decimals the step needs ("0.5 GiB", "1.0 GiB"). */
export function byteTickLabels(splits: readonly number[]): string[] {
  const top = splits.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  const i = byteUnitIndex(top);
  const inUnit = splits.map((v) => v / 1024 ** i);
  const incr = inUnit.length > 1 ? Math.abs((inUnit[1] ?? 0) - (inUnit[0] ?? 0)) : 1;
  return formatTicks(inUnit, incr).map((t) => `${t} ${BYTE_UNITS[i]}`);
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
