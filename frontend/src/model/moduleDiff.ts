/**
 * The module diff's rules and numbers as drawn: which clock the toggles
 * pick and why one is off, each piece's table cells with the significance
 * that belongs to them, per-piece series for the two charts, the server's
 * accumulated trends, axis labels, status bands and step labels. Pure, so
 * what the tab shows is unit-tested; the components only render these.
 */
import type { DiffModulesResponse, DiffPiece } from "../api";
import { argMaxAbs, isUnknownPiece, labelIndexes, pairedStepLabel, pieceTimes, shortPieceLabel, stepLabel, zeroAlignedRanges } from "./charts";
import type { Significance } from "./explain";
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

/** A piece's times on one clock (µs). */
export interface ClockTimes {
  baseline: number;
  experimental: number;
  delta: number;
  pct: number | null;
}

/** A piece's times on a clock (µs): the server's numbers, as sent. */
export function clockTimes(p: DiffPiece, clock: Clock): ClockTimes {
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
export type Band = "baseline_only" | "experimental_only" | "inside_compiled" | "unknown";

export function bandOf(p: DiffPiece): Band | null {
  if (p.status === "baseline_only" || p.status === "experimental_only" || p.status === "inside_compiled") return p.status;
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

// ---------------------------------------------------------------- toggles

const TIME_HINT: Record<TimeKind, string> = {
  host: "Host time: each piece's wall time on the CPU side; a step is its CPU-side ProfilerStep window.",
  device:
    "Device time: the summed duration of the kernels, memcpy and memset launched in the piece. Overlapping streams add up, so it can exceed the wall time.",
};
const PASS_HINT: Record<Pass, string> = {
  both:
    "Forward + backward: a module's cost is its forward plus the backward operators its forward created (fwdbwd flows); the backward piece keeps what no module claims, shown as “backward (unattributed)”.",
  forward: "Forward only: a module's own call (its forward); all backward stays in the backward piece.",
};
const TIME_LABEL: Record<TimeKind, string> = { host: "Host time", device: "Device time" };
const PASS_LABEL: Record<Pass, string> = { both: "Forward + backward", forward: "Forward only" };

/** One button of a segmented toggle; a disabled one says why in its title. */
export interface Toggle<V extends string> {
  value: V;
  label: string;
  pressed: boolean;
  disabled: boolean;
  title: string;
}

/** What the tab draws for the asked time and pass, and how its toggles show that. */
export interface ModuleDiffControls {
  /** The time drawn: host when neither trace has device activity, whatever was asked. */
  time: TimeKind;
  /** Whether the level has backward to attribute to its modules. */
  backward: boolean;
  clock: Clock;
  times: Toggle<TimeKind>[];
  passes: Toggle<Pass>[];
  /** The sentence under the toolbar: what the drawn time measures. */
  hint: string;
}

export function moduleDiffControls(
  d: Pick<DiffModulesResponse, "device_present" | "device_bound" | "node" | "children">,
  asked: TimeKind | "",
  pass: Pass,
): ModuleDiffControls {
  // Device presence is the server's answer for the whole pair, so it holds at every level.
  const noDevice = !d.device_present;
  // Nothing asked: device time when a run kept the device busy most of its steps (the server says).
  const time: TimeKind = noDevice ? "host" : asked || (d.device_bound ? "device" : "host");
  const backward = hasBackward(d);
  const clock = clockOf(time, pass, backward);
  const times = (["host", "device"] as const).map((t): Toggle<TimeKind> => {
    const off = t === "device" && noDevice;
    return {
      value: t,
      label: TIME_LABEL[t],
      pressed: time === t,
      disabled: off,
      title: off ? "Neither trace has device activity (no kernels, memcpy or memset): there is no device time to compare." : TIME_HINT[t],
    };
  });
  // With no choice to make, the pressed button is the pass drawn: forward only.
  const passOff = time === "device" || !backward;
  const passTitle = (p: Pass) =>
    time === "device"
      ? "Backward is attributed to modules on host time only."
      : !backward
        ? "No backward operator at this level is linked to a module call (no fwdbwd flows into these modules)."
        : PASS_HINT[p];
  const passes = (["both", "forward"] as const).map(
    (p): Toggle<Pass> => ({ value: p, label: PASS_LABEL[p], pressed: passOff ? p === "forward" : pass === p, disabled: passOff, title: passTitle(p) }),
  );
  const timeHint = noDevice ? `${TIME_HINT.host} Device time is off: neither trace has kernels, memcpy or memset.` : TIME_HINT[time];
  const hint = clock === "with_backward" ? `${timeHint} ${PASS_HINT.both}` : timeHint;
  return { time, backward, clock, times, passes, hint };
}

// ---------------------------------------------------------------- pieces

/** What a clock's times are, for headings and tooltips. */
export const CLOCK_HEADING: Record<Clock, string> = {
  host: "host time (CPU-side ProfilerStep window)",
  device: "device time (Σ kernel/memcpy/memset durations)",
  with_backward: "host time, forward + backward (each module's backward operators moved to it)",
};

/** A band in words; the table's badge names only one-sided pieces, as an unknown piece's name already says it. */
export const BAND_TEXT: Record<Band, string> = {
  baseline_only: "baseline only",
  experimental_only: "experimental only",
  inside_compiled: "inside the other run's compiled module",
  unknown: "time outside any module",
};

/** "baseline name → experimental name" where the runs name an aligned piece differently; null otherwise. */
export function renamedText(p: Pick<DiffPiece, "baseline_name" | "experimental_name">): string | null {
  return p.baseline_name && p.experimental_name && p.baseline_name !== p.experimental_name ? `${p.baseline_name} → ${p.experimental_name}` : null;
}

/**
 * The significance of a piece's Δ on a clock: the server judges a module
 * across steps on host time only, forward alone or with its backward.
 */
export function deltaSignificance(p: Pick<DiffPiece, "significance" | "forward_significance">, clock: Clock): Significance | null {
  if (clock === "with_backward") return p.significance;
  return clock === "host" ? p.forward_significance : null;
}

/** Whether a clock's deltas can carry significance marks. */
export function clockHasMarks(clock: Clock): boolean {
  return clock !== "device";
}

/** A pass's three cells (µs); null reads "—". */
export interface PassCells {
  baseline: number | null;
  experimental: number | null;
  delta: number | null;
  significance: Significance | null;
}

/** A piece's row of the Pieces table on one clock. */
export interface PieceRow {
  name: string;
  renamed: string | null;
  band: Band | null;
  /** The piece's times on the clock (the total, with both passes). */
  times: ClockTimes;
  significance: Significance | null;
  /** A one-sided piece has no time on its missing side: those cells read "—". */
  absent: { baseline: boolean; experimental: boolean };
  /** With both passes, the forward and backward columns; null otherwise. */
  split: { forward: PassCells; backward: PassCells } | null;
}

const NO_CELLS: PassCells = { baseline: null, experimental: null, delta: null, significance: null };

export function pieceRow(p: DiffPiece, clock: Clock): PieceRow {
  const times = clockTimes(p, clock);
  let split: PieceRow["split"] = null;
  if (clock === "with_backward") {
    const passes = passesOf(p);
    // The backward piece is all backward: with both passes, the part no module claims.
    const rest = p.kind === "backward";
    split = {
      forward: passes ? { ...passes.forward, significance: p.forward_significance } : NO_CELLS,
      backward: passes
        ? { ...passes.backward, significance: p.backward_significance }
        : rest
          ? { baseline: times.baseline, experimental: times.experimental, delta: times.delta, significance: p.backward_significance }
          : NO_CELLS,
    };
  }
  return {
    name: pieceName(p, clock),
    renamed: renamedText(p),
    band: bandOf(p),
    times,
    significance: deltaSignificance(p, clock),
    absent: { baseline: p.status !== "matched" && p.baseline_name === null, experimental: p.status !== "matched" && p.experimental_name === null },
    split,
  };
}

/** The piece whose operators are listed: a child of the level, or the level itself; null when the path is neither. */
export function selectedPiece(d: Pick<DiffModulesResponse, "path" | "node" | "children">, path: string): DiffPiece | null {
  return d.children.find((p) => p.path === path) ?? (path === d.path ? d.node : null);
}
