import { describe, expect, it } from "vitest";
import { accumulated, bandOf, clockOf, clockTimes, hasBackward, MAX_BAR_LABELS, moduleDiffSeries, passesOf, pieceName, pieceStep } from "../src/model/moduleDiff";
import { modulesResponse, piece } from "./fixtures";

const kids = [
  piece({ name: "nn.Module: A_0", path: "0.0" }, [1000, 3000], [500, 400]),
  piece({ name: "nn.Module: B_0", path: "0.1", status: "baseline_only", experimental_name: null }, [2000, 0], [100, 0]),
  piece({ name: "unknown (not in any module)", path: "0.2", kind: "unknown" }, [500, 500], [0, 0]),
];
// Deliberately not the running sums of the pieces: the charts must draw the server's trend as sent.
const trend = {
  baseline_host_us: [10_000, 20_000, 30_000],
  experimental_host_us: [11_000, 22_000, 33_000],
  delta_host_us: [1000, 2000, 3000],
  baseline_device_us: [7, 8, 9],
  experimental_device_us: [1, 2, 3],
  delta_device_us: [-6, -6, -6],
  baseline_with_backward_us: [12_000, 24_000, 36_000],
  experimental_with_backward_us: [15_000, 30_000, 45_000],
  delta_with_backward_us: [3000, 6000, 9000],
};

describe("module diff series", () => {
  it("draws per-piece bars in ms on the chosen clock", () => {
    const s = moduleDiffSeries(modulesResponse(kids, trend), "host");
    expect(s.xs).toEqual([0, 1, 2]);
    expect(s.baselineMs).toEqual([1, 2, 0.5]);
    expect(s.experimentalMs).toEqual([3, 0, 0.5]);
    expect(s.deltaMs).toEqual([2, -2, 0]);
    expect(s.slowerMs).toEqual([2, null, null]);
    expect(s.fasterMs).toEqual([null, -2, null]);
    const d = moduleDiffSeries(modulesResponse(kids, trend), "device");
    expect(d.deltaMs).toEqual([-0.1, -0.1, 0]);
  });
  it("takes the accumulated lines from the server's trend, not from the bars", () => {
    const s = moduleDiffSeries(modulesResponse(kids, trend), "host");
    expect(s.accBaselineMs).toEqual([10, 20, 30]);
    expect(s.accExperimentalMs).toEqual([11, 22, 33]);
    expect(s.accDeltaMs).toEqual([1, 2, 3]);
    expect(moduleDiffSeries(modulesResponse(kids, trend), "device").accDeltaMs).toEqual([-0.006, -0.006, -0.006]);
    expect(accumulated(modulesResponse(kids, trend), "device").baseline).toEqual([7, 8, 9]);
  });
  it("puts zero at one height on the difference chart's two axes", () => {
    const s = moduleDiffSeries(modulesResponse(kids, trend), "host");
    const zeroAt = ([lo, hi]: [number, number]) => -lo / (hi - lo);
    expect(zeroAt(s.deltaRange)).toBeCloseTo(zeroAt(s.accDeltaRange), 9);
    expect(s.accDeltaRange[1]).toBeGreaterThanOrEqual(3);
  });
  it("labels pieces with short names and marks one-sided ones", () => {
    const s = moduleDiffSeries(modulesResponse(kids, trend), "host");
    expect(s.labels).toEqual(["A_0", "−B_0", "unknown"]);
    expect(s.ticks).toEqual([0, 1, 2]);
    expect(s.rotate).toBe(0);
  });
  it("labels a stride of many pieces, always including the largest change, and rotates long labels", () => {
    const many = Array.from({ length: 200 }, (_, i) => piece({ name: `nn.Module: Layer_${i}`, path: `0.${i}` }, [100, i === 150 ? 9000 : 100]));
    const flat = Array.from({ length: 200 }, () => 0);
    const s = moduleDiffSeries(modulesResponse(many, { baseline_host_us: flat, experimental_host_us: flat, delta_host_us: flat, baseline_device_us: flat, experimental_device_us: flat, delta_device_us: flat, baseline_with_backward_us: flat, experimental_with_backward_us: flat, delta_with_backward_us: flat }), "host");
    expect(s.ticks.length).toBeLessThanOrEqual(MAX_BAR_LABELS + 2);
    expect(s.ticks).toContain(150);
    expect(s.rotate).toBe(-60);
  });
});

