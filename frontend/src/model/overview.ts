/** Pure rules of the Overview: its comparison table's text and colours, and its charts' series. */
import type { DiffOverviewResponse, DiffOverviewRow, StepInfo } from "../api";
import { BREAKDOWN_LABELS } from "../generated/tableRules";
import { pairedStepLabel, sharedYMaxMs } from "./charts";
import { EM_DASH, formatBytes, formatDecimal, formatInt, formatMsWithUnit, formatPct, formatSignedInt, formatSignedMsWithUnit, formatSignedPoints, usToMs, type Polarity } from "./format";

/** Higher is better for these; everything else with a unit (time, memory) is better lower. */
export const HIGHER_IS_BETTER: ReadonlySet<string> = new Set(["gpu_utilization_pct", "samples_per_s", "tokens_per_s"]);
/** Facts about the setup, not performance: no good/bad colour and no arrow. */
export const NEUTRAL: ReadonlySet<string> = new Set([
  "device",
  "device_count",
  "device_memory_bytes",
  "steps",
  "samples_per_step",
  "tokens_per_step",
]);
/** The rows of work per step (diff/units.py): grouped under their own heading. */
export const WORK_ROWS: ReadonlySet<string> = new Set([
  "samples_per_step",
  "time_per_sample_us",
  "samples_per_s",
  "tokens_per_step",
  "time_per_token_us",
  "tokens_per_s",
]);

export type Difference = DiffOverviewResponse["comparability"][number];

const EFFECT_WORDS: Record<Difference["effect"], string> = {
  per_unit: "compared per unit of work",
  no_verdict: "no verdict",
  caveat: "caveat",
  note: "note",
};

/** What a difference does to the numbers, in words. */
export function effectWord(effect: Difference["effect"]): string {
  return EFFECT_WORDS[effect];
}

/** The comparability list's title: how serious the worst difference is. */
export function comparabilityTitle(items: readonly Difference[]): { kind: "warn" | "info"; title: string } {
  const serious = items.some((d) => d.effect !== "note");
  const n = items.length;
  return {
    kind: serious ? "warn" : "info",
    title: `The runs differ in ${n === 1 ? "one way" : `${n} ways`} besides the change${serious ? ": read the numbers with these in mind" : ""}`,
  };
}

/**
 * A breakdown row's label under the "average per step" heading: its
 * category's label as the server names it (generated from diff/overview.py,
 * less the "(per step)" the heading says); the row's own label otherwise.
 */
export function breakdownRowLabel(row: Pick<DiffOverviewRow, "metric" | "label">): string {
  const cat = row.metric.startsWith("breakdown_us.") ? row.metric.slice("breakdown_us.".length) : null;
  return (cat !== null && (BREAKDOWN_LABELS as Readonly<Record<string, string>>)[cat]) || row.label;
}

export function rowPolarity(row: Pick<DiffOverviewRow, "metric" | "unit">): Polarity {
  if (NEUTRAL.has(row.metric) || row.unit === null) return "neutral";
  return HIGHER_IS_BETTER.has(row.metric) ? "higher" : "lower";
}

/** A baseline or experimental value of a comparison row, in the row's unit. */
export function overviewValueText(row: Pick<DiffOverviewRow, "unit">, v: number | string | null): string {
  if (v === null) return EM_DASH;
  if (typeof v === "string") return v;
  switch (row.unit) {
    case "us":
      return formatMsWithUnit(v);
    case "bytes":
      return formatBytes(v);
    case "pct":
      return formatPct(v, false);
    case "per_s":
      return `${formatDecimal(v)}/s`;
    default:
      return Number.isInteger(v) ? formatInt(v) : formatDecimal(v);
  }
}

/** The server's delta of a comparison row, signed, in the row's unit (percentages differ in points). */
export function overviewDeltaText(row: Pick<DiffOverviewRow, "unit" | "delta">): string {
  const d = row.delta;
  switch (row.unit) {
    case "us":
      return formatSignedMsWithUnit(d);
    case "bytes":
      return formatBytes(d, true);
    case "pct":
      return formatSignedPoints(d);
    case "per_s":
      return d === null ? EM_DASH : `${formatDecimal(d, true)}/s`;
    default:
      return d !== null && !Number.isInteger(d) ? formatDecimal(d, true) : formatSignedInt(d);
  }
}

/** The Overview's "step time per step" lines: x = 1..n, one label per step, ms (null past a run's last step). */
export function stepLineSeries(
  baseline: readonly StepInfo[],
  experimental: readonly StepInfo[],
): { xs: number[]; labels: string[]; baselineMs: (number | null)[]; experimentalMs: (number | null)[] } {
  const n = Math.max(baseline.length, experimental.length);
  const idx = Array.from({ length: n }, (_, i) => i);
  const ms = (s: StepInfo | undefined) => (s ? usToMs(s.duration_us) : null);
  return {
    xs: idx.map((i) => i + 1),
    // The steps' own numbers (ProfilerStep#N), as in the breakdown charts and the module diff.
    labels: idx.map((i) => pairedStepLabel(baseline[i]?.name, experimental[i]?.name)),
    baselineMs: idx.map((i) => ms(baseline[i])),
    experimentalMs: idx.map((i) => ms(experimental[i])),
  };
}

/** One y maximum (ms, 8 % headroom) for both breakdown charts, so their bars compare by eye. */
export function breakdownYMax(...stepLists: readonly (readonly StepInfo[])[]): number {
  return sharedYMaxMs(stepLists.flatMap((steps) => steps.map((s) => s.duration_us)));
}
