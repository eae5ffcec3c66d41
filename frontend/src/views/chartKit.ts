/** Shared chart settings so every chart looks and reads the same. */
import uPlot from "uplot";

export const BASELINE_COLOR = "#1976d2";
export const EXPERIMENTAL_COLOR = "#f57c00";
export const WORSE_COLOR = "#c62828";
export const BETTER_COLOR = "#2e7d32";

const AXIS_FONT = '11px Roboto, "Helvetica Neue", system-ui, sans-serif';
const LABEL_FONT = '500 11px Roboto, "Helvetica Neue", system-ui, sans-serif';

const msFmt = new Intl.NumberFormat("en-US", { maximumFractionDigits: 3 });

/** A y axis in milliseconds with a unit in its label. */
export function msAxis(label: string, side: 1 | 3 = 3, scale = "y"): uPlot.Axis {
  return {
    scale,
    side,
    label,
    labelFont: LABEL_FONT,
    font: AXIS_FONT,
    size: 60,
    labelSize: 20,
    stroke: "#616161",
    grid: side === 3 ? { stroke: "#ebebeb", width: 1 } : { show: false },
    ticks: { stroke: "#e0e0e0", width: 1 },
    values: (_u, splits) => splits.map((v) => msFmt.format(v)),
  };
}

/** uPlot's bar path builder (typed access; uPlot.paths.bars is optional in its d.ts). */
export function barsPath(opts: uPlot.Series.BarsPathBuilderOpts): uPlot.Series.PathBuilder {
  const bars = uPlot.paths.bars;
  if (!bars) throw new Error("uPlot build without bar paths");
  return bars(opts);
}

/** An x axis over piece/step indexes with text labels per integer tick. */
export function indexAxis(label: string, labelAt: (i: number) => string, rotate = 0): uPlot.Axis {
  return {
    label,
    labelFont: LABEL_FONT,
    font: AXIS_FONT,
    labelSize: 20,
    stroke: "#616161",
    grid: { show: false },
    ticks: { stroke: "#e0e0e0", width: 1 },
    incrs: [1, 2, 5, 10, 20, 50, 100],
    rotate,
    // Rotated labels need room below them, above the axis title.
    size: rotate ? 110 : 40,
    values: (_u, splits) => splits.map((s) => (Number.isInteger(s) ? labelAt(s) : "")),
  };
}
