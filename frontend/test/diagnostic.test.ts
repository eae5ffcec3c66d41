import { describe, expect, it } from "vitest";
import type { DiagnosticCurve, DiagnosticPoint, DiagnosticResponse, DiagnosticStage, DiagnosticStageDiff, DiffDiagnosticResponse, RunInfo } from "../src/api";
import {
  bestLevelChangeText,
  bestText,
  CHANGE_LABELS,
  crowdedText,
  curveSeries,
  diagnosticPlan,
  environmentText,
  formatQps,
  formatRatio,
  formatRatioInterval,
  gilRows,
  gilSummary,
  levelRange,
  levels,
  levelTick,
  metricMax,
  pairStages,
  pointRows,
  skippedLevelLines,
  statusText,
  threadsText,
  verdictTone,
} from "../src/model/diagnostic";

const run = (name: string, kinds: RunInfo["kinds"]): RunInfo => ({ name, workers: [], kinds, status: "ready", error: null, warnings: [], recordings: [] });

function point(concurrency: number, qps: number, cpu_pct: number, peak_memory_bytes = 1 << 20): DiagnosticPoint {
  return {
    concurrency,
    qps,
    speedup: null,
    p50_latency_s: 0.0012,
    p90_latency_s: 0.004,
    cpu_pct,
    machine_cpu_pct: 150,
    peak_memory_bytes,
    items: 100,
    errors: 0,
    duration_s: 0.3,
    recordings: 1,
    cut_short: false,
    first_error: null,
    qps_low: qps * 0.9,
    qps_high: qps * 1.1,
    cpu_pct_low: null,
    cpu_pct_high: null,
    intra_op_threads: 2,
    cores_per_caller: 1.02,
    cut_reason: null,
  };
}

function curve(executor: DiagnosticCurve["executor"], pts: DiagnosticPoint[], best: number): DiagnosticCurve {
  const p = pts.find((q) => q.concurrency === best)!;
  return { executor, best_concurrency: best, best_qps: p.qps, points: pts };
}

function stage(name: string, over: Partial<DiagnosticStage> = {}): DiagnosticStage {
  return {
    stage: name,
    index: 0,
    kind: "map",
    verdict: "gil_bound",
    label: "GIL-bound",
    reason: "threads flat",
    best_thread_concurrency: 2,
    best_thread_qps: 205.2,
    best_process_concurrency: 1,
    best_process_qps: 214,
    thread_speedup: 1.4,
    process_speedup: 1,
    peak_memory_bytes: 3 << 20,
    items: 300,
    errors: 0,
    first_error: null,
    inputs: 64,
    input_errors: 0,
    process_skipped: null,
    skipped: null,
    cut_short: false,
    curves: [
      curve("thread", [point(1, 146.5, 17), point(2, 205.2, 28), point(4, 201, 0)], 2),
      curve("process", [point(1, 214, 23, 2 << 20), point(2, 182, 22, 3 << 20)], 1),
    ],
    gil: {
      concurrency: 2,
      total_samples: 90,
      held_share: 0.987,
      skipped: null,
      top: [{ function: "decode_python", file: "/x/samples/diagnostic_sample.py", line: 25, samples: 81, share: 0.9 }],
    },
    others_cpu_pct: 0,
    crowded: false,
    cores_by_itself: null,
    oversubscription: null,
    skipped_levels: [],
    ...over,
  };
}

function response(runName: string, stages: DiagnosticStage[], over: Partial<DiagnosticResponse> = {}): DiagnosticResponse {
  return { run: runName, worker: "", span: "", interval_confidence: 0.99, complete: true, cut_short: false, reason: null, elapsed_s: 12, environment: null, stages, warnings: [], group: null, ...over };
}

describe("which runs the tab shows", () => {
  const runs = [run("a", ["diagnostic"]), run("b", ["trace", "diagnostic"]), run("t", ["trace"])];
  it("compares two runs that both have results", () => {
    expect(diagnosticPlan(runs, "a", "b")).toEqual({ kind: "pair", baseline: "a", experimental: "b" });
  });
  it("shows the one side that has results and names the other", () => {
    expect(diagnosticPlan(runs, "a", "t")).toEqual({ kind: "single", run: "a", side: "baseline", missing: "t" });
    expect(diagnosticPlan(runs, "t", "b")).toEqual({ kind: "single", run: "b", side: "experimental", missing: "t" });
  });
  it("shows one run once when it is picked twice", () => {
    expect(diagnosticPlan(runs, "a", "a")).toEqual({ kind: "single", run: "a", side: "baseline", missing: null });
  });
  it("says so when neither has results", () => {
    expect(diagnosticPlan(runs, "t", "t")).toEqual({ kind: "none", picked: ["t"] });
  });
});

