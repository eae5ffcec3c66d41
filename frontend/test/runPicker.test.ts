import { describe, expect, it } from "vitest";
import type { RunInfo } from "../src/api";
import { worker } from "./fixtures";
import { canPickSpan, canPickWorker, isGroup, localTime, recordingsText, runLabel, spanLabel, spanOptions, spanTitle, stepsText } from "../src/model/runPicker";
import { resolveChoice } from "../src/model/urlState";

const run = (name: string, over: Partial<RunInfo> = {}): RunInfo => ({
  name,
  workers: [worker("w0", ["1", "2"]), worker("w1", ["5"])],
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
    expect(canPickWorker(run("b", { workers: [worker("w0", ["1"])] }))).toBe(false);
    expect(canPickWorker(undefined)).toBe(false);
    expect(canPickSpan(undefined, ["1", "2"])).toBe(false);
  });
  it("disables worker and span for a group, even one whose directory holds traces of its own", () => {
    const g = group("g", 3, { workers: [worker("w0", ["1", "2"]), worker("w1", ["1"])], kinds: ["trace", "group"] });
    expect(canPickWorker(g)).toBe(false);
    expect(canPickSpan(g, g.workers[0]?.spans)).toBe(false);
  });
});

describe("picking a group", () => {
  it("selects the group by its name, without a worker or span", () => {
    const runs = [group("baseline", 3, { workers: [worker("w0", ["1"])], kinds: ["trace", "group"] }), run("baseline/r1")];
    expect(resolveChoice({ run: "baseline", worker: "w0", span: "1" }, runs)).toEqual({ run: "baseline", worker: "", span: "" });
    expect(resolveChoice({ run: "baseline/r1", worker: "", span: "" }, runs)).toEqual({ run: "baseline/r1", worker: "w0", span: "2" });
  });
});

describe("span labels", () => {
  // The two spans of Kineto's resnet50 sample (tests/sources/test_span_picker.py checks the server's figures against the JSON).
  const first = { span: "1623143089861", order: 1, written_unix_s: 1623143089.861, start_unix_s: 1623142623.460072, steps: { first: 5, last: 10, count: 6 } };
  const second = { span: "1623143566756", order: 2, written_unix_s: 1623143566.756, start_unix_s: null, steps: null };

  it("shows order, steps and start, not the file's id", () => {
    expect(spanLabel(first, 2, "UTC")).toBe("1 of 2 · steps 5–10 · started 2021-06-08 08:57:03");
    expect(spanLabel(first, 2, "UTC")).not.toContain(first.span);
    // Not read yet: when its file was saved, from the id.
    expect(spanLabel(second, 2, "UTC")).toBe("2 of 2 · saved 2021-06-08 09:12:46");
    // A lone span needs no order; an id that is no time and an unread trace leave only the order.
    expect(spanLabel({ ...first, order: 1 }, 1, "UTC")).toBe("steps 5–10 · started 2021-06-08 08:57:03");
    expect(spanLabel({ span: "3", order: 1, written_unix_s: null, start_unix_s: null, steps: null }, 1)).toBe("span 1");
  });

  it("keeps the id in the tooltip", () => {
    expect(spanTitle(first, "UTC")).toBe("Span 1623143089861 (the number in the trace file's name); file saved 2021-06-08 09:04:49");
    expect(spanTitle(second, "UTC")).toContain("its steps show once the trace is read");
  });

  it("says steps as a range, a single step, or a range with gaps", () => {
    expect(stepsText({ first: 6, last: 8, count: 3 })).toBe("steps 6–8");
    expect(stepsText({ first: 6, last: 6, count: 1 })).toBe("step 6");
    expect(stepsText({ first: 6, last: 20, count: 5 })).toBe("5 steps, 6–20");
    expect(stepsText(null)).toBe("");
  });

  it("lists a worker's spans in the server's order, values the ids", () => {
    const w = { name: "worker0", spans: [first.span, second.span], span_info: [first, second] };
    expect(spanOptions(w, "UTC").map((o) => o.span)).toEqual([first.span, second.span]);
    expect(spanOptions(undefined)).toEqual([]);
    // A span the server did not describe (an older server) shows its id.
    expect(spanOptions({ ...w, span_info: [] })[0]).toEqual({ span: first.span, label: first.span, title: `Span ${first.span}` });
    expect(localTime(0, "UTC")).toBe("1970-01-01 00:00:00");
  });
});
