import { describe, expect, expectTypeOf, it } from "vitest";
import { BREAKDOWN_CATEGORIES, type BreakdownCategory } from "../src/api";
import {
  argMaxAbs,
  categorySharePct,
  integerTickLabels,
  labelIndexes,
  pairedStepLabel,
  pieceTimes,
  presentCategories,
  shortPieceLabel,
  stackedSeries,
  stepLabel,
  zeroAlignedRanges,
} from "../src/model/charts";
import { piece, step } from "./fixtures";

describe("chart shaping", () => {
  it("stacks categories top-first, in ms", () => {
    const steps = [step(1, { data_loading: 1000, cpu_exec: 3000 }), step(2, { data_loading: 2000, cpu_exec: 1000, other: 500 })];
    const cats = presentCategories(steps);
    expect(cats).toEqual(["data_loading", "cpu_exec", "other"]);
    const st = stackedSeries(steps, cats);
    expect(st.map((s) => s.cat)).toEqual(["other", "cpu_exec", "data_loading"]);
    expect(st[0]!.values).toEqual([4, 3.5]); // totals
    expect(st[2]!.values).toEqual([1, 2]);
  });
  it("lists every step-time category of the contract, in order", () => {
    // Fails to type-check when the contract gains or loses a category.
    expectTypeOf<(typeof BREAKDOWN_CATEGORIES)[number]>().toEqualTypeOf<BreakdownCategory>();
    expect(BREAKDOWN_CATEGORIES.indexOf("kernel")).toBeLessThan(BREAKDOWN_CATEGORIES.indexOf("other"));
  });
  it("labels every category as the server's overview rows do (generated, no copy)", async () => {
    const { CATEGORY_LABELS } = await import("../src/model/charts");
    const { BREAKDOWN_LABELS } = await import("../src/generated/tableRules");
    expect(CATEGORY_LABELS).toBe(BREAKDOWN_LABELS);
    expect(BREAKDOWN_CATEGORIES.map((c) => CATEGORY_LABELS[c]).every((l) => l.length > 0 && !l.includes("per step"))).toBe(true);
    expect(CATEGORY_LABELS.data_loading).toBe("Data loading");
  });
  it("gives a category's share of its step in %", () => {
    const s = step(1, { kernel: 750, other: 250 });
    expect(categorySharePct(s, "kernel")).toBe(75);
    expect(categorySharePct(step(2, {}), "kernel")).toBeNull();
  });
  it("labels integer ticks only", () => {
    expect(integerTickLabels([0, 0.5, 1, 2], (i) => `#${i}`)).toEqual(["#0", "", "#1", "#2"]);
  });
  it("picks host or device time and never mixes them", () => {
    const p = piece({ name: "nn.Module: Linear_0", path: "0.1", status: "experimental_only" }, [1, 2], [10, 30]);
    expect(pieceTimes(p, "host")).toEqual({ baseline: 1, experimental: 2, delta: 1, pct: 100 });
    expect(pieceTimes(p, "device")).toEqual({ baseline: 10, experimental: 30, delta: 20, pct: 200 });
    expect(shortPieceLabel(p)).toBe("+Linear_0");
  });
});

describe("zero-aligned ranges", () => {
  const zeroAt = ([lo, hi]: [number, number]) => -lo / (hi - lo);
  it("puts zero at the same height on both axes", () => {
    const [a, b] = zeroAlignedRanges([-1, 2], [0.5, 10]);
    expect(zeroAt(a)).toBeCloseTo(zeroAt(b), 9);
    expect(a[0]).toBeLessThanOrEqual(-1);
    expect(a[1]).toBeGreaterThanOrEqual(2);
    expect(b[1]).toBeGreaterThanOrEqual(10);
  });
  it("keeps every value inside when one series is all negative and the other mixed", () => {
    const per = [-0.371, 0.002, 0.262];
    const acc = [-0.371, -0.369, -0.107];
    const [a, b] = zeroAlignedRanges(per, acc);
    expect(zeroAt(a)).toBeCloseTo(zeroAt(b), 9);
    for (const v of per) expect(v >= a[0] && v <= a[1]).toBe(true);
    for (const v of acc) expect(v >= b[0] && v <= b[1]).toBe(true);
  });
  it("starts at zero when nothing is negative", () => {
    const [a, b] = zeroAlignedRanges([1, 2], [3]);
    expect(a[0]).toBeCloseTo(0);
    expect(b[0]).toBeCloseTo(0);
  });
  it("copes with all zeros", () => {
    const [a] = zeroAlignedRanges([0, 0], [0]);
    expect(a[1]).toBeGreaterThan(a[0]);
  });
});

describe("bar labels", () => {
  it("labels every bar up to the limit", () => {
    expect(labelIndexes(11, 60)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });
  it("always labels the tallest bar beyond the limit", () => {
    const idx = labelIndexes(200, 20, [137]);
    expect(idx).toContain(137);
    expect(idx.length).toBeLessThanOrEqual(21);
    // No stride label crowds the forced one.
    expect(idx.filter((i) => i !== 137 && Math.abs(i - 137) < 5)).toEqual([]);
  });
  it("finds the largest magnitude", () => {
    expect(argMaxAbs([1, -5, 3])).toBe(1);
    expect(argMaxAbs([])).toBe(-1);
  });
});

describe("step labels", () => {
  it("uses the ProfilerStep number", () => {
    expect(stepLabel("ProfilerStep#1011")).toBe("1011");
    expect(stepLabel("all")).toBe("all");
    expect(pairedStepLabel("ProfilerStep#2", "ProfilerStep#2")).toBe("2");
    expect(pairedStepLabel("ProfilerStep#2", "ProfilerStep#5")).toBe("2 / 5");
    expect(pairedStepLabel(null, "ProfilerStep#5")).toBe("5");
  });
});
