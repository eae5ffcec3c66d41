/**
 * The module diff's numbers as drawn: per-piece series for the two charts,
 * the server's accumulated trends, axis labels, status bands and step
 * labels. Pure, so what the charts show is unit-tested; the view only turns
 * these into uPlot options.
 */
import type { DiffModulesResponse, DiffPiece } from "../api";
import { argMaxAbs, isUnknownPiece, labelIndexes, pairedStepLabel, pieceTimes, shortPieceLabel, stepLabel, zeroAlignedRanges } from "./charts";
import { usToMs } from "./format";

export type TimeKind = "host" | "device";
/** Host time per module: forward only, or forward plus the backward its forward created. */
export type Pass = "both" | "forward";
/** What the charts and the table draw: a clock, and on host time a pass. */
export type Clock = TimeKind | "with_backward";

/** The clock drawn: `with_backward` for host time with both passes, when the level has backward to attribute. */
export function clockOf(time: TimeKind, pass: Pass, backward: boolean): Clock {
  return time === "host" && pass === "both" && backward ? "with_backward" : time;
}

/** Whether any module piece of the level (or the node) has backward time attributed to it on either side. */
export function hasBackward(d: Pick<DiffModulesResponse, "node" | "children">): boolean {
  return [d.node, ...d.children].some((p) => (p.baseline_backward_us ?? 0) > 0 || (p.experimental_backward_us ?? 0) > 0);
}

/** A piece's times on a clock (µs): the server's numbers, as sent. */
export function clockTimes(p: DiffPiece, clock: Clock): { baseline: number; experimental: number; delta: number; pct: number | null } {
  if (clock !== "with_backward") return pieceTimes(p, clock);
  return { baseline: p.baseline_with_backward_us, experimental: p.experimental_with_backward_us, delta: p.delta_with_backward_us, pct: p.delta_with_backward_pct };
}

/** A module piece's forward, backward and total (forward + backward) times (µs); null on other pieces. */
export interface Passes {
  forward: { baseline: number; experimental: number; delta: number };
  backward: { baseline: number; experimental: number; delta: number };
  total: { baseline: number; experimental: number; delta: number; pct: number | null };
}

export function passesOf(p: DiffPiece): Passes | null {
  if (p.baseline_backward_us === null || p.experimental_backward_us === null || p.delta_backward_us === null) return null;
  return {
    forward: { baseline: p.baseline_host_us, experimental: p.experimental_host_us, delta: p.delta_host_us },
    backward: { baseline: p.baseline_backward_us, experimental: p.experimental_backward_us, delta: p.delta_backward_us },
    total: { baseline: p.baseline_with_backward_us, experimental: p.experimental_with_backward_us, delta: p.delta_with_backward_us, pct: p.delta_with_backward_pct },
  };
}

/** The name a piece goes by on a clock: with backward moved to the modules, the backward piece holds the unattributed rest. */
export function pieceName(p: DiffPiece, clock: Clock): string {
  return clock === "with_backward" && p.kind === "backward" ? "backward (unattributed)" : p.name;
}

/** Up to this many pieces, every bar gets its own x label. */
export const MAX_BAR_LABELS = 60;

/** The server's running sums over the returned children (µs), for one clock. */
export function accumulated(d: DiffModulesResponse, time: Clock): { baseline: number[]; experimental: number[]; delta: number[] } {
  const t = d.trend;
  if (time === "with_backward") return { baseline: t.baseline_with_backward_us, experimental: t.experimental_with_backward_us, delta: t.delta_with_backward_us };
  return time === "host"
    ? { baseline: t.baseline_host_us, experimental: t.experimental_host_us, delta: t.delta_host_us }
    : { baseline: t.baseline_device_us, experimental: t.experimental_device_us, delta: t.delta_device_us };
}

/** Why a piece's column is tinted: one-sided, or time outside any module; null for an ordinary matched piece. */
export type Band = "baseline_only" | "experimental_only" | "unknown";

