/**
 * Shared uPlot settings so every chart looks and reads the same: colours,
 * fonts, axes. What the axes print comes from model/ (formatTicks,
 * integerTickLabels); the series data from model/ too.
 */
import uPlot from "uplot";
import { integerTickLabels } from "../model/charts";
import { byteTickLabels, byteTicks, formatTicks } from "../model/format";

export const BASELINE_COLOR = "#1976d2";
export const EXPERIMENTAL_COLOR = "#f57c00";
export const WORSE_COLOR = "#c62828";
export const BETTER_COLOR = "#2e7d32";

const AXIS_FONT = '11px Roboto, "Helvetica Neue", system-ui, sans-serif';
const LABEL_FONT = '500 11px Roboto, "Helvetica Neue", system-ui, sans-serif';

/** A y axis in milliseconds with a unit in its label. */
export function msAxis(label: string, side: 1 | 3 = 3, scale = "y"): uPlot.Axis {
  return {
    ...yAxis(label, side, scale),
    // One number of decimals per axis, from the tick increment: never "0.001, 0.001, 0".
    values: (_u, splits, _axisIdx, _space, incr) => formatTicks(splits, incr),
  };
}

/** A y axis of counts (ranks per bin, say): whole numbers only. */
export function countAxis(label: string): uPlot.Axis {
  return {
    ...yAxis(label, 3, "y"),
    incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000],
    values: (_u, splits) => splits.map((v) => String(Math.round(v))),
  };
}

function yAxis(label: string, side: 1 | 3, scale: string): uPlot.Axis {
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
  };
}

/**
 * A y axis of bytes: round ticks in one IEC unit (model/format.ts byteTicks), as many as uPlot's
 * own spacing would draw.
 */
export function bytesAxis(label: string, side: 1 | 3 = 3, scale = "y"): uPlot.Axis {
  return {
    ...msAxis(label, side, scale),
    size: 76,
    splits: (_u, _axis, min, max, incr) => byteTicks(min, max, incr > 0 ? Math.floor((max - min) / incr) + 1 : 5),
    values: (_u, splits) => byteTickLabels(splits),
  };
}

/** uPlot's bar path builder (typed access; uPlot.paths.bars is optional in its d.ts). */
export function barsPath(opts: uPlot.Series.BarsPathBuilderOpts): uPlot.Series.PathBuilder {
  const bars = uPlot.paths.bars;
  if (!bars) throw new Error("uPlot build without bar paths");
  return bars(opts);
}

/**
 * An x axis over piece/step indexes with text labels per integer tick.
 * `ticks`, when given, are the exact indexes to label (uPlot would
 * otherwise skip labels when space is short).
 */
export function indexAxis(label: string, labelAt: (i: number) => string, rotate = 0, ticks?: readonly number[]): uPlot.Axis {
  const explicit: Partial<uPlot.Axis> = ticks
    ? // Any increment keeps the axis drawn; the splits below decide the labels.
      { space: 1, incrs: [1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7], splits: () => ticks.slice() }
    : { incrs: [1, 2, 5, 10, 20, 50, 100] };
  return {
    ...explicit,
    label,
    labelFont: LABEL_FONT,
    font: AXIS_FONT,
    labelSize: 20,
    stroke: "#616161",
    grid: { show: false },
    ticks: { stroke: "#e0e0e0", width: 1 },
    rotate,
    // Rotated labels need room below them, above the axis title.
    size: rotate ? 110 : 40,
    values: (_u, splits) => integerTickLabels(splits, labelAt),
  };
}

/** An x axis of milliseconds (a histogram's bins). */
export function msXAxis(label: string): uPlot.Axis {
  return {
    label,
    labelFont: LABEL_FONT,
    font: AXIS_FONT,
    labelSize: 20,
    size: 40,
    stroke: "#616161",
    grid: { show: false },
    ticks: { stroke: "#e0e0e0", width: 1 },
    values: (_u, splits, _axisIdx, _space, incr) => formatTicks(splits, incr),
  };
}
