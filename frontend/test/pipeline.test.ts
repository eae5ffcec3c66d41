import { describe, expect, it } from "vitest";
import type { DiffPipelineStageRow, PipelineReport, PipelineSummaryRow, RunInfo } from "../src/api";
import {
  alignTrend,
  callbackColumns,
  addedRuns,
  extraRunChoices,
  hostTrend,
  hostValueText,
  namedStageRows,
  presentHostMetrics,
  segmentText,
  splitSegments,
  summaryDeltaText,
  summaryPolarity,
  summaryValueText,
  throughputMetric,
  throughputTrend,
  recordingText,
  stageColumns,
  unmeasuredStageNote,
} from "../src/model/pipeline";
import { cellText, cellTitle, defaultSort, pctKey, sortRows } from "../src/model/tableModel";

function report(over: Partial<PipelineReport> = {}): PipelineReport {
  return {
    epilogue: null,
    source: "recorder",
    split: {
      steps: 10, warmup_steps: 0, epilogue_steps: 0, total_s: 0.5, mean_step_s: 0.05, notes: [],
      data_wait_s: 0.02, data_wait_pct: 40, compute_s: 0.025, compute_pct: 50,
      callbacks_s: 0.005, callbacks_pct: 10, other_s: 0, other_pct: 0,
    },
    input_bound: { verdict: "yes", data_wait_pct: 40, summary: "Input-bound", next_step: "Add workers." },
    throughput: {
      steps_per_s: 20, samples_per_s: null,
      series: [
        { t_s: 0, window_s: 0.2, steps: 4, steps_per_s: 20, samples_per_s: null },
        { t_s: 0.2, window_s: 0.2, steps: 4, steps_per_s: 20, samples_per_s: null },
      ],
    },
    stages: [],
    bottleneck: { slowest_stage: null, slowest_busy_pct: null, starving_queue: null, starving_occupancy_pct: null, gil_bound: false, gil_cpu_cores: null, gil_contention_pct: null, loader_part: null, summary: "" },
    callbacks: [],
    host: {
      summary: {
        samples: 2, cpu_pct_mean: 50, cpu_pct_max: 60, rss_bytes_max: 1, mem_used_bytes_max: null,
        disk_read_bytes_per_s_mean: null, disk_write_bytes_per_s_mean: null, net_sent_bytes_per_s_mean: null,
        net_recv_bytes_per_s_mean: null, gpu_util_pct_mean: null, gpu_mem_used_bytes_max: null,
        gil_contention_pct_mean: null, gil_contention_pct_median: null, gil_contention_pct_max: null,
      },
      series: [0.1, 0.3].map((t_s, i) => ({
        t_s, cpu_pct: 40 + 20 * i, rss_bytes: 1e6, mem_used_bytes: null, disk_read_bytes_per_s: null,
        disk_write_bytes_per_s: null, net_sent_bytes_per_s: null, net_recv_bytes_per_s: null, gpu_util_pct: null,
        gpu_mem_used_bytes: null, gil_contention_pct: null,
      })),
    },
    meta: [],
    warnings: [],
    group: null,
    ...over,
  };
}

describe("step split", () => {
  it("gives the four parts in order with the server's shares", () => {
    const segs = splitSegments(report());
    expect(segs.map((s) => [s.part, s.pct])).toEqual([["data_wait", 40], ["compute", 50], ["callbacks", 10], ["other", 0]]);
    expect(segmentText(segs[0]!)).toBe("Data wait 40.0 % (20.000 ms per step)");
  });
  it("says nothing is known for a run without steps", () => {
    const r = report();
    r.split = { ...r.split, steps: 0, data_wait_pct: null, data_wait_s: null };
    expect(segmentText(splitSegments(r)[0]!)).toBe("Data wait —");
  });
});

describe("summary rows", () => {
  const row = (metric: string, unit: PipelineSummaryRow["unit"], b: number | null, e: number | null): PipelineSummaryRow => ({
    metric, label: metric, unit, baseline: b, experimental: e, delta: b !== null && e !== null ? e - b : null, delta_pct: null, significance: null,
  });
  it("prints seconds as ms, shares in points, rates per second", () => {
    const t = row("split.mean_step_s", "s", 0.02, 0.015);
    expect(summaryValueText(t, t.baseline)).toBe("20.000 ms");
    expect(summaryDeltaText(t)).toBe("−5.000 ms");
    const w = row("split.data_wait_pct", "pct", 40, 10);
    expect(summaryDeltaText(w)).toBe("−30.0 pp");
    const r = row("throughput.steps_per_s", "1/s", 37.178, 55.74);
    expect(summaryValueText(r, r.baseline)).toBe("37.18/s");
    expect(summaryPolarity(r)).toBe("higher");
    expect(summaryPolarity(w)).toBe("lower");
    expect(summaryPolarity(row("host.summary.cpu_pct_mean", "pct", 1, 2))).toBe("neutral");
  });
});