describe("piece bands and steps", () => {
  it("tints one-sided and unknown pieces only", () => {
    expect(kids.map(bandOf)).toEqual([null, "baseline_only", "unknown"]);
  });
  it("names a step by its ProfilerStep numbers, and pieces below by their step", () => {
    const s = piece({ name: "ProfilerStep#4", path: "0", kind: "step", step: 0, baseline_name: "ProfilerStep#4", experimental_name: "ProfilerStep#9" });
    expect(pieceStep(s, { path: "", breadcrumb: [] })).toBe("4 / 9");
    const below = { path: "0", breadcrumb: [{ name: "All steps", path: "" }, { name: "ProfilerStep#4", path: "0" }] };
    expect(pieceStep(kids[0]!, below)).toBe("4");
    expect(pieceStep(piece({ name: "x", path: "1", step: 1 }), { path: "", breadcrumb: [] })).toBe("1");
  });
});

describe("forward + backward per module", () => {
  // A module whose forward and backward both slowed down, the step's backward piece, and data loading.
  const block = piece({ name: "Block_1", path: "0.1", baseline_backward_us: 3000, experimental_backward_us: 9000, delta_backward_us: 6000, baseline_with_backward_us: 4000, experimental_with_backward_us: 12_000, delta_with_backward_us: 8000, delta_with_backward_pct: 200 }, [1000, 3000]);
  const bwd = piece({ name: "backward", path: "0.2", kind: "backward", baseline_with_backward_us: 500, experimental_with_backward_us: 600, delta_with_backward_us: 100, delta_with_backward_pct: 20 }, [3500, 9600]);
  const load = piece({ name: "enumerate(DataLoader)#x", path: "0.0", kind: "data_loading" }, [200, 200]);
  const d = modulesResponse([load, block, bwd], trend);

  it("draws forward + backward by default where the level has backward, forward only otherwise", () => {
    expect(hasBackward(d)).toBe(true);
    expect(hasBackward(modulesResponse(kids, trend))).toBe(false);
    expect(clockOf("host", "both", true)).toBe("with_backward");
    expect(clockOf("host", "forward", true)).toBe("host");
    expect(clockOf("host", "both", false)).toBe("host");
    expect(clockOf("device", "both", true)).toBe("device");
  });
  it("takes each piece's total and the trend from the server's with-backward fields", () => {
    const s = moduleDiffSeries(d, "with_backward");
    expect(s.baselineMs).toEqual([0.2, 4, 0.5]);
    expect(s.deltaMs).toEqual([0, 8, 0.1]);
    expect(s.accDeltaMs).toEqual([3, 6, 9]);
    expect(s.labels[2]).toBe("bwd (unattr.)");
    expect(moduleDiffSeries(d, "host").deltaMs).toEqual([0, 2, 6.1]);
    expect(accumulated(d, "with_backward").baseline).toEqual([12_000, 24_000, 36_000]);
  });
  it("splits a module into forward, backward and total; other pieces have no split", () => {
    expect(passesOf(block)).toEqual({
      forward: { baseline: 1000, experimental: 3000, delta: 2000 },
      backward: { baseline: 3000, experimental: 9000, delta: 6000 },
      total: { baseline: 4000, experimental: 12_000, delta: 8000, pct: 200 },
    });
    expect(passesOf(bwd)).toBeNull();
    expect(clockTimes(bwd, "with_backward")).toEqual({ baseline: 500, experimental: 600, delta: 100, pct: 20 });
    expect(pieceName(bwd, "with_backward")).toBe("backward (unattributed)");
    expect(pieceName(bwd, "host")).toBe("backward");
  });
});
