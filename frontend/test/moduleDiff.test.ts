import { describe, expect, it } from "vitest";
import type { Significance } from "../src/model/explain";
import {
  accumulated,
  BAND_TEXT,
  bandOf,
  clockHasMarks,
  clockOf,
  clockTimes,
  deltaSignificance,
  hasBackward,
  MAX_BAR_LABELS,
  moduleDiffControls,
  moduleDiffSeries,
  passesOf,
  pieceName,
  pieceRow,
  pieceStep,
  renamedText,
  selectedPiece,
} from "../src/model/moduleDiff";
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

/** A verdict with distinct step counts, so a test can tell which of a piece's three it got. */
function sig(verdict: Significance["verdict"], steps: number): Significance {
  return {
    verdict, label: verdict, delta: 0, baseline_steps: steps, experimental_steps: steps, ci_low: null, ci_high: null,
    baseline_recordings: 1, experimental_recordings: 1, noise: "assumed", confidence: 0.95, min_steps: 3,
  };
}

describe("time and pass toggles", () => {
  const withBwd = modulesResponse([piece({ name: "Block", path: "0.0", baseline_backward_us: 10, experimental_backward_us: 20, delta_backward_us: 10 }, [100, 200])], trend);
  const forwardOnly = modulesResponse(kids, trend);

  it("draws host time when neither trace has device activity, whatever was asked, and says why device is off", () => {
    const c = moduleDiffControls(modulesResponse(kids, trend, { device_present: false }), "device", "both");
    expect(c.time).toBe("host");
    expect(c.clock).toBe("host");
    expect(c.times.map((b) => [b.value, b.pressed, b.disabled])).toEqual([
      ["host", true, false],
      ["device", false, true],
    ]);
    expect(c.times[1]!.title).toMatch(/^Neither trace has device activity/);
    expect(c.hint).toMatch(/^Host time: .* Device time is off: neither trace has kernels, memcpy or memset\.$/);
  });
  it("draws the asked device time when there is some, with the pass toggle off and forward pressed", () => {
    const c = moduleDiffControls(withBwd, "device", "both");
    expect(c.time).toBe("device");
    expect(c.clock).toBe("device");
    expect(c.times.map((b) => b.pressed)).toEqual([false, true]);
    expect(c.times.every((b) => !b.disabled)).toBe(true);
    expect(c.passes.map((b) => [b.value, b.pressed, b.disabled, b.title])).toEqual([
      ["both", false, true, "Backward is attributed to modules on host time only."],
      ["forward", true, true, "Backward is attributed to modules on host time only."],
    ]);
    expect(c.hint).toMatch(/^Device time: /);
  });
  it("turns the pass toggle off where no backward is linked to a module", () => {
    const c = moduleDiffControls(forwardOnly, "host", "both");
    expect(c.backward).toBe(false);
    expect(c.clock).toBe("host");
    expect(c.passes.map((b) => [b.pressed, b.disabled])).toEqual([
      [false, true],
      [true, true],
    ]);
    expect(c.passes[0]!.title).toMatch(/^No backward operator at this level is linked to a module call/);
    expect(c.hint).not.toMatch(/Forward \+ backward/);
  });
  it("lets host time choose the passes where modules have backward, and explains both in the hint", () => {
    const both = moduleDiffControls(withBwd, "host", "both");
    expect(both.clock).toBe("with_backward");
    expect(both.passes.map((b) => [b.value, b.label, b.pressed, b.disabled])).toEqual([
      ["both", "Forward + backward", true, false],
      ["forward", "Forward only", false, false],
    ]);
    expect(both.passes[1]!.title).toMatch(/^Forward only: /);
    expect(both.hint).toMatch(/^Host time: .* Forward \+ backward: a module's cost/);
    const fwd = moduleDiffControls(withBwd, "host", "forward");
    expect(fwd.clock).toBe("host");
    expect(fwd.passes.map((b) => b.pressed)).toEqual([false, true]);
    expect(fwd.hint).not.toMatch(/Forward \+ backward/);
  });
});

describe("piece rows", () => {
  const significance = sig("significant", 3);
  const forward_significance = sig("within_noise", 4);
  const backward_significance = sig("too_few_steps", 5);
  const block = piece(
    { name: "Block_1", path: "0.1", baseline_backward_us: 3000, experimental_backward_us: 9000, delta_backward_us: 6000, baseline_with_backward_us: 4000, experimental_with_backward_us: 12_000, delta_with_backward_us: 8000, delta_with_backward_pct: 200, significance, forward_significance, backward_significance },
    [1000, 3000],
    [50, 70],
  );
  const bwd = piece({ name: "backward", path: "0.2", kind: "backward", baseline_with_backward_us: 500, experimental_with_backward_us: 600, delta_with_backward_us: 100, delta_with_backward_pct: 20, backward_significance }, [3500, 9600]);
  const load = piece({ name: "enumerate(DataLoader)#x", path: "0.0", kind: "data_loading" }, [200, 200]);

  it("gives each clock its own significance: with backward the total's, host the forward's, device none", () => {
    expect(deltaSignificance(block, "with_backward")).toBe(significance);
    expect(deltaSignificance(block, "host")).toBe(forward_significance);
    expect(deltaSignificance(block, "device")).toBeNull();
    expect([clockHasMarks("with_backward"), clockHasMarks("host"), clockHasMarks("device")]).toEqual([true, true, false]);
    expect(pieceRow(block, "host").significance).toBe(forward_significance);
  });
  it("splits a module into forward and backward cells with their own marks, the total on the clock", () => {
    const row = pieceRow(block, "with_backward");
    expect(row.times).toEqual({ baseline: 4000, experimental: 12_000, delta: 8000, pct: 200 });
    expect(row.significance).toBe(significance);
    expect(row.split).toEqual({
      forward: { baseline: 1000, experimental: 3000, delta: 2000, significance: forward_significance },
      backward: { baseline: 3000, experimental: 9000, delta: 6000, significance: backward_significance },
    });
    expect(pieceRow(block, "host").split).toBeNull();
    expect(pieceRow(block, "device").times).toEqual({ baseline: 50, experimental: 70, delta: 20, pct: 40 });
  });
  it("fills the backward piece's backward cells with its unattributed total, and leaves other pieces' passes empty", () => {
    const rest = pieceRow(bwd, "with_backward");
    expect(rest.name).toBe("backward (unattributed)");
    expect(rest.split).toEqual({
      forward: { baseline: null, experimental: null, delta: null, significance: null },
      backward: { baseline: 500, experimental: 600, delta: 100, significance: backward_significance },
    });
    expect(pieceRow(load, "with_backward").split).toEqual({
      forward: { baseline: null, experimental: null, delta: null, significance: null },
      backward: { baseline: null, experimental: null, delta: null, significance: null },
    });
  });
  it("marks a one-sided piece's missing side absent, and names a renamed piece once", () => {
    const onlyB = pieceRow(kids[1]!, "host");
    expect(onlyB.absent).toEqual({ baseline: false, experimental: true });
    expect(onlyB.band).toBe("baseline_only");
    expect(onlyB.renamed).toBeNull();
    const onlyE = pieceRow(piece({ name: "C", path: "0.3", status: "experimental_only", baseline_name: null }), "host");
    expect(onlyE.absent).toEqual({ baseline: true, experimental: false });
    const renamed = piece({ name: "ProfilerStep#4", path: "0", kind: "step", baseline_name: "ProfilerStep#4", experimental_name: "ProfilerStep#9" });
    expect(renamedText(renamed)).toBe("ProfilerStep#4 → ProfilerStep#9");
    expect(pieceRow(renamed, "host").renamed).toBe("ProfilerStep#4 → ProfilerStep#9");
    expect(pieceRow(kids[0]!, "host").absent).toEqual({ baseline: false, experimental: false });
    expect(BAND_TEXT[bandOf(kids[2]!)!]).toBe("time outside any module");
  });
  it("selects a child by path, the level itself by its own path, and nothing otherwise", () => {
    const d = modulesResponse(kids, trend, { path: "0", node: piece({ name: "ProfilerStep#4", path: "0", kind: "step", has_children: true }) });
    expect(selectedPiece(d, "0.1")?.name).toBe("nn.Module: B_0");
    expect(selectedPiece(d, "0")?.name).toBe("ProfilerStep#4");
    expect(selectedPiece(d, "")).toBeNull();
    expect(selectedPiece(d, "0.9")).toBeNull();
  });
});

describe("the clock a module diff opens on", () => {
  it("is device time for device-bound runs unless the URL asks, host time otherwise", async () => {
    const { moduleDiffControls } = await import("../src/model/moduleDiff");
    const { modulesResponse } = await import("./fixtures");
    const bound = modulesResponse([], { baseline_host_us: [], experimental_host_us: [], delta_host_us: [], baseline_device_us: [], experimental_device_us: [], delta_device_us: [], baseline_with_backward_us: [], experimental_with_backward_us: [], delta_with_backward_us: [] } as never, { device_bound: true });
    expect(moduleDiffControls(bound, "", "both").time).toBe("device");
    expect(moduleDiffControls(bound, "host", "both").time).toBe("host");
    expect(moduleDiffControls({ ...bound, device_bound: false }, "", "both").time).toBe("host");
    expect(moduleDiffControls({ ...bound, device_present: false }, "device", "both").time).toBe("host");
  });
});
