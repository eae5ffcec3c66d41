/**
 * Distributed tab data shaping: whether the tab is worth showing, which runs
 * to ask for, each run's distributedInfo in words, the straggler sentence,
 * the per-rank stacked bars and the rank tables' rows and columns. Every
 * number (split, median, distance from it, deltas) comes from the
 * `distributed` answer; this only picks, labels and stacks.
 */
import type { DistributedResponse, PercentileDeltaRow, RankDeltaRow, RankRow, RunInfo, RunRanks } from "../api";
import { CATEGORY_COLORS, labelIndexes, stackParts } from "./charts";
import { formatInt, formatMsWithUnit, formatPct, formatSignedMsWithUnit } from "./format";
import { buildColumns, defaultSort, type Column, type SortSpec } from "./tableModel";

export type Side = "baseline" | "experimental";

/** A rank's average step, split so the three parts add up to it (see docs/http_api.md). */
export type SplitPart = "computation_us" | "communication_us" | "idle_us";

export const SPLIT_PARTS: readonly { part: SplitPart; label: string; color: string }[] = [
  { part: "computation_us", label: "Computation", color: CATEGORY_COLORS.kernel },
  { part: "communication_us", label: "Communication", color: CATEGORY_COLORS.communication },
  { part: "idle_us", label: "Idle (waiting)", color: "#bdbdbd" },
];

/** Runs with trace files: the only ones the `distributed` route can answer for. */
function traced(runs: readonly RunInfo[], name: string): RunInfo | undefined {
  return runs.find((r) => r.name === name && r.workers.length > 0);
}

/** Number of ranks (worker files) of a run; 0 for an unknown run or one without traces. */
export function rankCount(runs: readonly RunInfo[], name: string): number {
  return traced(runs, name)?.workers.length ?? 0;
}

/**
 * Whether the Distributed tab is offered: a picked run has more than one
 * rank. Single-rank runs would only get a "one rank" message there; the
 * tab stays reachable when it is the current view (a shared URL), and then
 * says so.
 */
export function distributedTabShown(runs: readonly RunInfo[], baseline: string, experimental: string): boolean {
  return rankCount(runs, baseline) > 1 || rankCount(runs, experimental) > 1;
}

/** What the tab asks for. */
export type DistributedPlan =
  | { kind: "pair"; baseline: string; experimental: string }
  /** One run; `missing`: the other picked run, which has no trace (null when the same run is picked twice). */
  | { kind: "single"; run: string; side: Side; missing: string | null }
  | { kind: "none"; picked: string[] };

export function distributedPlan(runs: readonly RunInfo[], baseline: string, experimental: string): DistributedPlan {
  const b = !!traced(runs, baseline);
  const e = !!traced(runs, experimental);
  if (b && e && baseline !== experimental) return { kind: "pair", baseline, experimental };
  if (b) return { kind: "single", run: baseline, side: "baseline", missing: baseline === experimental || e ? null : experimental };
  if (e) return { kind: "single", run: experimental, side: "experimental", missing: baseline };
  return { kind: "none", picked: [...new Set([baseline, experimental].filter((r) => r))] };
}

/** The runs of an answer with the side each was asked as. */
/** One run's ranks with the run they are of. */
export type NamedRanks = RunRanks & { run: string };

export function answerSides(d: DistributedResponse, plan: DistributedPlan): { side: Side; ranks: NamedRanks }[] {
  const first: Side = plan.kind === "single" ? plan.side : "baseline";
  const baseline = { ...d.baseline_ranks, run: d.baseline.run };
  return d.experimental && d.experimental_ranks
    ? [{ side: "baseline", ranks: baseline }, { side: "experimental", ranks: { ...d.experimental_ranks, run: d.experimental.run } }]
    : [{ side: first, ranks: baseline }];
}

export function rankLabel(rank: number): string {
  return `rank ${rank}`;
}