export function bandOf(p: DiffPiece): Band | null {
  if (p.status === "baseline_only" || p.status === "experimental_only") return p.status;
  return isUnknownPiece(p) ? "unknown" : null;
}

/**
 * The step a piece is in, by the step's own number (`ProfilerStep#N` -> "N",
 * "2 / 5" when the runs number the aligned step differently). Pieces carry
 * `step` = the aligned step's index, which no other view shows.
 */
export function pieceStep(p: DiffPiece, d: Pick<DiffModulesResponse, "path" | "breadcrumb">): string {
  if (p.kind === "step")
    return pairedStepLabel(
      p.status === "experimental_only" ? null : (p.baseline_name ?? p.name),
      p.status === "baseline_only" ? null : (p.experimental_name ?? p.name),
    );
  // Below the root, the breadcrumb's second entry is the step (`ProfilerStep#N` or `all`).
  const stepNode = d.path !== "" ? d.breadcrumb[1] : undefined;
  if (stepNode) return stepLabel(stepNode.name);
  return p.step !== null ? String(p.step) : "";
}

export interface ModuleDiffSeries {
  /** Piece indexes 0..n-1 (the x values). */
  xs: number[];
  baselineMs: number[];
  experimentalMs: number[];
  deltaMs: number[];
  /** Δ split by sign for the red/green bars (null where the other colour draws). */
  slowerMs: (number | null)[];
  fasterMs: (number | null)[];
  /** The server's accumulated trends, in ms. */
  accBaselineMs: number[];
  accExperimentalMs: number[];
  accDeltaMs: number[];
  /** X label of each piece and the indexes that get one. */
  labels: string[];
  ticks: number[];
  /** Label rotation in degrees (0 = horizontal). */
  rotate: number;
  /** Y ranges of the difference chart (per-piece Δ, accumulated Δ) with zero at one height. */
  deltaRange: [number, number];
  accDeltaRange: [number, number];
}

/** What the two module-diff charts draw for the children of `d`, on one clock. */
export function moduleDiffSeries(d: DiffModulesResponse, time: Clock): ModuleDiffSeries {
  const pieces = d.children;
  const ts = pieces.map((p) => clockTimes(p, time));
  const deltaMs = ts.map((t) => usToMs(t.delta));
  const acc = accumulated(d, time);
  const accDeltaMs = acc.delta.map(usToMs);
  // Horizontal labels only fit a handful of pieces per chart half.
  const many = pieces.length > 4;
  const labels = pieces.map((p) =>
    p.kind === "step" ? pieceStep(p, d) : shortPieceLabel(time === "with_backward" && p.kind === "backward" ? { ...p, name: "bwd (unattr.)" } : p, many ? 18 : 16),
  );
  // Every bar labelled up to MAX_BAR_LABELS; beyond, a stride that always
  // keeps the tallest bar and the largest change labelled.
  const tallest = argMaxAbs(ts.map((t) => Math.max(t.baseline, t.experimental)));
  const ticks = labelIndexes(pieces.length, MAX_BAR_LABELS, [tallest, argMaxAbs(deltaMs)]);
  // Short labels (step numbers) stay horizontal while they fit side by side.
  const short = labels.every((l) => l.length <= 6) && pieces.length <= 16;
  const rotate = !many || short ? 0 : pieces.length > 30 ? -60 : -40;
  const [deltaRange, accDeltaRange] = zeroAlignedRanges(deltaMs, accDeltaMs);
  return {
    xs: pieces.map((_, i) => i),
    baselineMs: ts.map((t) => usToMs(t.baseline)),
    experimentalMs: ts.map((t) => usToMs(t.experimental)),
    deltaMs,
    slowerMs: deltaMs.map((v) => (v > 0 ? v : null)),
    fasterMs: deltaMs.map((v) => (v < 0 ? v : null)),
    accBaselineMs: acc.baseline.map(usToMs),
    accExperimentalMs: acc.experimental.map(usToMs),
    accDeltaMs,
    labels,
    ticks,
    rotate,
    deltaRange,
    accDeltaRange,
  };
}
