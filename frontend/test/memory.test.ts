import { describe, expect, it } from "vitest";
import { alignedCurves, lifetimeSpans, type MemoryCurve } from "../src/model/memory";

const curve = (t: number[], v: number[], duration: number): MemoryCurve => ({
  step: "ProfilerStep#1", duration_us: duration, t_us: t, allocated_bytes: v, reserved_bytes: null, peak_us: 0, peak_bytes: Math.max(...v),
});

describe("memory curves", () => {
  it("holds each run's level on the union of sample times and stops at its own step end", () => {
    const [x, b, e] = alignedCurves(curve([0, 10, 30], [1, 5, 2], 30), curve([0, 20], [0, 7], 50));
    expect(x).toEqual([0, 0.01, 0.02, 0.03]);
    expect(b).toEqual([1, 5, 5, 2]);
    expect(e).toEqual([0, 0, 7, 7]);
  });
  it("clips block lifetimes to the step and runs never-freed blocks to its end", () => {
    expect(lifetimeSpans([[-5, 10], [20, null], [60, 70]], 50)).toEqual([[0, 0.01], [0.02, 0.05]]);
  });
});
