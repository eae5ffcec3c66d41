import { describe, expect, it } from "vitest";
import type { DiffTimelineResponse, TimelineSide } from "../src/api";
import { exportFileName, PROCESS_IDS, toChromeTrace } from "../src/model/timelineExport";
import { decodeTimeline, eventKey, eventNumbers, findEvent, firstNamed, hitTest, lastStartingBy, LANE_GAP, ROW_H, SIDE_HEAD } from "../src/model/timelineLayout";
import {
  axisLength,
  bucketColor,
  deltaBucket,
  fullView,
  MIN_SPAN_US,
  panBy,
  sideScale,
  STEPS,
  tickLabel,
  ticks,
  timeAt,
  viewAround,
  xOf,
  zoomAt,
} from "../src/model/timelineViewport";
import { parseHash, serializeState, DEFAULT_STATE, timelineOf } from "../src/model/urlState";

const KINDS = ["operator", "kernel", "memcpy", "memset", "annotation", "module", "python"] as const;

/** Events as rows: [name, kind, ts, dur, lane, depth, match, delta]. */
type Row = [number, number, number, number, number, number, number | null, number | null];

function side(name: string, lengthUs: number, names: string[], lanes: [string, boolean][], rows: Row[], merged: [number, number, number, number, number, number][] = []): TimelineSide {
  const col = (k: number) => rows.map((r) => r[k]);
  const mcol = (k: number) => merged.map((r) => r[k]!);
  return {
    piece_name: name,
    start_us: 1000,
    end_us: 1000 + lengthUs,
    window_start_us: 1000,
    window_end_us: 1000 + lengthUs,
    events_end_us: 1000 + lengthUs + 5,
    lanes: lanes.map(([label, device]) => ({ label, device })),
    names,
    events: {
      name: col(0) as number[],
      kind: col(1) as number[],
      ts_us: col(2) as number[],
      dur_us: col(3) as number[],
      lane: col(4) as number[],
      depth: col(5) as number[],
      match: col(6) as (number | null)[],
      delta_us: col(7) as (number | null)[],
    },
    events_total: rows.length + merged.reduce((a, m) => a + m[4], 0),
    min_draw_us: merged.length ? 1 : 0,
    merged: { lane: mcol(0), depth: mcol(1), ts_us: mcol(2), dur_us: mcol(3), count: mcol(4), merged_us: mcol(5) },
    merged_count: merged.reduce((a, m) => a + m[4], 0),
    merged_us: merged.reduce((a, m) => a + m[5], 0),
  };
}

const NAMES = ["ProfilerStep#1", "aten::mm", "aten::add", "gemm_kernel"];
const RESP: DiffTimelineResponse = {
  device_bound: false,
  baseline_recording: null,
  experimental_recording: null,
  recordings_note: null,
  baseline: { run: "base", worker: "w", span: "1" },
  experimental: { run: "exp", worker: "w", span: "1" },
  path: "0",
  name: "ProfilerStep#1",
  kind: "step",
  status: "matched",
  breadcrumb: [
    { name: "All steps", path: "" },
    { name: "ProfilerStep#1", path: "0" },
  ],
  kinds: [...KINDS],
  from_us: null,
  to_us: null,
  matched: 3,
  baseline_side: side(
    "ProfilerStep#1",
    100,
    NAMES,
    [["thread 1", false], ["GPU 0 · stream 7", true]],
    [
      [0, 4, 0, 100, 0, 0, 0, 0],
      [1, 0, 10, 20, 0, 1, 1, 10],
      [2, 0, 40, 10, 0, 1, null, null],
      [3, 1, 35, 15, 1, 0, 2, -5],
    ],
    [[0, 1, 60, 5, 7, 3.5]],
  ),
  experimental_side: side(
    "ProfilerStep#1",
    200,
    NAMES,
    [["thread 9", false], ["GPU 0 · stream 7", true]],
    [
      [0, 4, 0, 200, 0, 0, 0, 0],
      [1, 0, 10, 30, 0, 1, 1, 10],
      [3, 1, 50, 10, 1, 0, 2, -5],
    ],
  ),
};

