import { describe, expect, it } from "vitest";
import type { DistributedResponse, PercentileDeltaRow, RankDeltaRow, RankRow, RunInfo, RunRanks } from "../src/api";
import { worker } from "./fixtures";
import {
  answerComplete,
  answerSides,
  coverageNotes,
  namedPercentileRows,
  percentileBands,
  percentileDeltaColumns,
  rankChartKind,
  rankHistogram,
  rankProgress,
  ranksToRead,
  slowestRanks,
  spreadRows,
  distributedPlan,
  distributedTabShown,
  namedRankDeltaRows,
  namedRankRows,
  rankBars,
  rankCount,
  rankCoverageNote,
  rankDeltaColumns,
  rankOrder,
  rankTableSort,
  runFacts,
  runNotes,
  runRankColumns,
  stragglerText,
  unmatchedRanks,
  type NamedRanks,
} from "../src/model/distributed";
import { cellText, sortRows } from "../src/model/tableModel";

const run = (name: string, workers: number, kinds: RunInfo["kinds"] = ["trace"]): RunInfo => ({
  name,
  workers: Array.from({ length: workers }, (_, i) => worker(`w${i}`, ["1"])),
  kinds,
  status: "ready",
  error: null,
  warnings: [],
  recordings: [],
});

/** A rank whose step is split [computation, communication, idle] µs. */
function rank(r: number, split: [number, number, number], over: Partial<RankRow> = {}): RankRow {
  const [c, m, i] = split;
  return {
    worker: `w${r}`, rank: r, rank_from_trace: true, rank_source: "trace", world_size: 8, backend: "nccl", steps: 4,
    step_time_us: c + m + i, computation_us: c, communication_us: m, idle_us: i,
    vs_median_us: 0, vs_median_pct: null, ...over,
  };
}

const SPREAD_PCTS = [0, 1, 5, 10, 25, 50, 75, 90, 95, 99, 100];
const QUANTITIES = ["step_time_us", "computation_us", "communication_us", "idle_us"] as const;
/** The index of percentile p in n sorted values, as analysis/rank_distribution.py:position. */
const at = (p: number, n: number) => Math.min(n - 1, Math.floor((p / 100) * (n - 1) + 0.5));
const allRead = (n: number): RunRanks["coverage"] => ({
  total: n, ready: n, loading: 0, failed: 0, failures: [], warned: 0, warnings: [], left_out: 0, limit: 20000, limit_variable: "TB_PIPELINE_MAX_RANKS",
});

/** Median, distances, straggler and distribution filled in the way the server does (analysis/distributed.py, rank_distribution.py). */
function side(runName: string, ranks: RankRow[], coverage: Partial<RunRanks["coverage"]> = {}): NamedRanks {
  const cov = { ...allRead(ranks.length), ...coverage };
  const empty = { slowest_ranks: [], percentiles: [], spread_percentiles: SPREAD_PCTS, spread: [], histogram: { edges_us: [], counts: [] }, coverage: cov };
  if (ranks.length === 0) return { run: runName, ranks, slowest: null, median_step_time_us: null, ...empty };
  const times = ranks.map((r) => r.step_time_us).sort((a, b) => a - b);
  const mid = Math.floor(times.length / 2);
  const median = times.length % 2 ? (times[mid] as number) : ((times[mid - 1] as number) + (times[mid] as number)) / 2;
  const rows = ranks.map((r) => ({ ...r, vs_median_us: r.step_time_us - median, vs_median_pct: median ? (100 * (r.step_time_us - median)) / median : null }));
  const slowFirst = [...rows].sort((a, b) => b.step_time_us - a.step_time_us || a.rank - b.rank);
  const slow = slowFirst[0] as RankRow;
  const asc = [...slowFirst].reverse().sort((a, b) => a.step_time_us - b.step_time_us || a.rank - b.rank);
  return {
    run: runName,
    ranks: rows,
    slowest: { worker: slow.worker, rank: slow.rank, step_time_us: slow.step_time_us, vs_median_us: slow.vs_median_us, vs_median_pct: slow.vs_median_pct },
    median_step_time_us: median,
    ...empty,
    slowest_ranks: slowFirst.slice(0, 10),
    percentiles: Array.from({ length: 101 }, (_, p) => {
      const r = asc[at(p, asc.length)] as RankRow;
      return { pct: p, rank: r.rank, worker: r.worker, step_time_us: r.step_time_us, computation_us: r.computation_us, communication_us: r.communication_us, idle_us: r.idle_us };
    }),
    spread: QUANTITIES.map((q) => {
      const v = rows.map((r) => r[q]).sort((a, b) => a - b);
      return { quantity: q, values: SPREAD_PCTS.map((p) => v[at(p, v.length)] as number), mean: v.reduce((a, b) => a + b, 0) / v.length };
    }),
  };
}