describe("curves over concurrency", () => {
  const s = stage("decode");
  it("aligns both executors to the union of levels, null where a level was not run", () => {
    const xs = levels([s]);
    expect(xs).toEqual([1, 2, 4]);
    expect(curveSeries(s, "qps", xs)).toEqual({ thread: [146.5, 205.2, 201], process: [214, 182, null] });
    expect(curveSeries(s, "cpu_pct", xs).thread).toEqual([17, 28, 0]);
    expect(curveSeries(s, "peak_memory_bytes", xs).process).toEqual([2 << 20, 3 << 20, null]);
  });
  it("shares levels and y range across the two sides", () => {
    const other = stage("decode", { curves: [curve("thread", [point(1, 50, 90), point(8, 400, 180)], 8)] });
    expect(levels([s, other, undefined])).toEqual([1, 2, 4, 8]);
    expect(metricMax([s, other], "qps")).toBe(400);
    expect(metricMax([undefined], "qps")).toBe(0);
  });
  it("a stage with no process curve has an all-null process series", () => {
    const t = stage("t", { curves: [curve("thread", [point(1, 10, 5)], 1)] });
    expect(curveSeries(t, "qps", [1]).process).toEqual([null]);
  });
  it("pads the log2 range around the levels", () => {
    const [lo, hi] = levelRange([1, 2, 4]);
    expect(lo).toBeLessThan(1);
    expect(hi).toBeGreaterThan(4);
    expect(levelRange([])).toEqual([0.5, 2]);
  });
  it("labels whole levels only, even when log2 splits come back inexact", () => {
    expect([1, 2, 3.9999999999, 8, 0.5, 2.5].map(levelTick)).toEqual(["1", "2", "4", "8", "", ""]);
  });
});

describe("words", () => {
  it("best concurrency per executor, singular for one worker, and why not measured", () => {
    const s = stage("decode");
    expect(bestText(s, "thread")).toBe("2 threads (205 QPS)");
    expect(bestText(s, "process")).toBe("1 process (214 QPS)");
    const skipped = stage("x", { best_process_concurrency: null, best_process_qps: null, process_skipped: "fn does not pickle" });
    expect(bestText(skipped, "process")).toBe("not measured (fn does not pickle)");
  });
  it("GIL holders with a short location and share in %", () => {
    const rows = gilRows(stage("decode"));
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ function: "decode_python", where: "diagnostic_sample.py:25", line: 25 });
    expect(rows[0]!.sharePct).toBeCloseTo(90);
    // The measuring loop between calls has no source file: no ":0" to look at.
    const loop = { function: "(not your code: the measuring loop between calls)", file: "", line: 0, samples: 9, share: 0.1 };
    const between = stage("x", { gil: { concurrency: 2, total_samples: 90, held_share: 1, skipped: null, top: [loop] } });
    expect(gilRows(between)[0]?.where).toBe("—");
    expect(gilSummary(stage("decode"))).toBe("At 2 threads the GIL was held 99 % of the sampled time (90 samples).");
    expect(gilSummary(stage("x", { gil: { concurrency: 4, total_samples: 0, held_share: 0, skipped: "py-spy not found", top: [] } }))).toBe(
      "GIL not sampled: py-spy not found",
    );
    expect(gilRows(stage("x", { gil: null }))).toEqual([]);
  });
  it("tones and number formats", () => {
    expect(verdictTone("scales")).toBe("good");
    expect(verdictTone("gil_bound")).toBe("bad");
    expect(verdictTone("inconclusive")).toBe("neutral");
    expect(verdictTone("oversubscribed")).toBe("bad");
    expect(verdictTone("parallel_inside")).toBe("neutral");
    expect(formatQps(273.08)).toBe("273");
    expect(formatQps(4.26)).toBe("4.3");
    expect(formatRatio(0.5234)).toBe("×0.52");
    expect(formatRatio(null)).toBe("—");
  });
  it("environment and partial results in words", () => {
    const env: NonNullable<DiagnosticResponse["environment"]> = {
      cores: 2,
      python: "3.11.7 (main, May  9 2026) [GCC 12.2.0]",
      implementation: "cpython",
      free_threaded: false,
      gil_enabled: true,
      process_start_method: "fork",
      levels: [1, 2, 4],
      executors: ["thread", "process"],
      warmup_s: 0.05,
      duration_s: 0.3,
      source: "function",
      hostname: "vm",
      intra_op_threads: null,
      process_intra_op_threads: null,
      time_limit_s: null,
    };
    expect(environmentText(env)).toBe("2 cores · CPython 3.11.7 (GIL build) · processes by fork · levels 1, 2, 4 · 0.3 s per level");
    const dataloader = { ...env, intra_op_threads: 2, process_intra_op_threads: 1, time_limit_s: 180 };
    expect(environmentText(dataloader)).toBe(
      "2 cores · CPython 3.11.7 (GIL build) · processes by fork · levels 1, 2, 4 · 0.3 s per level · time budget 180 s · torch: 2 intra-op threads in threads, 1 intra-op thread a worker process",
    );
    expect(threadsText({ ...env, intra_op_threads: 16 })).toBe("torch: 16 intra-op threads in threads, inherited by processes");
    expect(statusText(response("a", []))).toBeNull();
    expect(statusText(response("a", [], { cut_short: true, reason: "Ctrl-C" }))).toContain("cut short (Ctrl-C)");
    expect(statusText(response("a", [], { complete: false, cut_short: true }))).toContain("has not finished");
  });
  it("point rows keep the raw QPS and format the rest", () => {
    const rows = pointRows(stage("decode"));
    expect(rows.map((r) => r.key)).toEqual(["thread-1", "thread-2", "thread-4", "process-1", "process-2"]);
    expect(rows[1]).toMatchObject({ qps: "205", rawQps: 205.2, p50: "1.20 ms", cpu: "28 %", memory: "1 MiB", threads: "2", coresPerCall: "1.0", cutReason: null });
    const unknown = stage("a", { curves: [curve("thread", [{ ...point(1, 100, 50), intra_op_threads: null, cores_per_caller: null, cut_reason: "Ctrl-C" }], 1)] });
    expect(pointRows(unknown)[0]).toMatchObject({ threads: "—", coresPerCall: "—", cutReason: "Ctrl-C" });
  });
  it("levels not run, one line each", () => {
    expect(skippedLevelLines(stage("a"))).toEqual([]);
    const skipped = stage("a", {
      skipped_levels: [{ executor: "process", concurrency: 8, cause: "time", reason: "would take about 40 s, 12 s left of the stage's 45 s share of the time budget" }],
    });
    expect(skippedLevelLines(skipped)).toEqual(["processes ×8: time: would take about 40 s, 12 s left of the stage's 45 s share of the time budget"]);
  });
});