describe("decoding and layout", () => {
  const m = decodeTimeline(RESP);
  const b = m.baseline!;
  it("lays lanes one under the other, one row per nesting depth", () => {
    expect(b.lanes.map((l) => [l.top, l.depths])).toEqual([
      [SIDE_HEAD, 2],
      [SIDE_HEAD + 2 * ROW_H + LANE_GAP, 1],
    ]);
    expect(b.heightPx).toBe(SIDE_HEAD + 3 * ROW_H + 2 * LANE_GAP);
    expect(b.rows.map((r) => [r.lane, r.depth, [...r.events], [...r.merged]])).toEqual([
      [0, 0, [0], []],
      [0, 1, [1, 2], [0]],
      [1, 0, [3], []],
    ]);
  });
  it("keeps the piece's length and the extent of its events", () => {
    expect(b.lengthUs).toBe(100);
    expect(b.extentUs).toBe(105);
    expect(b.mergedCount).toBe(7);
  });
  it("indexes matches both ways", () => {
    const e = m.experimental!;
    expect(e.byMatch.get(b.match[1]!)).toBe(1);
    expect(b.match[2]).toBe(-1);
    expect(Number.isNaN(b.delta[2]!)).toBe(true);
  });
  it("gives both sides' numbers of a matched event, from its delta", () => {
    expect(eventNumbers(b, 1)).toMatchObject({ name: "aten::mm", kind: "operator", baselineUs: 20, experimentalUs: 30, deltaUs: 10, matched: true });
    expect(eventNumbers(m.experimental!, 1)).toMatchObject({ baselineUs: 20, experimentalUs: 30 });
    expect(eventNumbers(b, 2)).toMatchObject({ baselineUs: 10, experimentalUs: null, deltaUs: null, matched: false });
  });
  it("finds an event again by its identity, in any answer of its side", () => {
    const e = m.experimental!;
    expect(findEvent(b, eventKey(b, 1))).toBe(1);
    expect(eventKey(b, 1)).toEqual({ side: "baseline", ts: 10, dur: 20, name: "aten::mm" });
    expect(findEvent(e, eventKey(b, 1))).toBe(-1); // the other side
    expect(findEvent(b, { ...eventKey(b, 3), ts: 36 })).toBe(-1); // another start
    expect(findEvent(b, { ...eventKey(b, 0), dur: 50 })).toBe(-1); // another length
  });
  it("finds the first event of a name, of the kinds asked", () => {
    expect(firstNamed(b, "aten::mm")).toBe(1);
    expect(firstNamed(b, "gemm_kernel", ["operator"])).toBe(-1);
    expect(firstNamed(b, "gemm_kernel", ["kernel"])).toBe(3);
    expect(firstNamed(b, "nope")).toBe(-1);
  });
});

describe("hit testing", () => {
  const b = decodeTimeline(RESP).baseline!;
  const row1 = SIDE_HEAD + ROW_H + 2;
  it("finds the event under a time and height", () => {
    expect(hitTest(b, 15, row1, 0)).toEqual({ type: "event", index: 1 });
    expect(hitTest(b, 45, row1, 0)).toEqual({ type: "event", index: 2 });
    expect(hitTest(b, 50, SIDE_HEAD + 2, 0)).toEqual({ type: "event", index: 0 });
    expect(hitTest(b, 40, SIDE_HEAD + 2 * ROW_H + LANE_GAP + 3, 0)).toEqual({ type: "event", index: 3 });
  });
  it("reports merged aggregates, and nothing in gaps or between lanes", () => {
    expect(hitTest(b, 62, row1, 0)).toEqual({ type: "merged", index: 0 });
    expect(hitTest(b, 80, row1, 0)).toBeNull();
    expect(hitTest(b, 15, SIDE_HEAD + 2 * ROW_H + 2, 0)).toBeNull();
    expect(hitTest(b, 15, 2, 0)).toBeNull();
  });
  it("forgives a few pixels' worth of time around small events", () => {
    expect(hitTest(b, 31, row1, 0)).toBeNull();
    expect(hitTest(b, 31, row1, 2)).toEqual({ type: "event", index: 1 });
  });
  it("binary-searches starts", () => {
    const idx = Int32Array.from([0, 1, 2]);
    const ts = Float64Array.from([1, 5, 9]);
    expect([0, 1, 5, 6, 9, 10].map((t) => lastStartingBy(idx, ts, t))).toEqual([-1, 0, 1, 1, 2, 2]);
  });
});

describe("viewport", () => {
  const m = decodeTimeline(RESP);
  it("spans the longer side, or the longer piece when stretched", () => {
    expect(axisLength([m.baseline, m.experimental], false)).toBe(205);
    expect(axisLength([m.baseline, m.experimental], true)).toBe(200);
    expect(sideScale(m.baseline!, 200, true)).toBe(2);
    expect(sideScale(m.baseline!, 200, false)).toBe(1);
  });
  it("zooms around the pointer and stays inside the axis", () => {
    const v = fullView(100);
    const z = zoomAt(v, 0.5, 0.5, 100);
    expect(z).toEqual({ t0: 25, t1: 75 });
    const left = zoomAt(v, 0, 0.1, 100);
    expect(left.t0).toBe(0);
    const out = zoomAt(z, 0.5, 100, 100);
    expect(out).toEqual({ t0: 0, t1: 102 }); // the whole axis and its margin
    const tiny = zoomAt(v, 0.5, 1e-12, 100);
    expect(tiny.t1 - tiny.t0).toBeCloseTo(MIN_SPAN_US, 9);
  });
  it("pans by a share of the view and stops at the ends", () => {
    const v = { t0: 10, t1: 20 };
    expect(panBy(v, 0.5, 100)).toEqual({ t0: 15, t1: 25 });
    expect(panBy(v, -5, 100)).toEqual({ t0: 0, t1: 10 });
    expect(panBy(v, 50, 100).t1).toBeCloseTo(102, 6);
  });
  it("maps time to pixels and back, stretched or not", () => {
    const v = { t0: 0, t1: 200 };
    expect(xOf(50, 2, v, 100, 400)).toBe(300);
    expect(timeAt(300, 2, v, 100, 400)).toBe(50);
    expect(xOf(50, 1, v, 100, 400)).toBe(200);
  });
  it("centres an event with room around it", () => {
    const v = viewAround(50, 10, 1, 200);
    expect(v.t0).toBeLessThan(50);
    expect(v.t1).toBeGreaterThan(60);
  });
});