/** Distinct values, in first-seen order; nulls dropped. */
function distinct<T>(values: readonly (T | null)[]): T[] {
  return [...new Set(values.filter((v): v is T => v !== null))];
}

const RANK_SOURCE_WORDS: Record<RankRow["rank_source"], string> = {
  trace: "from each trace's distributedInfo",
  name: "from the worker names (rankN; the traces' ranks are missing or repeat)",
  order: "the files' order (the traces' ranks are missing or repeat)",
};

/** One run's distributedInfo as label / value pairs: ranks (read so far), world size, backend, where rank numbers come from. */
export function runFacts(r: RunRanks): { label: string; value: string }[] {
  const worlds = distinct(r.ranks.map((x) => x.world_size));
  const backends = distinct(r.ranks.map((x) => x.backend));
  const source = r.ranks[0]?.rank_source ?? "trace";
  const c = r.coverage;
  return [
    { label: "Ranks (trace files)", value: c.ready === c.total ? formatInt(c.total) : `${formatInt(c.ready)} of ${formatInt(c.total)} read` },
    { label: "World size", value: worlds.length ? worlds.map((w) => formatInt(w)).join(", ") : "not in the traces" },
    { label: "Backend", value: backends.length ? backends.join(", ") : "not in the traces" },
    {
      label: "Rank numbers",
      value: RANK_SOURCE_WORDS[source],
    },
  ];
}

/**
 * Notes about how complete a run is: the job's world size is larger than
 * the files in the run (a sample of ranks), or several world sizes or
 * backends are mixed (files of different jobs in one run).
 */
export function runNotes(r: RunRanks): string[] {
  const notes: string[] = [];
  const worlds = distinct(r.ranks.map((x) => x.world_size));
  const backends = distinct(r.ranks.map((x) => x.backend));
  if (worlds.length > 1 || backends.length > 1) notes.push("The trace files disagree on the world size or backend: are they from one job?");
  const world = worlds.length === 1 ? (worlds[0] ?? 0) : 0;
  // The run's rank files, read or not yet (while they load the view holds fewer).
  const held = Math.max(r.ranks.length, r.coverage.total);
  if (world > held)
    notes.push(`The job had ${formatInt(world)} ranks; this run holds ${formatInt(held)} of them` + (held > 1 ? ", so the straggler is the slowest of those." : "."));
  return notes;
}

/**
 * The straggler in words, with how much slower it is than the median rank
 * (`delta`, to show as a delta); null below two ranks. `delta` is null when
 * no rank is slower than the median (every rank takes the same time).
 */
export function stragglerText(r: RunRanks): { lead: string; delta: { us: number; text: string } | null; tail: string } | null {
  const s = r.slowest;
  if (!s || r.ranks.length < 2 || r.median_step_time_us === null || s.step_time_us === 0) return null;
  const median = formatMsWithUnit(r.median_step_time_us);
  if (!(s.vs_median_us > 0)) return { lead: `No straggler: no rank's average step is longer than the median rank's ${median}.`, delta: null, tail: "" };
  return {
    lead: `${capitalise(rankLabel(s.rank))} (${s.worker}) is the straggler: ${formatMsWithUnit(s.step_time_us)} per step,`,
    delta: { us: s.vs_median_us, text: `${formatSignedMsWithUnit(s.vs_median_us)} (${formatPct(s.vs_median_pct)})` },
    tail: `over the median rank's ${median}.`,
  };
}

function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/**
 * Why a run's ranks say little or nothing: one rank only (nothing to
 * compare between ranks), or ranks without step time (no profiler steps, or
 * an empty trace: their times are zero). Null when every rank has steps and there are several.
 */