function deltaRow(r: number, b: number, e: number): RankDeltaRow {
  const pct = (x: number, y: number) => (x === 0 ? null : (100 * (y - x)) / x);
  return {
    rank: r, baseline_worker: `w${r}`, experimental_worker: `w${r}`,
    baseline_step_time_us: b, experimental_step_time_us: e, delta_step_time_us: e - b, delta_step_time_pct: pct(b, e),
    baseline_computation_us: b, experimental_computation_us: e, delta_computation_us: e - b, delta_computation_pct: pct(b, e),
    baseline_communication_us: 0, experimental_communication_us: 0, delta_communication_us: 0, delta_communication_pct: null,
    baseline_idle_us: 0, experimental_idle_us: 0, delta_idle_us: 0, delta_idle_pct: null,
  };
}

describe("which runs the tab shows", () => {
  const runs = [run("job", 2), run("solo", 1), run("stats", 0, ["pipeline"])];

  it("offers the tab only when a picked run has several ranks", () => {
    expect(rankCount(runs, "job")).toBe(2);
    expect(rankCount(runs, "stats")).toBe(0);
    expect(rankCount(runs, "gone")).toBe(0);
    expect(distributedTabShown(runs, "solo", "job")).toBe(true);
    expect(distributedTabShown(runs, "solo", "solo")).toBe(false);
    expect(distributedTabShown(runs, "solo", "stats")).toBe(false);
  });

  it("asks for the pair, one run, or nothing", () => {
    expect(distributedPlan(runs, "job", "solo")).toEqual({ kind: "pair", baseline: "job", experimental: "solo" });
    expect(distributedPlan(runs, "job", "job")).toEqual({ kind: "single", run: "job", side: "baseline", missing: null });
    expect(distributedPlan(runs, "job", "stats")).toEqual({ kind: "single", run: "job", side: "baseline", missing: "stats" });
    expect(distributedPlan(runs, "stats", "job")).toEqual({ kind: "single", run: "job", side: "experimental", missing: "stats" });
    expect(distributedPlan(runs, "stats", "stats")).toEqual({ kind: "none", picked: ["stats"] });
  });

  it("labels a one-run answer with the side it was asked as", () => {
    const d: DistributedResponse = {
      baseline: { run: "job", worker: "", span: "" },
      experimental: null,
      baseline_ranks: side("job", [rank(0, [1, 1, 1])]),
      experimental_ranks: null,
      rows: [],
      unmatched_ranks: [],
      by_percentile: [],
      complete: true,
    };
    const plan = distributedPlan(runs, "stats", "job");
    expect(answerSides(d, plan).map((s) => s.side)).toEqual(["experimental"]);
  });
});

