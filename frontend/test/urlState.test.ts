import { describe, expect, it } from "vitest";
import type { RunInfo } from "../src/api";
import { worker } from "./fixtures";
import {
  DEFAULT_STATE,
  mergeHostHash,
  parseHash,
  parseState,
  readHostHash,
  resolveChoice,
  resolveSelection,
  serializeState,
  withSelection,
  type UrlState,
} from "../src/model/urlState";

const RUNS: RunInfo[] = [
  { name: "baseline", workers: [worker("w0", ["1", "2"]), worker("w1", ["5"])], kinds: ["trace"], status: "ready", error: null, warnings: [], recordings: [] },
  { name: "experimental", workers: [worker("w0", ["7"])], kinds: ["trace"], status: "ready", error: null, warnings: [], recordings: [] },
  { name: "slow loader", workers: [worker("host", ["3"])], kinds: ["trace"], status: "loading", error: null, warnings: [], recordings: [] },
];

const FULL: UrlState = {
  baseline: { run: "baseline", worker: "w1", span: "5" },
  experimental: { run: "slow loader", worker: "host", span: "3" },
  view: "operators",
  path: "0.3",
  piece: "0.3.1",
  time: "device",
  pass: "forward",
  byShape: true,
  launch: "operator",
  sort: "name",
  dir: "asc",
  filter: "aten::add & more",
  find: "aten::mm",
  plotted: ["third", "a,b/c & d"],
  work: { baselineSamples: 16, experimentalSamples: 32, baselineTokens: null, experimentalTokens: 1024 },
};

describe("serialize / parse", () => {
  it("round-trips every field, including characters that need escaping", () => {
    expect(parseHash("#" + serializeState(FULL))).toEqual(FULL);
  });
  it("writes nothing for the defaults", () => {
    expect(serializeState(DEFAULT_STATE)).toBe("");
    expect(parseHash("")).toEqual(DEFAULT_STATE);
  });
  it("uses short, readable keys", () => {
    expect(serializeState({ ...DEFAULT_STATE, baseline: { run: "a/b", worker: "", span: "" }, view: "kernels" })).toBe("b=a%2Fb&view=kernels");
  });
  it("keeps the runs added to the Pipeline plots in one readable key", () => {
    expect(serializeState({ ...DEFAULT_STATE, plotted: ["third", "run/4"] })).toBe("pl=third%2Crun%252F4");
    expect(parseHash("pl=third%2Crun%252F4").plotted).toEqual(["third", "run/4"]);
    expect(parseHash("pl=%2C%2Cx%2Cx").plotted).toEqual(["x"]);
  });
  it("falls back to defaults for bad values", () => {
    const s = parseHash("view=nope&time=gpu&dir=up&shape=yes");
    expect(s.view).toBe("overview");
    expect(s.time).toBe(""); // the server's choice
    expect(s.dir).toBe("desc");
    expect(s.byShape).toBe(false);
  });
  it("reads a plain record (TensorBoard's GetURLPluginData answer)", () => {
    expect(parseState({ b: "baseline", view: "modules" }).view).toBe("modules");
  });
});

describe("resolving against the runs", () => {
  it("defaults the worker to the first and the span to the last", () => {
    expect(resolveChoice({ run: "baseline", worker: "", span: "" }, RUNS)).toEqual({ run: "baseline", worker: "w0", span: "2" });
  });
  it("keeps a valid choice and repairs an unknown worker or span", () => {
    expect(resolveChoice({ run: "baseline", worker: "w1", span: "5" }, RUNS)).toEqual({ run: "baseline", worker: "w1", span: "5" });
    expect(resolveChoice({ run: "baseline", worker: "gone", span: "5" }, RUNS)).toEqual({ run: "baseline", worker: "w0", span: "2" });
    expect(resolveChoice({ run: "baseline", worker: "w0", span: "9" }, RUNS)).toEqual({ run: "baseline", worker: "w0", span: "2" });
  });
  it("drops an unknown run", () => {
    expect(resolveChoice({ run: "deleted", worker: "w0", span: "1" }, RUNS).run).toBe("");
  });
  it("picks the first two runs when nothing is chosen", () => {
    const s = resolveSelection(DEFAULT_STATE, RUNS);
    expect(s.baseline.run).toBe("baseline");
    expect(s.experimental.run).toBe("experimental");
  });
  it("keeps the URL's choice", () => {
    const s = resolveSelection(FULL, RUNS);
    expect(s.baseline).toEqual(FULL.baseline);
    expect(s.experimental).toEqual(FULL.experimental);
  });
  it("copes with no runs at all", () => {
    const s = resolveSelection(DEFAULT_STATE, []);
    expect(s.baseline.run).toBe("");
    expect(s.experimental.run).toBe("");
  });
  it("resets the module zoom when a compared trace changes", () => {
    const s = withSelection(FULL, "baseline", { run: "experimental", worker: "", span: "" }, RUNS);
    expect(s.baseline).toEqual({ run: "experimental", worker: "w0", span: "7" });
    expect(s.path).toBe("");
    expect(s.piece).toBe("");
    expect(s.view).toBe("operators");
  });
});

describe("TensorBoard hash mirror", () => {
  it("adds our keys with the plugin prefix and keeps TensorBoard's", () => {
    const h = mergeHostHash("#tb_pipeline&smoothing=0.6", { ...DEFAULT_STATE, baseline: { run: "a", worker: "", span: "" }, view: "kernels" });
    expect(h).toBe("#tb_pipeline&smoothing=0.6&p.tb_pipeline.b=a&p.tb_pipeline.view=kernels");
  });
  it("replaces our previous keys instead of piling them up", () => {
    const first = mergeHostHash("#tb_pipeline", FULL);
    const second = mergeHostHash(first, { ...DEFAULT_STATE, view: "modules" });
    expect(second).toBe("#tb_pipeline&p.tb_pipeline.view=modules");
  });
  it("reads back what it wrote", () => {
    const h = mergeHostHash("#tb_pipeline&x=1", FULL);
    expect(parseState(readHostHash(h))).toEqual(FULL);
  });
});

describe("work per step given in the URL", () => {
  it("round-trips positive counts and drops bad ones", () => {
    const s = parseState(new URLSearchParams("b=a&e=b&bsamples=16&esamples=32&btokens=-3&etokens=x"));
    expect(s.work).toEqual({ baselineSamples: 16, experimentalSamples: 32, baselineTokens: null, experimentalTokens: null });
    expect(parseState(new URLSearchParams(serializeState(s))).work).toEqual(s.work);
    expect(serializeState(parseState(new URLSearchParams("b=a")))).toBe("b=a");
  });
});
