import { describe, expect, it } from "vitest";
import type { DiffOverviewRow } from "../src/api";
import { decimalsForIncrement, deltaLook, formatTicks } from "../src/model/format";
import { deviceMismatch, rowPolarity } from "../src/model/overview";

const row = (metric: string, unit: DiffOverviewRow["unit"], baseline: number | string | null = 1, experimental: number | string | null = 2): DiffOverviewRow => ({
  metric,
  label: metric,
  unit,
  baseline,
  experimental,
  delta: null,
  delta_pct: null,
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

describe("device mismatch", () => {
  it("flags different device names", () => {
    expect(deviceMismatch([row("device", null, "NVIDIA A100", "Tesla V100")])).toEqual({ baseline: "NVIDIA A100", experimental: "Tesla V100" });
  });
  it("is quiet for the same device or CPU on both sides", () => {
    expect(deviceMismatch([row("device", null, "CPU", "CPU")])).toBeNull();
    expect(deviceMismatch([row("steps", "count")])).toBeNull();
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
