import { describe, expect, it } from "vitest";
import type { DistributedResponse, RankDeltaRow, RankRow, RunInfo } from "../src/api";
import { worker } from "./fixtures";
import {
  answerSides,
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

/** Median, distances and straggler filled in the way the server does (analysis/distributed.py). */
function side(runName: string, ranks: RankRow[]): NamedRanks {
  if (ranks.length === 0) return { run: runName, ranks, slowest: null, median_step_time_us: null };
  const times = ranks.map((r) => r.step_time_us).sort((a, b) => a - b);
  const mid = Math.floor(times.length / 2);
  const median = times.length % 2 ? (times[mid] as number) : ((times[mid - 1] as number) + (times[mid] as number)) / 2;
  const rows = ranks.map((r) => ({ ...r, vs_median_us: r.step_time_us - median, vs_median_pct: median ? (100 * (r.step_time_us - median)) / median : null }));
  const slow = rows.reduce((a, b) => (b.step_time_us > a.step_time_us ? b : a));
  return {
    run: runName,
    ranks: rows,
    slowest: { worker: slow.worker, rank: slow.rank, step_time_us: slow.step_time_us, vs_median_us: slow.vs_median_us, vs_median_pct: slow.vs_median_pct },
    median_step_time_us: median,
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
    };
    expect(unmatchedRanks(d)).toEqual([
      { rank: 2, only: "baseline", run: "job" },
      { rank: 5, only: "experimental", run: "small" },
    ]);
  });
});