export function rankCoverageNote(r: NamedRanks): { title: string; body: string } | null {
  if (r.ranks.length === 0)
    return { title: `“${r.run}” has no trace files`, body: "Nothing to show per rank." };
  // An empty trace still has one whole-trace step, of zero length.
  const stepless = r.ranks.filter((x) => x.steps === 0 || x.step_time_us === 0);
  if (stepless.length === r.ranks.length)
    return {
      title: `No rank of “${r.run}” has any step time`,
      body:
        "Their traces hold no profiler steps with events in them, so every time below is zero. " +
        "Record with torch.profiler and its schedule (each prof.step() marks a ProfilerStep) to split a step by rank.",
    };
  if (r.ranks.length === 1)
    return {
      title: `“${r.run}” has one rank`,
      body:
        "Its one trace file is one rank: there is no other rank to compare it with, and no straggler. " +
        "A distributed job writes one trace file per rank; put them in one run directory to compare the ranks here.",
    };
  if (stepless.length > 0)
    return {
      title: `${formatInt(stepless.length)} of ${formatInt(r.ranks.length)} ranks of “${r.run}” have no step time`,
      body: `${stepless.map((x) => `${rankLabel(x.rank)} (${x.worker})`).join(", ")}: their times are zero.`,
    };
  return null;
}

/**
 * The per-rank stacked bars of one run: x = 1..n, labels, stacks in ms
 * (top of the stack first), and the x positions to label: every rank up to
 * `maxLabels`, an even stride beyond, always the straggler.
 */
export function rankBars(
  ranks: readonly RankRow[],
  slowest: number | null,
  maxLabels = 32,
): { xs: number[]; labels: string[]; ticks: number[]; stacks: { part: SplitPart; values: number[] }[] } {
  const straggler = ranks.findIndex((r) => r.rank === slowest);
  return {
    xs: ranks.map((_, i) => i + 1),
    labels: ranks.map((r) => String(r.rank)),
    ticks: labelIndexes(ranks.length, maxLabels, straggler >= 0 ? [straggler] : []).map((i) => i + 1),
    stacks: stackParts(
      ranks.length,
      SPLIT_PARTS.map((p) => p.part),
      (part, i) => (ranks[i]?.[part] ?? 0) / 1000,
    ),
  };
}

// ---------------------------------------------------------------- tables

export const RANK_METRICS = ["step_time_us", "computation_us", "communication_us", "idle_us"] as const;
export const RANK_PRIMARY = "step_time_us";

export type NamedRankDeltaRow = RankDeltaRow & { name: string };
export type NamedRankRow = RankRow & { name: string };

/** Rows of the rank-by-rank table: named by rank, with the worker files when they are not named alike. */
export function namedRankDeltaRows(rows: readonly RankDeltaRow[]): NamedRankDeltaRow[] {
  return rows.map((r) => ({
    ...r,
    name: `${rankLabel(r.rank)} · ${r.baseline_worker === r.experimental_worker ? r.baseline_worker : `${r.baseline_worker} / ${r.experimental_worker}`}`,
  }));
}

/** Rows of one run's rank table. */
export function namedRankRows(rows: readonly RankRow[]): NamedRankRow[] {
  return rows.map((r) => ({ ...r, name: `${rankLabel(r.rank)} · ${r.worker}` }));
}

/** Ranks sort as numbers in the name column (rank 2 before rank 10). */
export function rankOrder(row: { rank: number }): string {
  return String(row.rank).padStart(12, "0");
}

/** Baseline, experimental, Δ and Δ % of each part of the step, rank by rank. */
export function rankDeltaColumns(): Column[] {
  return buildColumns(RANK_METRICS, false, RANK_PRIMARY).map((c) => (c.role === "name" ? { ...c, label: "Rank", title: "Rank" } : c));
}

/** One run's ranks: steps, the average step and its parts, and the distance from the median rank. */
export function runRankColumns(): Column[] {
  const one = (metric: string, label: string, title: string): Column => ({ key: metric, role: "baseline", metric, label, title });
  return [
    { key: "name", role: "name", metric: null, label: "Rank", title: "Rank" },
    one("steps", "count", "Profiler steps"),
    one("step_time_us", "avg", "Step time (ms), average per step"),
    one("computation_us", "avg", "Computation (ms), average per step"),
    one("communication_us", "avg", "Communication (ms), average per step"),
    one("idle_us", "avg", "Idle (ms), average per step"),
    { key: "vs_median_us", role: "delta", metric: "vs_median_us", label: "Δ", title: "Step time minus the median rank's (ms)" },
    { key: "vs_median_pct", role: "delta_pct", metric: "vs_median_us", label: "Δ %", title: "Step time against the median rank's, %" },
  ];
}