describe("colour of a delta", () => {
  it("is neutral within 5 %, red when slower, green when faster, deeper with the change", () => {
    expect(deltaBucket(1, 100, 101)).toBe(0);
    expect(deltaBucket(10, 100, 110)).toBeGreaterThan(0);
    expect(deltaBucket(-10, 110, 100)).toBeLessThan(0);
    expect(deltaBucket(100, 100, 200)).toBeGreaterThan(deltaBucket(10, 100, 110));
    expect(deltaBucket(1000, 1, 1001)).toBe(STEPS);
    expect(deltaBucket(-1000, 1001, 1)).toBe(-STEPS);
    expect(deltaBucket(NaN, 1, 1)).toBe(0);
    expect(deltaBucket(5, 0, 0)).toBe(0);
  });
  it("maps buckets to distinct colours, red for slower", () => {
    const all = new Set([...Array(2 * STEPS + 1).keys()].map((k) => bucketColor(k - STEPS)));
    expect(all.size).toBe(2 * STEPS + 1);
    const [r, g] = bucketColor(STEPS).match(/\d+/g)!.map(Number);
    expect(r!).toBeGreaterThan(g!);
    const [r2, g2] = bucketColor(-STEPS).match(/\d+/g)!.map(Number);
    expect(g2!).toBeGreaterThan(r2!);
  });
});

describe("axis ticks", () => {
  it("picks round steps and labels them in µs or ms", () => {
    expect(ticks(0, 100, 5)).toEqual({ values: [0, 20, 40, 60, 80, 100], step: 20 });
    expect(ticks(3, 7.5, 4).step).toBe(2);
    expect(tickLabel(40, 20)).toBe("40 µs");
    expect(tickLabel(2500, 500)).toBe("2.5 ms");
    expect(tickLabel(3000, 1000)).toBe("3 ms");
    expect(tickLabel(0.25, 0.05)).toBe("0.25 µs");
  });
});

describe("Chrome trace export", () => {
  const doc = JSON.parse(JSON.stringify(toChromeTrace(RESP))) as { traceEvents: Record<string, unknown>[] };
  const x = doc.traceEvents.filter((e) => e.ph === "X");
  it("writes both pieces as two processes, lanes as named threads", () => {
    const procs = doc.traceEvents.filter((e) => e.name === "process_name").map((e) => [e.pid, (e.args as { name: string }).name]);
    expect(procs).toEqual([
      [PROCESS_IDS.baseline, "baseline: base — ProfilerStep#1"],
      [PROCESS_IDS.experimental, "experimental: exp — ProfilerStep#1"],
    ]);
    const threads = doc.traceEvents.filter((e) => e.name === "thread_name").map((e) => [e.pid, e.tid, (e.args as { name: string }).name]);
    expect(threads).toContainEqual([1, 2, "GPU 0 · stream 7"]);
    expect(threads).toContainEqual([2, 1, "thread 9"]);
  });
  it("keeps every event, merged aggregates included, with matches and deltas", () => {
    expect(x.filter((e) => e.pid === 1)).toHaveLength(5);
    expect(x.filter((e) => e.pid === 2)).toHaveLength(3);
    const mm = x.filter((e) => e.name === "aten::mm");
    expect(mm.map((e) => [e.pid, e.ts, e.dur, (e.args as { match: number }).match, (e.args as { delta_us: number }).delta_us])).toEqual([
      [1, 10, 20, 1, 10],
      [2, 10, 30, 1, 10],
    ]);
    expect(x.find((e) => e.name === "aten::add")!.args).toEqual({ kind: "operator" });
    expect(x.find((e) => e.name === "7 events merged")).toMatchObject({ pid: 1, tid: 1, ts: 60, dur: 5, cat: "merged" });
  });
  it("names the file after the runs and the piece", () => {
    expect(exportFileName(RESP)).toBe("timeline_base_vs_exp_ProfilerStep_1.json");
  });
});

describe("URL state", () => {
  it("opens the timeline of a piece, with an event to find, from a link", () => {
    const s = { ...DEFAULT_STATE, ...timelineOf("0.2", "aten::mm") };
    const hash = serializeState(s);
    expect(hash).toBe("view=timeline&path=0.2&find=aten%3A%3Amm");
    expect(parseHash(hash)).toMatchObject({ view: "timeline", path: "0.2", find: "aten::mm" });
  });
});
