import { describe, expect, it } from "vitest";
import { inputBoundText, perUnitText, shortLabel, significanceMark, stageText, waterfallData, waterfallRange, type Significance, type WaterfallBar } from "../src/model/explain";

// The server's words (diff/significance/method.py:VERDICT_WORDS): the frontend shows `label`, never its own.
const WORDS = {
  significant: "significant",
  within_noise: "within noise",
  too_few_steps: "too few steps to judge",
  not_comparable: "not comparable: stacks recorded in the baseline run only",
} as const;

const sig = (verdict: Significance["verdict"], low: number | null = 10, high: number | null = 30, confidence = 0.95): Significance => ({
  verdict,
  label: WORDS[verdict],
  confidence,
  min_steps: 3,
  delta: 20,
  ci_low: verdict === "too_few_steps" ? null : low,
  ci_high: verdict === "too_few_steps" ? null : high,
  baseline_steps: verdict === "too_few_steps" ? 2 : 8,
  experimental_steps: 8,
  baseline_recordings: 1,
  experimental_recordings: 1,
  noise: "assumed",
});

describe("significance marks", () => {
  it("says what each verdict means in text, not only a symbol", () => {
    expect(significanceMark(sig("significant", 1500, 2500))).toEqual({
      symbol: "●",
      label: "significant (8 vs 8 steps, 95 % interval 1.50 ms to 2.50 ms)",
      cls: "sig",
    });
    expect(significanceMark(sig("within_noise"))?.label).toBe("within noise (8 vs 8 steps)");
    expect(significanceMark(sig("too_few_steps"))?.label).toBe("too few steps to judge (2 vs 8 steps; 3 per run needed)");
    // A row of a table is judged with its family: the level the server used, not 95 %.
    expect(significanceMark({ ...sig("significant", 1500, 2500, 0.99375), min_steps: 3 })?.label).toContain("99.38 % interval");
    expect(significanceMark({ ...sig("too_few_steps"), min_steps: 5 })?.label).toContain("5 per run needed");
  });
  it("names the recordings a group's verdict rests on", () => {
    const grouped = { ...sig("significant", 1500, 2500), baseline_recordings: 3, experimental_recordings: 3, noise: "measured" as const };
    expect(significanceMark(grouped)?.label).toBe("significant (8 vs 8 steps in 3 vs 3 recordings, 95 % interval 1.50 ms to 2.50 ms)");
  });
  it("says why a delta has no verdict", () => {
    expect(significanceMark(sig("not_comparable"))).toEqual({ symbol: "✕", label: WORDS.not_comparable, cls: "void" });
  });
  it("has no mark for a delta without samples", () => {
    expect(significanceMark(null)).toBeNull();
    expect(significanceMark(undefined)).toBeNull();
  });
});

describe("waterfall", () => {
  const bars: WaterfallBar[] = [
    { label: "baseline step", kind: "total", start_us: 0, end_us: 40_000, verdict: null, verdict_label: null },
    { label: "Block_1", kind: "module", start_us: 40_000, end_us: 75_000, verdict: "significant", verdict_label: "significant" },
    { label: "data loading", kind: "data_loading", start_us: 75_000, end_us: 70_000, verdict: "within_noise", verdict_label: "within noise" },
    { label: "experimental step", kind: "total", start_us: 0, end_us: 70_000, verdict: null, verdict_label: null },
  ];
  it("turns start/end into floating bars in ms with a direction", () => {
    const d = waterfallData(bars);
    expect(d.lows).toEqual([0, 40, 70, 0]);
    expect(d.highs).toEqual([40, 75, 75, 70]);
    expect(d.kinds).toEqual(["total", "up", "down", "total"]);
    expect(d.verdicts).toEqual([null, "significant", "within_noise", null]);
    expect(waterfallRange(d)).toEqual([0, 75 * 1.05]);
  });
});

describe("axis labels", () => {
  it("cuts long names with an ellipsis and keeps short ones", () => {
    expect(shortLabel("Block_1")).toBe("Block_1");
    const long = shortLabel("host time outside operators (Python, framework, waiting for the GIL)");
    expect(long.length).toBe(22);
    expect(long.endsWith("…")).toBe(true);
  });
});

describe("pipeline part", () => {
  it("words the input-bound verdicts, changed or not", () => {
    const ib = { baseline: "no", experimental: "yes", changed: true, baseline_data_wait_pct: 4.2, experimental_data_wait_pct: 57.4 } as const;
    expect(inputBoundText(ib)).toBe("not input-bound (4 % data wait) → input-bound (57 % data wait)");
    expect(inputBoundText({ ...ib, experimental: "no", changed: false, experimental_data_wait_pct: 3.9 })).toBe("not input-bound in both runs (data wait 4 % → 4 % of the step)");
  });
  it("words the stage that changed most: task time and throughput", () => {
    const st = {
      stage: "load", pipeline_index: 0, baseline_task_mean_s: 0.0011, experimental_task_mean_s: 0.0302, delta_task_mean_pct: 2645.5,
      baseline_qps: 80.1, experimental_qps: 30.2, delta_qps_pct: -62.3, baseline_busy_pct: 39.7, experimental_busy_pct: 95.5,
      baseline_get_wait_s: null, experimental_get_wait_s: null, baseline_put_wait_s: null, experimental_put_wait_s: null,
    };
    expect(stageText(st)).toBe("load: task 1.10 ms → 30.2 ms, 80.1 → 30.2 items/s (-62 %)");
    expect(stageText({ ...st, baseline_task_mean_s: null, baseline_qps: null })).toBe("load: no timings");
  });
});

describe("per-unit step", () => {
  const counts = (samples: number) => ({ samples_per_step: samples, samples_source: "statistics" as const, tokens_per_step: null, tokens_source: null });
  const step = {
    baseline_us: 7150.43,
    experimental_us: 6552.9,
    delta_us: -597.53,
    delta_pct: -8.36,
    significance: sig("significant"),
    source: "recorded" as const,
    profiled: null,
    unit: "sample" as const,
    units: { unit: "sample" as const, baseline: counts(16), experimental: counts(32) },
    per_step: { baseline_us: 114406.9, experimental_us: 209692.8, delta_us: 95285.9, delta_pct: 83.3 },
    baseline_per_s: 139.852,
    experimental_per_s: 152.604,
    rest_delta_us: null,
    rest_share_pct: null,
    basis: "host step time of the recorded steps' steady state, 39 vs 40 steps",
  };
  it("says the unit, both counts, the rates and the per-step figures", () => {
    expect(perUnitText(step)).toBe("Compared per sample: 16 vs 32 samples a step; per sample 7.15 ms → 6.55 ms; 140 → 153 samples/s; per step 114 ms → 210 ms.");
  });
  it("is silent per step", () => {
    expect(perUnitText({ ...step, unit: "step", units: null, per_step: null })).toBeNull();
  });
});