describe("distributedInfo and the straggler in words", () => {
  it("lists world size, backend and where rank numbers come from", () => {
    const facts = Object.fromEntries(runFacts(side("job", [rank(0, [1, 0, 0]), rank(1, [1, 0, 0])])).map((f) => [f.label, f.value]));
    expect(facts).toEqual({ "Ranks (trace files)": "2", "World size": "8", Backend: "nccl", "Rank numbers": "from each trace's distributedInfo" });
    const bare = runFacts(side("cpu", [rank(0, [1, 0, 0], { world_size: null, backend: null, rank_from_trace: false, rank_source: "order" })]));
    expect(bare.map((f) => f.value)).toEqual(["1", "not in the traces", "not in the traces", "the files' order (the traces' ranks are missing or repeat)"]);
    const named = runFacts(side("cpu", [rank(3, [1, 0, 0], { rank_from_trace: false, rank_source: "name" })]));
    expect(named[3]?.value).toBe("from the worker names (rankN; the traces' ranks are missing or repeat)");
  });

  it("says when the run holds only some ranks of the job, or mixes jobs", () => {
    expect(runNotes(side("job", [rank(0, [1, 0, 0]), rank(1, [1, 0, 0])]))).toEqual([
      "The job had 8 ranks; this run holds 2 of them, so the straggler is the slowest of those.",
    ]);
    expect(runNotes(side("solo", [rank(1, [1, 0, 0])]))).toEqual(["The job had 8 ranks; this run holds 1 of them."]);
    const full = side("job", [rank(0, [1, 0, 0], { world_size: 2 }), rank(1, [1, 0, 0], { world_size: 2 })]);
    expect(runNotes(full)).toEqual([]);
    const mixed = side("job", [rank(0, [1, 0, 0], { world_size: 2 }), rank(1, [1, 0, 0], { world_size: 2, backend: "gloo" })]);
    expect(runNotes(mixed)[0]).toMatch(/disagree/);
  });

  it("names the straggler with its distance from the median rank, in ms and %", () => {
    // Step times 10, 11, 12, 20 ms: median 11.5 ms, rank 3 is 8.5 ms (73.9 %) over it.
    const r = side("job", [rank(0, [10_000, 0, 0]), rank(1, [9_000, 2_000, 0]), rank(2, [8_000, 2_000, 2_000]), rank(3, [10_000, 5_000, 5_000])]);
    const s = stragglerText(r);
    expect(s?.lead).toBe("Rank 3 (w3) is the straggler: 20.000 ms per step,");
    expect(s?.delta).toEqual({ us: 8_500, text: "+8.500 ms (+73.9 %)" });
    expect(s?.tail).toBe("over the median rank's 11.500 ms.");
  });

  it("has no straggler when every rank is as fast, and none with one rank", () => {
    const even = stragglerText(side("job", [rank(0, [5_000, 0, 0]), rank(1, [4_000, 1_000, 0])]));
    expect(even?.delta).toBeNull();
    expect(even?.lead).toMatch(/^No straggler/);
    expect(stragglerText(side("solo", [rank(0, [5_000, 0, 0])]))).toBeNull();
    expect(stragglerText(side("empty", []))).toBeNull();
  });

  it("explains one rank, stepless ranks and empty runs; nothing for a healthy run", () => {
    expect(rankCoverageNote(side("solo", [rank(1, [5, 0, 0])]))?.title).toBe("“solo” has one rank");
    expect(rankCoverageNote(side("job", [rank(0, [0, 0, 0], { steps: 0 }), rank(1, [0, 0, 0], { steps: 0 })]))?.title).toBe("No rank of “job” has any step time");
    // Empty traces: one whole-trace step of zero length each; no straggler to name among them.
    const empty = side("job", [rank(0, [0, 0, 0], { steps: 1 }), rank(1, [0, 0, 0], { steps: 1 })]);
    expect(rankCoverageNote(empty)?.title).toBe("No rank of “job” has any step time");
    expect(stragglerText(empty)).toBeNull();
    const some = rankCoverageNote(side("job", [rank(0, [5, 0, 0]), rank(1, [0, 0, 0], { steps: 0 })]));
    expect(some?.title).toBe("1 of 2 ranks of “job” have no step time");
    expect(some?.body).toBe("rank 1 (w1): their times are zero.");
    expect(rankCoverageNote(side("none", []))?.title).toBe("“none” has no trace files");
    expect(rankCoverageNote(side("job", [rank(0, [5, 0, 0]), rank(1, [6, 0, 0])]))).toBeNull();
  });
});

describe("per-rank stacked bars", () => {
  it("stacks computation, communication and idle in ms, total first", () => {
    const bars = rankBars([rank(0, [1_000, 500, 250]), rank(1, [2_000, 0, 1_000])], 1);
    expect(bars.xs).toEqual([1, 2]);
    expect(bars.labels).toEqual(["0", "1"]);
    expect(bars.stacks.map((s) => s.part)).toEqual(["idle_us", "communication_us", "computation_us"]);
    expect(bars.stacks[0]?.values).toEqual([1.75, 3]);
    expect(bars.stacks[1]?.values).toEqual([1.5, 2]);
    expect(bars.stacks[2]?.values).toEqual([1, 2]);
    expect(bars.ticks).toEqual([1, 2]);
  });

  it("labels a stride of many ranks, always the straggler", () => {
    const ranks = Array.from({ length: 128 }, (_, i) => rank(i, [1_000, 0, 0]));
    const bars = rankBars(ranks, 77, 16);
    expect(bars.ticks.length).toBeLessThanOrEqual(17);
    expect(bars.ticks).toContain(78);
    expect(bars.labels[77]).toBe("77");
  });
});

