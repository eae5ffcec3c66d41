/** Pure rules of the Overview's comparison table (kept here so they are unit-tested). */
import type { DiffOverviewRow } from "../api";
import type { Polarity } from "./format";

/** Higher is better for these; everything else with a unit (time, memory) is better lower. */
export const HIGHER_IS_BETTER: ReadonlySet<string> = new Set(["gpu_utilization_pct"]);
/** Facts about the setup, not performance: no good/bad colour and no arrow. */
export const NEUTRAL: ReadonlySet<string> = new Set(["device", "device_count", "device_memory_bytes", "steps"]);

export function rowPolarity(row: Pick<DiffOverviewRow, "metric" | "unit">): Polarity {
  if (NEUTRAL.has(row.metric) || row.unit === null) return "neutral";
  return HIGHER_IS_BETTER.has(row.metric) ? "higher" : "lower";
}

/**
 * The two device names when the runs ran on different devices (a different
 * GPU model, or GPU against CPU), else null.
 */
export function deviceMismatch(rows: readonly DiffOverviewRow[]): { baseline: string; experimental: string } | null {
  const r = rows.find((x) => x.metric === "device");
  if (!r || typeof r.baseline !== "string" || typeof r.experimental !== "string") return null;
  if (r.baseline.trim() === r.experimental.trim()) return null;
  return { baseline: r.baseline, experimental: r.experimental };
}