describe("trends over several runs", () => {
  it("aligns runs sampled at different times on the union of their times", () => {
    const t = alignTrend([
      { xs: [0, 2], ys: [1, 3] },
      { xs: [1, 2], ys: [10, 30] },
      { xs: [0.5], ys: [7] },
    ]);
    expect(t.xs).toEqual([0, 0.5, 1, 2]);
    expect(t.ys).toEqual([[1, null, null, 3], [null, null, 10, 30], [null, 7, null, null]]);
  });
  it("plots throughput at window middles, one line per run, four runs at once", () => {
    const runs = ["a", "b", "c", "d"].map((name) => ({ name, report: report() }));
    const t = throughputTrend(runs, "steps_per_s");
    expect(t.xs).toEqual([0.1, 0.30000000000000004]);
    expect(t.ys).toHaveLength(4);
    expect(throughputMetric(runs)).toBe("steps_per_s");
  });
  it("uses samples/s only when every run knows its batch sizes", () => {
    const known = report();
    known.throughput = { ...known.throughput, samples_per_s: 100 };
    expect(throughputMetric([{ name: "a", report: known }])).toBe("samples_per_s");
    expect(throughputMetric([{ name: "a", report: known }, { name: "b", report: report() }])).toBe("steps_per_s");
  });
  it("offers only host metrics some run sampled", () => {
    const runs = [{ name: "a", report: report() }];
    expect(presentHostMetrics(runs)).toEqual(["cpu_pct", "rss_bytes"]);
    expect(hostTrend(runs, "cpu_pct").ys).toEqual([[40, 60]]);
  });
  it("plots GIL contention when a run sampled it, as a percentage", () => {
    const sampled = report();
    sampled.host = { ...sampled.host, series: sampled.host.series.map((p, i) => ({ ...p, gil_contention_pct: [55.5, 1.25][i] ?? null })) };
    const runs = [{ name: "a", report: sampled }, { name: "b", report: report() }];
    expect(presentHostMetrics(runs)).toEqual(["cpu_pct", "gil_contention_pct", "rss_bytes"]);
    expect(hostTrend(runs, "gil_contention_pct").ys).toEqual([[55.5, 1.25], [null, null]]);
    expect(hostValueText("gil_contention_pct", 55.5)).toBe(hostValueText("cpu_pct", 55.5));
  });
  it("offers runs with statistics or a trace that are not plotted yet", () => {
    const run = (name: string, kinds: RunInfo["kinds"]): RunInfo => ({ name, workers: [], kinds, status: "ready", error: null, warnings: [], recordings: [] });
    const runs = [run("b", ["pipeline"]), run("e", ["pipeline"]), run("headspace", ["pipeline"]), run("diag", ["diagnostic"]), run("t", ["trace"])];
    expect(extraRunChoices(runs, ["b", "e"])).toEqual(["headspace", "t"]);
  });
  it("keeps the added runs (from the URL) the server still has, besides the pair, in the order added", () => {
    const run = (name: string, kinds: RunInfo["kinds"]): RunInfo => ({ name, workers: [], kinds, status: "ready", error: null, warnings: [], recordings: [] });
    const runs = [run("b", ["pipeline"]), run("e", ["pipeline"]), run("t", ["trace"]), run("h", ["pipeline"]), run("diag", ["diagnostic"])];
    expect(addedRuns(["t", "gone", "b", "diag", "h"], runs, ["b", "e"])).toEqual(["t", "h"]);
  });
});

