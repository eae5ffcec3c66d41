import { describe, expect, it } from "vitest";
import { byteTickLabels, byteTicks, formatBytes } from "../src/model/format";
import {
  curvePeak,
  segmentRows,
  snapshotChart,
  snapshotDevice,
  stepMarkLabel,
  thinFlat,
  type SnapshotDeviceDiff,
  type SnapshotSide,
} from "../src/model/memorySnapshot";

// Real numbers: diff/memory's snapshot on the H200 amp pair with fp32.pickle / bf16.pickle beside it
// (tb_pipeline_plugin.compare.compare, as tests/report/test_report_snapshot.py): each curve's first two
// points, the three around its peak and its last, its first two ProfilerStep marks, its three largest segments.
const seg = (address: number, allocated: number, blocks: number) => ({
  address, total_bytes: 1048576000, allocated_bytes: allocated, active_bytes: allocated, stream: 0, segment_type: "large", blocks,
});

const BASELINE: SnapshotSide = {
  peak_allocated_bytes: 9814418436, peak_step: "ProfilerStep#1", reserved_at_peak_bytes: 10617880576,
  peak_reserved_bytes: 10617880576, end_reserved_bytes: 10617880576, end_allocated_bytes: 2731841536,
  start_allocated_bytes: 667499120, fragmentation_at_peak_bytes: 803462140, end_fragmentation_bytes: 7886039040,
  largest_segments: [seg(140057138692096, 0, 1), seg(140058212433920, 0, 1), seg(140059353284608, 0, 1)],
  step_peaks: [{ step: "ProfilerStep#1", peak_allocated_bytes: 9814418436 }],
  curve: {
    t_ms: [16.979, 198.553, 468.979, 469.29, 469.502, 1118.46],
    allocated_bytes: [734804592, 1003240048, 8765842440, 9814418436, 8029477868, 2765461508],
    active_bytes: [734804592, 1003240048, 8765842440, 9814418436, 8029477868, 2765461508],
    reserved_bytes: [736100352, 1004535808, 9569304576, 10617880576, 10617880576, 10617880576],
    steps: [{ step: "ProfilerStep#1", t_ms: 460.381 }, { step: "ProfilerStep#2", t_ms: 478.56 }],
  },
};

const EXPERIMENTAL: SnapshotSide = {
  peak_allocated_bytes: 7534006920, peak_step: "ProfilerStep#1", reserved_at_peak_bytes: 7673479168,
  peak_reserved_bytes: 8722055168, end_reserved_bytes: 8722055168, end_allocated_bytes: 2731841536,
  start_allocated_bytes: 667499120, fragmentation_at_peak_bytes: 139472248, end_fragmentation_bytes: 5990213632,
  largest_segments: [seg(140041301000192, 0, 1), seg(140042374742016, 0, 1), seg(140043515592704, 295698432, 9)],
  step_peaks: [{ step: "ProfilerStep#1", peak_allocated_bytes: 7534006920 }],
  curve: {
    t_ms: [22.831, 45.967, 1708.321, 1708.727, 1709.166, 1926.738],
    allocated_bytes: [734810736, 858542704, 5994697344, 7534006920, 7009718916, 2765527044],
    active_bytes: [734810736, 858542704, 5994697344, 7534006920, 7009710724, 2765527044],
    reserved_bytes: [736100352, 874512384, 6624903168, 7673479168, 7673479168, 8722055168],
    steps: [{ step: "ProfilerStep#1", t_ms: 1698.067 }, { step: "ProfilerStep#2", t_ms: 1725.832 }],
  },
};

const DEVICE: SnapshotDeviceDiff = {
  device: "GPU 0", baseline: BASELINE, experimental: EXPERIMENTAL, metrics: [], by_category: [], by_frame: [], by_module: [],
};

