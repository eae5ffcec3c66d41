import { describe, expect, it } from "vitest";
import type { DiffOverviewRow } from "../src/api";
import { decimalsForIncrement, deltaLook, formatTicks } from "../src/model/format";
import { breakdownRowLabel, breakdownYMax, comparabilityTitle, type Difference, overviewDeltaText, overviewValueText, rowPolarity, stepLineSeries } from "../src/model/overview";
import { step } from "./fixtures";

const row = (metric: string, unit: DiffOverviewRow["unit"], baseline: number | string | null = 1, experimental: number | string | null = 2): DiffOverviewRow => ({
  metric,
  label: metric,
  unit,
  baseline,
  experimental,
  delta: null,
  delta_pct: null,
  significance: null,
  caveat: null,
});

describe("overview delta polarity", () => {
  it("colours utilisation up as better, with the arrow following the raw sign", () => {
    const p = rowPolarity(row("gpu_utilization_pct", "pct"));
    expect(p).toBe("higher");
    expect(deltaLook(4.0, p)).toEqual({ dir: "better", arrow: "▲" });
    expect(deltaLook(-4.0, p)).toEqual({ dir: "worse", arrow: "▼" });
  });
  it("colours time and memory up as worse", () => {
    for (const m of ["avg_step_time_us", "breakdown_us.kernel", "memory.peak_bytes"]) {
      const p = rowPolarity(row(m, m.startsWith("memory") ? "bytes" : "us"));
      expect(p).toBe("lower");
      expect(deltaLook(10, p)).toEqual({ dir: "worse", arrow: "▲" });
      expect(deltaLook(-10, p)).toEqual({ dir: "better", arrow: "▼" });
    }
  });
  it("gives setup facts neither colour nor arrow", () => {
    for (const [m, u] of [["steps", "count"], ["device_count", "count"], ["device_memory_bytes", "bytes"], ["device", null]] as const) {
      const p = rowPolarity(row(m, u));
      expect(p).toBe("neutral");
      expect(deltaLook(-2, p)).toEqual({ dir: "same", arrow: "" });
    }
  });
  it("has nothing to say about a missing delta or no change", () => {
    expect(deltaLook(null, "lower")).toEqual({ dir: "none", arrow: "" });
    expect(deltaLook(0, "higher")).toEqual({ dir: "same", arrow: "" });
  });
});

const difference = (effect: Difference["effect"]): Difference => ({
  key: "device",
  label: "Device",
  baseline: "NVIDIA A100",
  experimental: "Tesla V100",
  effect,
  text: "Different devices.",
});

describe("comparability", () => {
  it("warns when a difference affects a number", () => {
    expect(comparabilityTitle([difference("caveat")]).kind).toBe("warn");
    expect(comparabilityTitle([difference("no_verdict"), difference("note")]).title).toContain("2 ways");
  });
  it("only informs when every difference is a note", () => {
    expect(comparabilityTitle([difference("note")])).toEqual({ kind: "info", title: "The runs differ in one way besides the change" });
  });
});

describe("work per step", () => {
  it("shows rates per second, higher is better", () => {
    expect(overviewValueText(row("samples_per_s", "per_s"), 139.852)).toBe("139.85/s");
    expect(overviewDeltaText({ unit: "per_s", delta: -45.091 })).toBe("−45.09/s");
    expect(rowPolarity(row("samples_per_s", "per_s"))).toBe("higher");
    expect(rowPolarity(row("samples_per_step", "count"))).toBe("neutral");
    expect(rowPolarity(row("time_per_sample_us", "us"))).toBe("lower");
  });
  it("keeps a fractional count per step", () => {
    expect(overviewValueText(row("samples_per_step", "count"), 15.5)).toBe("15.5");
    expect(overviewValueText(row("samples_per_step", "count"), 16)).toBe("16");
  });
});

describe("axis ticks", () => {
  it("chooses decimals from the increment", () => {
    expect(decimalsForIncrement(5)).toBe(0);
    expect(decimalsForIncrement(0.25)).toBe(2);
    expect(decimalsForIncrement(0.0002)).toBe(4);
  });
  it("never repeats a label", () => {
    const splits = [0, 0.0002, 0.0004, 0.0006, 0.0008, 0.001];
    const labels = formatTicks(splits, 0.0002);
    expect(new Set(labels).size).toBe(splits.length);
    expect(labels[0]).toBe("0.0000");
    expect(formatTicks([-0.00001, 10, 20], 10)).toEqual(["0", "10", "20"]);
  });
});

describe("comparison table text", () => {
  it("shows values in the row's unit", () => {
    expect(overviewValueText({ unit: "us" }, 12_345)).toBe("12.345 ms");
    expect(overviewValueText({ unit: "bytes" }, 3 * 1024 ** 3)).toBe("3 GiB");
    expect(overviewValueText({ unit: "pct" }, 61.54)).toBe("61.5 %");
    expect(overviewValueText({ unit: "count" }, 1200)).toBe("1,200");
    expect(overviewValueText({ unit: null }, "NVIDIA A100")).toBe("NVIDIA A100");
    expect(overviewValueText({ unit: "us" }, null)).toBe("—");
  });
  it("signs the server's delta, percentages in points", () => {
    expect(overviewDeltaText({ unit: "us", delta: -1500 })).toBe("−1.500 ms");
    expect(overviewDeltaText({ unit: "bytes", delta: 2048 })).toBe("+2 KiB");
    expect(overviewDeltaText({ unit: "pct", delta: 2.46 })).toBe("+2.5 pp");
    expect(overviewDeltaText({ unit: "pct", delta: -0.01 })).toBe("0.0 pp");
    expect(overviewDeltaText({ unit: "count", delta: -3 })).toBe("−3");
    expect(overviewDeltaText({ unit: "us", delta: null })).toBe("—");
  });
});

describe("overview chart series", () => {
  it("lines up steps of both runs by position, in ms, with their own numbers", () => {
    const s = stepLineSeries([step(2, { kernel: 1000 }), step(3, { kernel: 2000 })], [step(5, { kernel: 1500 })]);
    expect(s.xs).toEqual([1, 2]);
    expect(s.labels).toEqual(["2 / 5", "3"]);
    expect(s.baselineMs).toEqual([1, 2]);
    expect(s.experimentalMs).toEqual([1.5, null]);
  });
  it("shares one y maximum across both breakdown charts", () => {
    expect(breakdownYMax([step(1, { kernel: 1000 })], [step(1, { other: 5000 })])).toBeCloseTo(5 * 1.08, 9);
    expect(breakdownYMax([], [])).toBeGreaterThan(0);
  });
});

describe("breakdown row labels", () => {
  it("names a category as the server's overview row does, less the group's \"(per step)\"", () => {
    expect(breakdownRowLabel({ metric: "breakdown_us.data_loading", label: "Data loading (per step)" })).toBe("Data loading");
    expect(breakdownRowLabel({ metric: "breakdown_us.cpu_exec", label: "CPU exec (per step)" })).toBe("CPU exec");
  });
  it("keeps the server's label for other rows and for a category the generated rules do not know", () => {
    expect(breakdownRowLabel({ metric: "avg_step_time_us", label: "Average step time" })).toBe("Average step time");
    expect(breakdownRowLabel({ metric: "breakdown_us.new_kind", label: "New kind (per step)" })).toBe("New kind (per step)");
  });
});