/** Rank by rank: the largest change of step time first. One run: the slowest rank first. */
export function rankTableSort(paired: boolean): SortSpec {
  return paired ? defaultSort(RANK_PRIMARY) : { key: RANK_PRIMARY, dir: "desc" };
}

/** Ranks only one run has, with which run that is. */
export function unmatchedRanks(d: DistributedResponse): { rank: number; only: Side; run: string }[] {
  const inBaseline = new Set(d.baseline_ranks.ranks.map((r) => r.rank));
  return d.unmatched_ranks.map((rank) =>
    inBaseline.has(rank) ? { rank, only: "baseline", run: d.baseline.run } : { rank, only: "experimental", run: d.experimental?.run ?? "" },
  );
}

// ---------------------------------------------------------------- thousands of ranks

/** Up to this many ranks a bar per rank reads; beyond, the distribution (percentile bands, histogram) does. */
export const BAR_RANKS_MAX = 64;

export function rankChartKind(ranks: number): "bars" | "distribution" {
  return ranks <= BAR_RANKS_MAX ? "bars" : "distribution";
}

/** The ranks a run's view will hold once all are read (those past the limit aside): the charts are chosen by it, so they do not switch while ranks load. */
export function ranksToRead(r: RunRanks): number {
  return Math.max(r.ranks.length, r.coverage.total - r.coverage.left_out);
}

/** Whether to ask again: a rank of either run is still loading (the answer says so). */
export function answerComplete(d: DistributedResponse): boolean {
  return d.complete;
}

/** "7,412 of 10,000 ranks ready", with the share, while a run's ranks load; null once all are read. */
export function rankProgress(r: NamedRanks): { text: string; ready: number; total: number } | null {
  const c = r.coverage;
  if (c.loading === 0) return null;
  const asked = c.total - c.left_out;
  return {
    text: `${formatInt(c.ready)} of ${formatInt(asked)} ranks of “${r.run}” ready; ${formatInt(c.loading)} still loading. The view fills in as they are read.`,
    ready: c.ready,
    total: asked,
  };
}

/**
 * What a run's answer leaves out, in words: ranks past the limit (with the
 * variable that raises it), ranks whose file could not be read (the first
 * reasons), ranks read with losses.
 */
export function coverageNotes(r: NamedRanks): { kind: "left-out" | "failed" | "warned"; title: string; body: string }[] {
  const c = r.coverage;
  const notes: { kind: "left-out" | "failed" | "warned"; title: string; body: string }[] = [];
  if (c.left_out > 0)
    notes.push({
      kind: "left-out",
      title: `${formatInt(c.left_out)} of ${formatInt(c.total)} ranks of “${r.run}” are not shown`,
      body:
        `The first ${formatInt(c.limit)} ranks (in the order of their worker names) are read. ` +
        `Set ${c.limit_variable}=${c.total} before starting TensorBoard to read them all.`,
    });
  if (c.failed > 0)
    notes.push({
      kind: "failed",
      title: `${formatInt(c.failed)} ${c.failed === 1 ? "rank" : "ranks"} of “${r.run}” could not be read`,
      body: c.failures.map((f) => `${f.worker}: ${f.text}`).join("; ") + (c.failed > c.failures.length ? "; …" : ""),
    });
  if (c.warned > 0)
    notes.push({
      kind: "warned",
      title: `${formatInt(c.warned)} ${c.warned === 1 ? "rank" : "ranks"} of “${r.run}” were read with losses`,
      body: c.warnings.map((f) => `${f.worker}: ${f.text}`).join("; ") + (c.warned > c.warnings.length ? "; …" : ""),
    });
  return notes;
}