describe("rank tables", () => {
  it("puts the largest change of step time first when an experimental run is picked", () => {
    const rows = namedRankDeltaRows([deltaRow(0, 10, 11), deltaRow(1, 10, 4), deltaRow(2, 10, 12)]);
    expect(sortRows(rows, rankTableSort(true), rankOrder).map((r) => r.rank)).toEqual([1, 2, 0]);
    const cols = rankDeltaColumns();
    expect(cols[0]).toMatchObject({ key: "name", label: "Rank" });
    expect(cols.slice(1, 5).map((c) => c.key)).toEqual(["baseline_step_time_us", "experimental_step_time_us", "delta_step_time_us", "delta_step_time_pct"]);
    const delta = cols.find((c) => c.key === "delta_step_time_us");
    expect(delta && cellText(rows[1] as (typeof rows)[number], delta)).toBe("−0.006");
  });

  it("names rows by rank and worker files, and sorts them as numbers", () => {
    const rows = namedRankDeltaRows([deltaRow(10, 1, 1), deltaRow(2, 1, 1), { ...deltaRow(1, 1, 1), experimental_worker: "x1" }]);
    expect(rows.map((r) => r.name)).toEqual(["rank 10 · w10", "rank 2 · w2", "rank 1 · w1 / x1"]);
    expect(sortRows(rows, { key: "name", dir: "asc" }, rankOrder).map((r) => r.rank)).toEqual([1, 2, 10]);
    // Equal deltas fall back to rank order too.
    expect(sortRows(rows, rankTableSort(true), rankOrder).map((r) => r.rank)).toEqual([1, 2, 10]);
  });

  it("shows one run's ranks slowest first with their distance from the median", () => {
    const r = side("job", [rank(0, [10_000, 0, 0]), rank(1, [9_000, 2_000, 0]), rank(2, [8_000, 2_000, 2_000])]);
    const rows = sortRows(namedRankRows(r.ranks), rankTableSort(false), rankOrder);
    expect(rows.map((x) => x.name)).toEqual(["rank 2 · w2", "rank 1 · w1", "rank 0 · w0"]);
    const cols = runRankColumns();
    const text = (key: string) => cellText(rows[0] as (typeof rows)[number], cols.find((c) => c.key === key) as (typeof cols)[number]);
    expect(text("steps")).toBe("4");
    expect(text("step_time_us")).toBe("12.000");
    expect(text("communication_us")).toBe("2.000");
    expect(text("vs_median_us")).toBe("+1.000");
    expect(text("vs_median_pct")).toBe("+9.1 %");
  });

  it("says which run has each unmatched rank", () => {
    const d: DistributedResponse = {
      baseline: { run: "job", worker: "", span: "" },
      experimental: { run: "small", worker: "", span: "" },
      baseline_ranks: side("job", [rank(0, [1, 0, 0]), rank(1, [1, 0, 0]), rank(2, [1, 0, 0])]),
      experimental_ranks: side("small", [rank(0, [1, 0, 0]), rank(1, [1, 0, 0]), rank(5, [1, 0, 0])]),
      rows: [deltaRow(0, 1, 1), deltaRow(1, 1, 1)],
      unmatched_ranks: [2, 5],
      by_percentile: [],
      complete: true,
    };
    expect(unmatchedRanks(d)).toEqual([
      { rank: 2, only: "baseline", run: "job" },
      { rank: 5, only: "experimental", run: "small" },
    ]);
  });
});