function diffRow(over: Partial<DiagnosticStageDiff>): DiagnosticStageDiff {
  return {
    stage: "s",
    in_baseline: true,
    in_experimental: true,
    verdict_baseline: null,
    verdict_experimental: null,
    verdict_changed: false,
    change: "same",
    change_reason: "same verdict (scales)",
    best_thread_qps_ratio: null,
    best_thread_qps_ratio_low: null,
    best_thread_qps_ratio_high: null,
    best_process_qps_ratio: null,
    best_process_qps_ratio_low: null,
    best_process_qps_ratio_high: null,
    best_thread_concurrency_change: null,
    best_process_concurrency_change: null,
    ...over,
  };
}

describe("noise", () => {
  it("a ratio with half its interval, bare without one", () => {
    expect(formatRatioInterval(1.03, 0.95, 1.11)).toBe("×1.03 ± 0.08");
    expect(formatRatioInterval(1.03, null, null)).toBe("×1.03");
    expect(formatRatioInterval(null, 0.9, 1.1)).toBe("—");
  });
  it("names every change verdict and the best levels that moved", () => {
    expect(CHANGE_LABELS.within_noise).toBe("within noise");
    expect(bestLevelChangeText(diffRow({ best_thread_concurrency_change: "same", best_process_concurrency_change: null }))).toBeNull();
    expect(bestLevelChangeText(diffRow({ best_thread_concurrency_change: "changed", best_process_concurrency_change: "within_noise" }))).toBe(
      "Best level differs (threads: changed · processes: within noise)",
    );
  });
  it("says when other processes crowded a stage, and the QPS interval of a point", () => {
    expect(crowdedText(stage("a"))).toBeNull();
    expect(crowdedText(stage("a", { crowded: true, others_cpu_pct: 103.4 }))).toContain("up to 103 % CPU");
    const rows = pointRows(stage("a"));
    expect(rows[0]!.qpsInterval).toBe("132–161");
    const bare = stage("a", { curves: [curve("thread", [{ ...point(1, 100, 50), qps_low: null, qps_high: null }], 1)] });
    expect(pointRows(bare)[0]!.qpsInterval).toBe("—");
  });
});

describe("pairs", () => {
  it("matches stages by name in the server's order, a one-sided stage keeps an empty side", () => {
    const diff: DiffDiagnosticResponse = {
      baseline: { run: "a", worker: "", span: "" },
      experimental: { run: "b", worker: "", span: "" },
      baseline_report: response("a", [stage("decode"), stage("old")]),
      experimental_report: response("b", [stage("decode", { verdict: "scales", label: "scales" })]),
      interval_confidence: 0.99,
      stages: [
        diffRow({ stage: "decode", verdict_baseline: "gil_bound", verdict_experimental: "scales", verdict_changed: true, change: "changed", best_thread_qps_ratio: 1.9, best_process_qps_ratio: 1 }),
        diffRow({ stage: "old", in_experimental: false, verdict_baseline: "gil_bound", change: "one_side" }),
      ],
    };
    const pairs = pairStages(diff);
    expect(pairs.map((p) => p.stage)).toEqual(["decode", "old"]);
    expect(pairs[0]!.experimental?.verdict).toBe("scales");
    expect(pairs[1]!.experimental).toBeUndefined();
    expect(pairs[1]!.baseline?.stage).toBe("old");
  });
});
