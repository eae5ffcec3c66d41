/**
 * Answer bodies shaped exactly like the contract's (the generated types make
 * tsc reject a missing or extra field), for the model tests. Deltas are
 * filled in here the way the server does (experimental − baseline, % of the
 * baseline, null when it is 0): the model must show them, never derive them.
 */
import type { DiffKernelRow, DiffModulesResponse, DiffOperatorRow, DiffPiece, StepInfo, WorkerInfo } from "../src/api";

/** A worker of the `runs` answer whose spans are not read yet (ids that name no time). */
export function worker(name: string, spans: string[]): WorkerInfo {
  return { name, spans, span_info: spans.map((span, i) => ({ span, order: i + 1, written_unix_s: null, start_unix_s: null, steps: null })) };
}

const OP_METRICS = ["calls", "host_self_us", "host_total_us", "device_self_us", "device_total_us"] as const;
type OpMetric = (typeof OP_METRICS)[number];

function pct(b: number, e: number): number | null {
  return b === 0 ? null : (100 * (e - b)) / b;
}

/** An operator row; metrics not given are 0 on both sides. */
export function opRow(name: string, sides: Partial<Record<OpMetric, [number, number]>>, shape: string | null = null): DiffOperatorRow {
  const out: Record<string, number | string | null> = { name, input_shape: shape };
  for (const m of OP_METRICS) {
    const [b, e] = sides[m] ?? [0, 0];
    out[`baseline_${m}`] = b;
    out[`experimental_${m}`] = e;
    out[`delta_${m}`] = e - b;
    out[`delta_${m.replace(/_us$/, "")}_pct`] = pct(b, e);
  }
  return out as DiffOperatorRow;
}

export function kernelRow(name: string, calls: [number, number], totalUs: [number, number]): DiffKernelRow {
  const out: Record<string, number | string | null> = { name };
  const sides: Record<string, [number, number]> = {
    calls,
    total_us: totalUs,
    mean_us: [totalUs[0] / (calls[0] || 1), totalUs[1] / (calls[1] || 1)],
    min_us: totalUs,
    max_us: totalUs,
  };
  for (const [m, [b, e]] of Object.entries(sides)) {
    out[`baseline_${m}`] = b;
    out[`experimental_${m}`] = e;
    out[`delta_${m}`] = e - b;
    out[`delta_${m.replace(/_us$/, "")}_pct`] = pct(b, e);
  }
  return out as DiffKernelRow;
}

export function piece(p: Partial<DiffPiece> & Pick<DiffPiece, "name" | "path">, host: [number, number] = [0, 0], device: [number, number] = [0, 0]): DiffPiece {
  return {
    compiled: null,
    kind: "module",
    key: p.name,
    step: null,
    status: "matched",
    baseline_backward_us: null,
    experimental_backward_us: null,
    delta_backward_us: null,
    has_children: false,
    baseline_name: p.name,
    experimental_name: p.name,
    note: null,
    compiled_region: null,
    baseline_host_us: host[0],
    experimental_host_us: host[1],
    delta_host_us: host[1] - host[0],
    delta_host_pct: pct(host[0], host[1]),
    baseline_with_backward_us: host[0],
    experimental_with_backward_us: host[1],
    delta_with_backward_us: host[1] - host[0],
    delta_with_backward_pct: pct(host[0], host[1]),
    baseline_device_us: device[0],
    experimental_device_us: device[1],
    delta_device_us: device[1] - device[0],
    delta_device_pct: pct(device[0], device[1]),
    baseline_calls: 1,
    experimental_calls: 1,
    delta_calls: 0,
    approximate: null,
    significance: null,
    forward_significance: null,
    backward_significance: null,
    ...p,
  };
}

export function step(n: number, breakdown: Partial<StepInfo["breakdown_us"]>): StepInfo {
  const breakdown_us = { kernel: 0, memcpy: 0, memset: 0, communication: 0, runtime: 0, data_loading: 0, cpu_exec: 0, other: 0, ...breakdown };
  return { name: `ProfilerStep#${n}`, step: n, start_us: 0, duration_us: Object.values(breakdown_us).reduce((a, c) => a + c, 0), breakdown_us, device_idle_us: null };
}

/** A diff/modules answer for `children`, with a trend the caller gives (the server's running sums). */
export function modulesResponse(children: DiffPiece[], trend: DiffModulesResponse["trend"], over: Partial<DiffModulesResponse> = {}): DiffModulesResponse {
  const ref = { run: "r", worker: "w", span: "1" };
  return {
    baseline: ref,
    experimental: { ...ref, run: "r2" },
    path: "",
    breadcrumb: [{ name: "All steps", path: "" }],
    node: piece({ name: "All steps", path: "", kind: "root", has_children: true }),
    approximate: false,
    children_total: children.length,
    offset: 0,
    limit: 5000,
    children,
    trend,
    device_present: true,
    device_bound: false,
    per_unit_note: null,
    baseline_recording: null,
    experimental_recording: null,
    recordings_note: null,
    ...over,
  };
}