describe("thousands of ranks", () => {
  // 200 ranks: rank r takes 1,000 + r µs of computation and r µs of communication.
  const many = side("big", Array.from({ length: 200 }, (_, r) => rank(r, [1_000 + r, r, 0])));

  it("draws a bar per rank up to 64 ranks, the distribution beyond", () => {
    expect(rankChartKind(64)).toBe("bars");
    expect(rankChartKind(65)).toBe("distribution");
  });

  it("says how many ranks are ready while the others load, and asks again until complete", () => {
    const loading = side("big", many.ranks.slice(0, 150), { total: 200, ready: 150, loading: 50 });
    expect(rankProgress(loading)?.text).toBe("150 of 200 ranks of “big” ready; 50 still loading. The view fills in as they are read.");
    expect(rankProgress(many)).toBeNull();
    const facts = Object.fromEntries(runFacts(loading).map((f) => [f.label, f.value]));
    expect(facts["Ranks (trace files)"]).toBe("150 of 200 read");
    // The charts and notes go by the ranks the run holds, not those read so far: nothing switches as they load.
    const early = side("big", many.ranks.slice(0, 10).map((r) => ({ ...r, world_size: 300 })), { total: 200, ready: 10, loading: 190 });
    expect(rankChartKind(ranksToRead(early))).toBe("distribution");
    expect(runNotes(early)).toEqual(["The job had 300 ranks; this run holds 200 of them, so the straggler is the slowest of those."]);
    expect(ranksToRead(side("big", many.ranks, { total: 250, left_out: 50 }))).toBe(200);
    const d = { complete: false } as DistributedResponse;
    expect(answerComplete(d)).toBe(false);
  });

  it("names the limit and the variable that raises it, and why ranks failed", () => {
    const limited = side("big", many.ranks, { total: 250, left_out: 50, limit: 200, failed: 2, failures: [{ worker: "w7", text: "ValueError: no events" }] });
    const notes = coverageNotes(limited);
    expect(notes.map((n) => n.kind)).toEqual(["left-out", "failed"]);
    expect(notes[0]?.title).toBe("50 of 250 ranks of “big” are not shown");
    expect(notes[0]?.body).toContain("Set TB_PIPELINE_MAX_RANKS=250 before starting TensorBoard");
    expect(notes[1]?.body).toBe("w7: ValueError: no events; …");
    expect(coverageNotes(many)).toEqual([]);
  });

  it("lists the slowest ranks, slowest first", () => {
    const slow = slowestRanks(many);
    expect(slow.map((x) => x.rank)).toEqual([199, 198, 197, 196, 195, 194, 193, 192, 191, 190]);
    expect(slow[0]?.text).toBe("rank 199 (w199): 1.398 ms per step, +0.199 ms against the median rank");
  });

  it("stacks the split of the rank at each percentile so the parts add up to its step", () => {
    const bands = percentileBands(many);
    expect(bands.xs).toEqual(Array.from({ length: 101 }, (_, p) => p));
    expect(bands.ranks[50]).toBe(100); // position round(0.5 * 199) = 100: rank 100
    const top = bands.stacks[0]?.values[50] ?? 0; // the stack's top: the whole step, in ms
    expect(top).toBeCloseTo((1_000 + 100 + 100) / 1000, 9);
  });

  it("puts both runs' histograms on the shared bins, x at each bin's middle in ms", () => {
    const b = { ...many, histogram: { edges_us: [1000, 1200, 1400], counts: [100, 100] } };
    const e = { ...many, histogram: { edges_us: [1000, 1200, 1400], counts: [50, 150] } };
    const h = rankHistogram([{ side: "baseline", ranks: b }, { side: "experimental", ranks: e }]);
    expect(h.xs).toEqual([1.1, 1.3]);
    expect(h.widthMs).toBeCloseTo(0.2, 12);
    expect(h.series.map((s) => s.counts)).toEqual([[100, 100], [50, 150]]);
  });

  it("gives each part's min, p50, p90, p99, max and mean in ms", () => {
    const rows = spreadRows(many);
    expect(rows.map((r) => r.label)).toEqual(["Step time", "Computation", "Communication", "Idle (waiting)"]);
    // Communication of rank r is r µs: min 0, p50 rank 100, p90 rank 179, p99 rank 197, max 199, mean 99.5.
    expect(rows[2]?.cells).toEqual(["0.000 ms", "0.100 ms", "0.179 ms", "0.197 ms", "0.199 ms", "0.100 ms"]);
  });

  it("orders the by-percentile rows as numbers: p5 before p10 before p100", () => {
    const row = (pct: number): PercentileDeltaRow => ({ ...deltaRow(0, 1, 2), pct } as unknown as PercentileDeltaRow);
    const rows = namedPercentileRows([row(100), row(10), row(5), row(0)]);
    const sorted = sortRows(rows, { key: "name", dir: "asc" }, rankOrder);
    expect(sorted.map((r) => r.name)).toEqual(["min", "p5", "p10", "max"]);
    expect(percentileDeltaColumns()[0]?.label).toBe("Percentile");
  });
});