describe("the snapshot chart's series", () => {
  const { data, peaks, steps } = snapshotChart(DEVICE);
  const [xs, bAlloc, bRes, eAlloc, eRes] = data;
  const at = (t: number) => xs.indexOf(t);

  it("puts both runs on the union of their times, in ms from each history's start", () => {
    expect(xs).toHaveLength(12);
    expect(xs).toEqual([...xs].sort((a, b) => a - b));
    expect(xs[0]).toBe(16.979);
    expect(xs[xs.length - 1]).toBe(1926.738);
    for (const s of [bAlloc, bRes, eAlloc, eRes]) expect(s).toHaveLength(12);
  });

  it("holds each run's level between its own samples and stops at its ends", () => {
    expect(bAlloc[at(469.29)]).toBe(9814418436);
    expect(bRes[at(469.29)]).toBe(10617880576);
    // Experimental has no sample between 45.967 and 1708.321 ms: its level there is 45.967's.
    expect(eAlloc[at(469.29)]).toBe(858542704);
    expect(eRes[at(469.29)]).toBe(874512384);
    // Before experimental's first action, after baseline's last: nothing drawn.
    expect(eAlloc[at(16.979)]).toBeNull();
    expect(bAlloc[at(1708.727)]).toBeNull();
    expect(bRes[at(1926.738)]).toBeNull();
    expect(eAlloc[at(1708.727)]).toBe(7534006920);
    expect(eRes[at(1926.738)]).toBe(8722055168);
  });

  it("never draws allocated above reserved", () => {
    xs.forEach((_, i) => {
      for (const [a, r] of [[bAlloc[i], bRes[i]], [eAlloc[i], eRes[i]]]) {
        if (a != null && r != null) expect(a).toBeLessThanOrEqual(r);
      }
    });
  });

  it("marks each run's peak where the route's peak is, and its ProfilerStep marks", () => {
    expect(peaks).toEqual([
      { run: "baseline", t_ms: 469.29, bytes: BASELINE.peak_allocated_bytes },
      { run: "experimental", t_ms: 1708.727, bytes: EXPERIMENTAL.peak_allocated_bytes },
    ]);
    expect(steps.map((s) => `${s.run} ${stepMarkLabel(s.step)} ${s.t_ms}`)).toEqual([
      "baseline #1 460.381", "baseline #2 478.56", "experimental #1 1698.067", "experimental #2 1725.832",
    ]);
    expect(stepMarkLabel("ProfilerStep#12")).toBe("#12");
    expect(stepMarkLabel("warmup")).toBe("warmup");
  });

  it("draws one run alone when the other has no snapshot", () => {
    const one = snapshotChart({ ...DEVICE, experimental: null });
    expect(one.data[0]).toEqual(BASELINE.curve.t_ms);
    expect(one.data[3].every((v) => v === null)).toBe(true);
    expect(one.data[4].every((v) => v === null)).toBe(true);
    expect(one.peaks.map((p) => p.run)).toEqual(["baseline"]);
    expect(curvePeak(null)).toBeNull();
    expect(curvePeak({ ...BASELINE.curve, t_ms: [], allocated_bytes: [], active_bytes: [], reserved_bytes: [] })).toBeNull();
    expect(snapshotDevice({ baseline_file: "fp32.pickle", experimental_file: null, messages: [], devices: [{ ...DEVICE, experimental: null }], sentence: "" })?.device).toBe("GPU 0");
  });
});

describe("the dashed reserved lines", () => {
  it("keep each flat run's ends only, so chromium draws their dashes", () => {
    expect(thinFlat([null, 5, 5, 5, 7, 7, 7, null])).toEqual([null, 5, null, 5, 7, null, 7, null]);
    expect(thinFlat([3, 3])).toEqual([3, 3]);
    // The real baseline: reserved is flat at 9.89 GiB from its peak to its last action.
    const br = snapshotChart(DEVICE).data[2];
    const thin = thinFlat(br);
    expect(thin.filter((v) => v === 10617880576)).toHaveLength(2);
    expect(thin.filter((v) => v !== null)).toHaveLength(br.filter((v, i) => v !== null && (v !== br[i - 1] || v !== br[i + 1])).length);
  });
});

describe("the snapshot chart's units", () => {
  it("prints the peaks and reserved bytes in binary units, as the metrics table", () => {
    expect(formatBytes(BASELINE.peak_allocated_bytes)).toBe("9.14 GiB");
    expect(formatBytes(EXPERIMENTAL.peak_allocated_bytes)).toBe("7.02 GiB");
    expect(formatBytes(BASELINE.peak_reserved_bytes)).toBe("9.89 GiB");
    expect(formatBytes(EXPERIMENTAL.peak_reserved_bytes)).toBe("8.12 GiB");
  });

  it("ticks the y axis at round GiB up to the highest reserved", () => {
    const top = BASELINE.peak_reserved_bytes * 1.05;
    const labels = byteTickLabels(byteTicks(0, top, 6));
    expect(labels[0]).toBe("0 GiB");
    expect(labels.every((l) => l.endsWith(" GiB"))).toBe(true);
    expect(labels).toEqual(["0 GiB", "2 GiB", "4 GiB", "6 GiB", "8 GiB", "10 GiB"]);
  });
});

describe("the largest segments table", () => {
  const rows = segmentRows(DEVICE);

  it("lists each run's segments as the route orders them, baseline first", () => {
    expect(rows.map((r) => r.run)).toEqual(["baseline", "baseline", "baseline", "experimental", "experimental", "experimental"]);
    expect(rows[0]?.address).toBe("0x7f6198000000");
    expect(formatBytes(rows[0]?.total_bytes)).toBe("1,000 MiB");
  });

  it("gives each segment's free bytes and the share allocated", () => {
    const last = rows[5];
    expect(last?.allocated_bytes).toBe(295698432);
    expect(last?.free_bytes).toBe(1048576000 - 295698432);
    expect(last?.used).toBeCloseTo(0.282, 3);
    expect(last?.blocks).toBe(9);
    expect(rows[0]?.used).toBe(0);
    expect(segmentRows({ ...DEVICE, baseline: { ...BASELINE, largest_segments: [{ ...seg(1, 0, 0), total_bytes: 0 }] } })[0]?.used).toBeNull();
  });

  it("keeps at most `limit` a run", () => {
    expect(segmentRows(DEVICE, 2).map((r) => r.run)).toEqual(["baseline", "baseline", "experimental", "experimental"]);
    expect(segmentRows({ ...DEVICE, baseline: null, experimental: null })).toEqual([]);
  });
});
