/**
 * The explanation (diff/explain): request parameters, significance marks
 * and the waterfall's data, as pure functions (tested in test/explain.test.ts).
 */
import type { components } from "../generated/api";

export type { DiffExplainResponse } from "../api";
export type Significance = components["schemas"]["Significance"];
export type WaterfallBar = components["schemas"]["WaterfallBar"];
export type Contributor = components["schemas"]["Contributor"];
export type ExplainPipeline = components["schemas"]["ExplainPipeline"];

const INPUT_BOUND_WORDS: Record<ExplainPipeline["input_bound"]["baseline"], string> = {
  yes: "input-bound",
  partly: "partly input-bound",
  no: "not input-bound",
  unknown: "unknown (no steps)",
};

/** The input-bound verdicts of both runs in words: "not input-bound (4 % data wait) → input-bound (57 % data wait)", or one verdict when unchanged. */
export function inputBoundText(ib: ExplainPipeline["input_bound"]): string {
  const pct = (v: number | null) => (v === null ? "—" : `${v.toFixed(0)} %`);
  if (!ib.changed) return `${INPUT_BOUND_WORDS[ib.baseline]} in both runs (data wait ${pct(ib.baseline_data_wait_pct)} → ${pct(ib.experimental_data_wait_pct)} of the step)`;
  return `${INPUT_BOUND_WORDS[ib.baseline]} (${pct(ib.baseline_data_wait_pct)} data wait) → ${INPUT_BOUND_WORDS[ib.experimental]} (${pct(ib.experimental_data_wait_pct)} data wait)`;
}

/** The stage that changed most, in words: its task time and throughput, baseline → experimental. */
export function stageText(st: NonNullable<ExplainPipeline["stage"]>): string {
  const parts: string[] = [];
  if (st.baseline_task_mean_s !== null && st.experimental_task_mean_s !== null)
    parts.push(`task ${fmtUs(st.baseline_task_mean_s * 1e6)} → ${fmtUs(st.experimental_task_mean_s * 1e6)}`);
  if (st.baseline_qps !== null && st.experimental_qps !== null) {
    const change = st.delta_qps_pct === null ? "" : ` (${st.delta_qps_pct > 0 ? "+" : ""}${st.delta_qps_pct.toFixed(0)} %)`;
    parts.push(`${st.baseline_qps.toPrecision(3)} → ${st.experimental_qps.toPrecision(3)} items/s${change}`);
  }
  return `${st.stage}: ${parts.join(", ") || "no timings"}`;
}


export interface Mark {
  /** Shown next to the delta; never the only signal: `label` is its text. */
  symbol: string;
  label: string;
  cls: "sig" | "noise" | "few";
}

/** The mark of a delta's significance; null when the delta has none (not per step). */
export function significanceMark(sig: Significance | null | undefined): Mark | null {
  if (!sig) return null;
  const recordings =
    sig.baseline_recordings > 1 || sig.experimental_recordings > 1
      ? ` in ${sig.baseline_recordings} vs ${sig.experimental_recordings} recordings`
      : "";
  const steps = `${sig.baseline_steps} vs ${sig.experimental_steps} steps${recordings}`;
  if (sig.verdict === "significant") {
    const band = sig.ci_low !== null && sig.ci_high !== null ? `, ${confidenceText(sig.confidence)} interval ${fmtUs(sig.ci_low)} to ${fmtUs(sig.ci_high)}` : "";
    return { symbol: "●", label: `${sig.label} (${steps}${band})`, cls: "sig" };
  }
  if (sig.verdict === "within_noise") return { symbol: "≈", label: `${sig.label} (${steps})`, cls: "noise" };
  return { symbol: "?", label: `${sig.label} (${steps}; ${sig.min_steps} per run needed)`, cls: "few" };
}

/** An interval's level as the server states it (0.99375 -> "99.38 %"): never a level of our own. */
export function confidenceText(confidence: number): string {
  return `${Number((100 * confidence).toFixed(2))} %`;
}

function fmtUs(us: number): string {
  const a = Math.abs(us);
  if (a >= 1e6) return `${(us / 1e6).toPrecision(3)} s`;
  if (a >= 1e3) return `${(us / 1e3).toPrecision(3)} ms`;
  return `${us.toPrecision(3)} µs`;
}

export interface WaterfallData {
  labels: string[];
  /** Bar i spans lows[i]..highs[i] (ms); totals start at 0. */
  lows: number[];
  highs: number[];
  /** "total" | "up" (slower) | "down" (faster), per bar. */
  kinds: ("total" | "up" | "down")[];
  verdicts: (string | null)[];
  /** Each bar's verdict in the server's words. */
  verdictLabels: (string | null)[];
}

/** Floating bars in ms, lower and upper end of each, from the route's bars. */
export function waterfallData(bars: WaterfallBar[]): WaterfallData {
  const out: WaterfallData = { labels: [], lows: [], highs: [], kinds: [], verdicts: [], verdictLabels: [] };
  for (const b of bars) {
    const lo = Math.min(b.start_us, b.end_us) / 1000;
    const hi = Math.max(b.start_us, b.end_us) / 1000;
    out.labels.push(b.label);
    out.lows.push(lo);
    out.highs.push(hi);
    out.kinds.push(b.kind === "total" ? "total" : b.end_us >= b.start_us ? "up" : "down");
    out.verdicts.push(b.verdict ?? null);
    out.verdictLabels.push(b.verdict_label ?? null);
  }
  return out;
}

/** An axis label: long contributor names cut (the tooltip has them whole). */
export function shortLabel(label: string, max = 22): string {
  return label.length <= max ? label : `${label.slice(0, max - 1)}…`;
}

/** The y range the waterfall needs: every bar visible, totals from 0. */
export function waterfallRange(d: WaterfallData): [number, number] {
  const hi = Math.max(0, ...d.highs);
  return [0, hi > 0 ? hi * 1.05 : 1];
}
