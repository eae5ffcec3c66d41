import { describe, expect, it } from "vitest";
import type { RunInfo } from "../src/api";
import { canPickSpan, canPickWorker, isGroup, recordingsText, runLabel } from "../src/model/runPicker";
import { resolveChoice } from "../src/model/urlState";

const run = (name: string, over: Partial<RunInfo> = {}): RunInfo => ({
  name,
  workers: [{ name: "w0", spans: ["1", "2"] }, { name: "w1", spans: ["5"] }],
  kinds: ["trace", "pipeline"],
  status: "ready",
  error: null,
  warnings: [],
  recordings: [],
  ...over,
});
const group = (name: string, members: number, over: Partial<RunInfo> = {}): RunInfo =>
  run(name, {
    workers: [],
    kinds: ["group"],
    recordings: Array.from({ length: members }, (_, i) => `${name}/r${i + 1}`),
    ...over,
  });

describe("run labels", () => {
  it("names a plain run by its name alone", () => {
    expect(runLabel(run("baseline/r1"))).toBe("baseline/r1");
  });
  it("shows a group with its count of recordings", () => {
    expect(runLabel(group("baseline", 3))).toBe("baseline · 3 recordings");
    expect(runLabel(group("baseline", 1))).toBe("baseline · 1 recording");
  });
  it("says when a run or a group is loading or failed, and nothing for unloaded", () => {
    expect(runLabel(run("a", { status: "loading" }))).toBe("a (loading…)");
    expect(runLabel(run("a", { status: "failed" }))).toBe("a (failed)");
    expect(runLabel(run("a", { status: "unloaded" }))).toBe("a");
    expect(runLabel(group("g", 2, { status: "loading" }))).toBe("g · 2 recordings (loading…)");
  });
  it("counts recordings in words", () => {
    expect(recordingsText(0)).toBe("0 recordings");
    expect(recordingsText(12)).toBe("12 recordings");
  });
});

describe("what can be picked", () => {
  it("tells a group by its kind", () => {
    expect(isGroup(group("g", 3))).toBe(true);
    expect(isGroup(run("g/r1"))).toBe(false);
  });
  it("offers workers and spans of a plain run that has several", () => {
    const r = run("a");
    expect(canPickWorker(r)).toBe(true);
    expect(canPickSpan(r, r.workers[0]?.spans)).toBe(true);
    expect(canPickSpan(r, r.workers[1]?.spans)).toBe(false);
    expect(canPickWorker(run("b", { workers: [{ name: "w0", spans: ["1"] }] }))).toBe(false);
    expect(canPickWorker(undefined)).toBe(false);
    expect(canPickSpan(undefined, ["1", "2"])).toBe(false);
  });
  it("disables worker and span for a group, even one whose directory holds traces of its own", () => {
    const g = group("g", 3, { workers: [{ name: "w0", spans: ["1", "2"] }, { name: "w1", spans: ["1"] }], kinds: ["trace", "group"] });
    expect(canPickWorker(g)).toBe(false);
    expect(canPickSpan(g, g.workers[0]?.spans)).toBe(false);
  });
});

describe("picking a group", () => {
  it("selects the group by its name, without a worker or span", () => {
    const runs = [group("baseline", 3, { workers: [{ name: "w0", spans: ["1"] }], kinds: ["trace", "group"] }), run("baseline/r1")];
    expect(resolveChoice({ run: "baseline", worker: "w0", span: "1" }, runs)).toEqual({ run: "baseline", worker: "", span: "" });
    expect(resolveChoice({ run: "baseline/r1", worker: "", span: "" }, runs)).toEqual({ run: "baseline/r1", worker: "w0", span: "2" });
  });
});