/** The slowest ranks of a run in words ("rank 17 (rank17): 212.113 ms, +2.004 ms over the median"). */
export function slowestRanks(r: RunRanks): { rank: number; worker: string; text: string; vsMedianUs: number }[] {
  return r.slowest_ranks.map((x) => ({
    rank: x.rank,
    worker: x.worker,
    vsMedianUs: x.vs_median_us,
    text: `${rankLabel(x.rank)} (${x.worker}): ${formatMsWithUnit(x.step_time_us)} per step, ${formatSignedMsWithUnit(x.vs_median_us)} against the median rank`,
  }));
}

/**
 * Percentile bands: x = percentile 0..100 of step time, each stacked into
 * the split of the rank there (ms, top of the stack first), the rank named
 * for the tooltip.
 */
export function percentileBands(r: RunRanks): { xs: number[]; stacks: { part: SplitPart; values: number[] }[]; ranks: number[] } {
  const p = r.percentiles;
  return {
    xs: p.map((x) => x.pct),
    ranks: p.map((x) => x.rank),
    stacks: stackParts(
      p.length,
      SPLIT_PARTS.map((s) => s.part),
      (part, i) => (p[i]?.[part] ?? 0) / 1000,
    ),
  };
}

/** Both runs' histograms over their shared bins: x = each bin's middle in ms, ranks per bin per side. */
export function rankHistogram(sides: readonly { side: Side; ranks: RunRanks }[]): { xs: number[]; widthMs: number; series: { side: Side; counts: number[] }[] } {
  const edges = sides[0]?.ranks.histogram.edges_us ?? [];
  const xs = edges.slice(1).map((e, i) => ((edges[i] ?? 0) + e) / 2000);
  return {
    xs,
    widthMs: edges.length > 1 ? ((edges[1] ?? 0) - (edges[0] ?? 0)) / 1000 : 0,
    series: sides.map((s) => ({ side: s.side, counts: s.ranks.histogram.counts })),
  };
}

const QUANTITY_LABELS: Record<string, string> = {
  step_time_us: "Step time",
  computation_us: "Computation",
  communication_us: "Communication",
  idle_us: "Idle (waiting)",
};

/** The spread table's percentiles, as columns ("min", "p50", ..., "max"). */
export const SPREAD_SHOWN = [0, 50, 90, 99, 100] as const;

export function percentileLabel(pct: number): string {
  return pct === 0 ? "min" : pct === 100 ? "max" : `p${pct}`;
}

/** Each quantity's own distribution over a run's ranks, in ms: one row per quantity, `SPREAD_SHOWN` then the mean. */
export function spreadRows(r: RunRanks): { quantity: string; label: string; cells: string[] }[] {
  return r.spread.map((s) => ({
    quantity: s.quantity,
    label: QUANTITY_LABELS[s.quantity] ?? s.quantity,
    cells: [...SPREAD_SHOWN.map((p) => formatMsWithUnit(s.values[r.spread_percentiles.indexOf(p)])), formatMsWithUnit(s.mean)],
  }));
}

export type NamedPercentileRow = PercentileDeltaRow & { name: string; rank: number };

/** Rows of the by-percentile table: named "p99", sorted as numbers by their percentile. */
export function namedPercentileRows(rows: readonly PercentileDeltaRow[]): NamedPercentileRow[] {
  // `rank` carries the percentile so the name column sorts as numbers (rankOrder).
  return rows.map((r) => ({ ...r, name: percentileLabel(r.pct), rank: r.pct }));
}

export function percentileDeltaColumns(): Column[] {
  return buildColumns(RANK_METRICS, false, RANK_PRIMARY).map((c) => (c.role === "name" ? { ...c, label: "Percentile", title: "Percentile over the ranks" } : c));
}