describe("stage and callback tables", () => {
  const stage = (pipeline_index: number, stage_name: string, delta: number): DiffPipelineStageRow => {
    const r: Record<string, number | string | null> = { pipeline_index, stage_name };
    for (const m of ["concurrency", "qps", "task_mean_s", "task_cpu_mean_s", "put_wait_mean_s", "get_wait_mean_s", "occupancy_pct", "busy_pct"]) {
      r[`baseline_${m}`] = 0;
      r[`experimental_${m}`] = 0;
      r[`delta_${m}`] = 0;
      r[pctKey(m)] = null;
    }
    r.delta_task_mean_s = delta;
    return r as unknown as DiffPipelineStageRow;
  };
  it("names stages, with the pipeline only when there are several", () => {
    expect(namedStageRows([stage(0, "load", 1)]).map((r) => r.name)).toEqual(["load"]);
    expect(namedStageRows([stage(0, "load", 1), stage(1, "load", 2)]).map((r) => r.name)).toEqual(["pipeline 1 · load", "pipeline 2 · load"]);
    expect(namedStageRows([stage(-1, "fetch", 1), stage(0, "load", 2)]).map((r) => r.name)).toEqual(["DataLoader · fetch", "load"]);
  });
  it("sorts by |delta| of the primary statistic by default", () => {
    const rows = namedStageRows([stage(0, "a", 0.001), stage(0, "b", -0.02), stage(0, "c", 0.005)]);
    expect(sortRows(rows, defaultSort("task_mean_s")).map((r) => r.name)).toEqual(["b", "c", "a"]);
  });
  it("shows what a run did not measure as — and says why, never as 0", () => {
    const loader = stage(-1, "fetch", 0.001) as unknown as Record<string, number | string | null>;
    for (const k of ["baseline_qps", "experimental_qps", "delta_qps", "delta_qps_pct", "baseline_busy_pct", "delta_busy_pct"]) loader[k] = null;
    const rows = namedStageRows([loader as unknown as DiffPipelineStageRow]);
    const col = (key: string) => stageColumns().find((c) => c.key === key)!;
    const row = rows[0]!;
    expect(cellText(row, col("baseline_qps"))).toBe("—");
    expect(cellTitle(row, col("baseline_qps"))).toBe("Items/s, baseline: not measured in this run");
    expect(cellTitle(row, col("delta_qps"))).toContain("neither run measured it");
    expect(cellTitle(row, col("delta_busy_pct"))).toContain("the baseline run did not measure it");
    expect(cellTitle(row, col("baseline_task_mean_s"))).toBe("Task mean (ms), baseline: 0.000");
    const note = unmeasuredStageNote(rows)!;
    expect(note).toContain("Items/s, Workers busy %");
    expect(note).toContain("no queue");
    expect(unmeasuredStageNote(namedStageRows([stage(0, "load", 1)]))).toBeNull();
    // An SPDL stage with a gap has no DataLoader reason.
    const spdl = stage(0, "decode", 1) as unknown as Record<string, number | string | null>;
    spdl.experimental_qps = null;
    expect(unmeasuredStageNote(namedStageRows([spdl as unknown as DiffPipelineStageRow]))).toBe("— where a run did not measure it (Items/s) in that run.");
  });
  it("prints seconds as ms and counts as integers", () => {
    const cols = callbackColumns();
    expect(cols[0]?.label).toBe("Callback");
    const row = {
      name: "log", kind: "callback",
      baseline_calls: 12, experimental_calls: 6, delta_calls: -6, delta_calls_pct: -50,
      baseline_per_step_s: 0.0015, experimental_per_step_s: 0.001, delta_per_step_s: -0.0005, delta_per_step_pct: -33.3,
      baseline_mean_s: 0, experimental_mean_s: 0, delta_mean_s: 0, delta_mean_pct: null,
      baseline_total_s: 0, experimental_total_s: 0, delta_total_s: 0, delta_total_pct: null,
    };
    const col = (key: string) => cols.find((c) => c.key === key)!;
    expect(cellText(row, col("baseline_per_step_s"))).toBe("1.500");
    expect(cellText(row, col("delta_per_step_s"))).toBe("−0.500");
    expect(cellText(row, col("delta_calls"))).toBe("−6");
    expect(cellText(row, col("delta_per_step_pct"))).toBe("−33.3 %");
  });
});

describe("delta colours of pipeline metrics", () => {
  it("calls more items/s better, stage load neutral, time lower-is-better", async () => {
    const { metricPolarity } = await import("../src/model/tableModel");
    expect(metricPolarity("qps")).toBe("higher");
    expect(metricPolarity("busy_pct")).toBe("neutral");
    expect(metricPolarity("calls")).toBe("neutral");
    expect(metricPolarity("task_mean_s")).toBe("lower");
    expect(metricPolarity("host_self_us")).toBe("lower");
  });
});

describe("a pooled group's recordings", () => {
  it("says each recording's step, data wait and verdict", () => {
    expect(recordingText({ name: "base/r2", steps: 16, mean_step_s: 0.0613, data_wait_pct: 2.4, steps_per_s: 16.3, input_bound: "no" })).toBe(
      "base/r2: 61.300 ms per step, data wait 2.4 %, not input-bound",
    );
    expect(recordingText({ name: "r1", steps: 0, mean_step_s: null, data_wait_pct: null, steps_per_s: null, input_bound: "unknown" })).toBe(
      "r1: no steps, no steps recorded",
    );
  });
});
