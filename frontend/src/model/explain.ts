/**
 * The explanation (diff/explain): request parameters, significance marks
 * and the waterfall's data, as pure functions (tested in test/explain.test.ts).
 */
import type { components } from "../generated/api";

export type { DiffExplainResponse } from "../api";
export type Significance = components["schemas"]["Significance"];
export type WaterfallBar = components["schemas"]["WaterfallBar"];
export type Contributor = components["schemas"]["Contributor"];


export interface Mark {
  /** Shown next to the delta; never the only signal: `label` is its text. */
  symbol: string;
  label: string;
  cls: "sig" | "noise" | "few";
}

/** The mark of a delta's significance; null when the delta has none (not per step). */
export function significanceMark(sig: Significance | null | undefined): Mark | null {
  if (!sig) return null;
  const steps = `${sig.baseline_steps} vs ${sig.experimental_steps} steps`;
  if (sig.verdict === "significant") {
    const band = sig.ci_low !== null && sig.ci_high !== null ? `, 95 % interval ${fmtUs(sig.ci_low)} to ${fmtUs(sig.ci_high)}` : "";
    return { symbol: "●", label: `significant (${steps}${band})`, cls: "sig" };
  }
  if (sig.verdict === "within_noise") return { symbol: "≈", label: `within noise (${steps})`, cls: "noise" };
  return { symbol: "?", label: `too few steps to judge (${steps}; 3 per run needed)`, cls: "few" };
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
}

/** Floating bars in ms, lower and upper end of each, from the route's bars. */
export function waterfallData(bars: WaterfallBar[]): WaterfallData {
  const out: WaterfallData = { labels: [], lows: [], highs: [], kinds: [], verdicts: [] };
  for (const b of bars) {
    const lo = Math.min(b.start_us, b.end_us) / 1000;
    const hi = Math.max(b.start_us, b.end_us) / 1000;
    out.labels.push(b.label);
    out.lows.push(lo);
    out.highs.push(hi);
    out.kinds.push(b.kind === "total" ? "total" : b.end_us >= b.start_us ? "up" : "down");
    out.verdicts.push(b.verdict ?? null);
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
