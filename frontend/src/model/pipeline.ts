/**
 * Data shaping for the Pipeline view (pure): the step split as bar
 * segments, the summary rows in words, trend lines of any number of runs
 * aligned for uPlot, and the stage / callback delta tables. Every number
 * comes from `pipeline` / `diff/pipeline`; nothing is recomputed here but
 * unit conversions and the alignment of time axes.
 */
import type { DiffPipelineStageRow, HostPoint, PipelineRecording, PipelineReport, PipelineSummaryRow, RunInfo } from "../api";
import { EM_DASH, formatBytes, formatDecimal, formatInt, formatMsWithUnit, formatPct, formatSignedInt, formatSignedMsWithUnit, formatSignedPoints, type Polarity } from "./format";
import { buildColumns, field, metricLabel, type Column } from "./tableModel";

// ---------------------------------------------------------------- split

export type SplitPart = "data_wait" | "compute" | "callbacks" | "other";

export const SPLIT_PARTS: readonly { part: SplitPart; label: string; color: string }[] = [
  { part: "data_wait", label: "Data wait", color: "#fbc02d" },
  { part: "compute", label: "Compute", color: "#3f51b5" },
  { part: "callbacks", label: "Callbacks", color: "#9c27b0" },
  { part: "other", label: "Other", color: "#b0bec5" },
];

export interface SplitSegment {
  part: SplitPart;
  label: string;
  color: string;
  /** Mean per step, seconds; null when the run has no steps. */
  seconds: number | null;
  /** Share of the step, 0–100; null when the run has no steps. */
  pct: number | null;
}

export function splitSegments(report: PipelineReport): SplitSegment[] {
  const s = report.split;
  const get = (part: SplitPart): [number | null, number | null] => {
    switch (part) {
      case "data_wait":
        return [s.data_wait_s, s.data_wait_pct];
      case "compute":
        return [s.compute_s, s.compute_pct];
      case "callbacks":
        return [s.callbacks_s, s.callbacks_pct];
      case "other":
        return [s.other_s, s.other_pct];
    }
  };
  return SPLIT_PARTS.map(({ part, label, color }) => {
    const [seconds, pct] = get(part);
    return { part, label, color, seconds, pct };
  });
}

/** "Data wait 43.7 % (11.75 ms per step)". */
export function segmentText(seg: SplitSegment): string {
  if (seg.pct === null) return `${seg.label} ${EM_DASH}`;
  return `${seg.label} ${formatPct(seg.pct, false)} (${formatMsWithUnit(seg.seconds === null ? null : seg.seconds * 1e6)} per step)`;
}

export const VERDICT_TITLES: Record<PipelineReport["input_bound"]["verdict"], string> = {
  yes: "Input-bound",
  partly: "Partly input-bound",
  no: "Not input-bound",
  unknown: "No steps recorded",
};

export const SOURCE_TEXT: Record<PipelineReport["source"], string> = {
  recorder: "recorded in the training loop",
  launcher: "recorded by tb-pipeline record (no code change)",
  composer: "read from a Composer trace",
  trace: "from the profiler trace's DataLoader annotations (no statistics recorded)",
};

// ---------------------------------------------------------------- summary rows

/** Higher steps/s is better; counts and host load are neither; times and shares: lower is better. */
export function summaryPolarity(row: PipelineSummaryRow): Polarity {
  if (row.unit === "1/s") return "higher";
  if (row.unit === "count" || row.metric.startsWith("host.")) return "neutral";
  return "lower";
}

export function summaryValueText(row: PipelineSummaryRow, v: number | null): string {
  if (v === null) return EM_DASH;
  switch (row.unit) {
    case "s":
      return formatMsWithUnit(v * 1e6);
    case "pct":
      return formatPct(v, false);
    case "bytes":
      return formatBytes(v);
    case "count":
      return formatInt(v);
    case "1/s":
      return `${formatDecimal(v)}/s`;
  }
}

export function summaryDeltaText(row: PipelineSummaryRow): string {
  const d = row.delta;
  if (d === null) return EM_DASH;
  switch (row.unit) {
    case "s":
      return formatSignedMsWithUnit(d * 1e6);
    case "pct":
      return formatSignedPoints(d);
    case "bytes":
      return formatBytes(d, true);
    case "count":
      return formatSignedInt(d);
    case "1/s":
      return `${formatDecimal(d, true)}/s`;
  }
}

// ---------------------------------------------------------------- trends

export interface TrendRun {
  name: string;
  report: PipelineReport;
}

export interface Trend {
  /** Seconds since each run's first record, the union of all runs' sample times. */
  xs: number[];
  /** One array per run, aligned to `xs`; null where that run has no sample. */
  ys: (number | null)[][];
}

/**
 * Lines of several runs on one time axis. Each run's samples are at its own
 * times, so the x values are the sorted union and a run is null between
 * its samples (the chart draws across the gaps).
 */
export function alignTrend(series: readonly { xs: readonly number[]; ys: readonly (number | null)[] }[]): Trend {
  const xs = [...new Set(series.flatMap((s) => s.xs))].sort((a, b) => a - b);
  const at = new Map(xs.map((x, i) => [x, i]));
  const ys = series.map((s) => {
    const out: (number | null)[] = new Array<number | null>(xs.length).fill(null);
    s.xs.forEach((x, i) => {
      const j = at.get(x);
      const y = s.ys[i];
      if (j !== undefined && y !== undefined) out[j] = y;
    });
    return out;
  });
  return { xs, ys };
}

export type ThroughputMetric = "steps_per_s" | "samples_per_s";

/** Throughput of each run over time, plotted at the middle of each window. */
export function throughputTrend(runs: readonly TrendRun[], metric: ThroughputMetric): Trend {
  return alignTrend(
    runs.map(({ report }) => ({
      xs: report.throughput.series.map((p) => p.t_s + p.window_s / 2),
      ys: report.throughput.series.map((p) => p[metric]),
    })),
  );
}

/** Samples/s only when every plotted run knows its batch sizes; steps/s otherwise. */
export function throughputMetric(runs: readonly TrendRun[]): ThroughputMetric {
  return runs.length > 0 && runs.every((r) => r.report.throughput.samples_per_s !== null) ? "samples_per_s" : "steps_per_s";
}

export type HostMetric = Exclude<keyof HostPoint, "t_s">;

export const HOST_METRICS: readonly { key: HostMetric; label: string; unit: "pct" | "bytes" | "bytes_per_s" }[] = [
  { key: "cpu_pct", label: "CPU (process tree, %)", unit: "pct" },
  // Share of the interval a thread asking for the GIL waited for it (record/gil_contention.py).
  { key: "gil_contention_pct", label: "GIL contention (%)", unit: "pct" },
  { key: "rss_bytes", label: "Resident memory", unit: "bytes" },
  { key: "mem_used_bytes", label: "System memory used", unit: "bytes" },
  { key: "gpu_util_pct", label: "GPU utilization (driver samples, %)", unit: "pct" },
  { key: "gpu_mem_used_bytes", label: "GPU memory used", unit: "bytes" },
  { key: "disk_read_bytes_per_s", label: "Disk read (/s)", unit: "bytes_per_s" },
  { key: "disk_write_bytes_per_s", label: "Disk write (/s)", unit: "bytes_per_s" },
  { key: "net_recv_bytes_per_s", label: "Network received (/s)", unit: "bytes_per_s" },
  { key: "net_sent_bytes_per_s", label: "Network sent (/s)", unit: "bytes_per_s" },
];

/** Host metrics with at least one sample in any run (a CPU-only host has no GPU lines). */
export function presentHostMetrics(runs: readonly TrendRun[]): HostMetric[] {
  return HOST_METRICS.filter((m) => runs.some((r) => r.report.host.series.some((p) => p[m.key] !== null))).map((m) => m.key);
}

export function hostTrend(runs: readonly TrendRun[], metric: HostMetric): Trend {
  return alignTrend(runs.map(({ report }) => ({ xs: report.host.series.map((p) => p.t_s), ys: report.host.series.map((p) => p[metric]) })));
}

export function hostValueText(metric: HostMetric, v: number | null): string {
  const unit = HOST_METRICS.find((m) => m.key === metric)?.unit;
  if (v === null) return EM_DASH;
  if (unit === "pct") return formatPct(v, false);
  if (unit === "bytes") return formatBytes(v);
  return `${formatBytes(v)}/s`;
}

/**
 * Runs that can be added to the trend plots besides the picked pair: any
 * run with pipeline statistics or a trace (a trace gives a step split),
 * not already plotted, in the server's order.
 */
export function extraRunChoices(runs: readonly RunInfo[], plotted: readonly string[]): string[] {
  return runs.filter((r) => !plotted.includes(r.name) && plottable(r)).map((r) => r.name);
}

function plottable(r: RunInfo): boolean {
  return r.kinds.includes("pipeline") || r.kinds.includes("trace");
}

/**
 * The added runs (kept in the URL) that are still plotted: those the server
 * still has with something to plot, besides the picked pair, in the order added.
 */
export function addedRuns(added: readonly string[], runs: readonly RunInfo[], pair: readonly string[]): string[] {
  return added.filter((name) => !pair.includes(name) && runs.some((r) => r.name === name && plottable(r)));
}

/** Colours of extra runs on trend plots (baseline and experimental keep theirs). */
export const EXTRA_RUN_COLORS = ["#2e7d32", "#8e24aa", "#00838f", "#6d4c41", "#c2185b", "#546e7a"] as const;

export function extraRunColor(i: number): string {
  return EXTRA_RUN_COLORS[i % EXTRA_RUN_COLORS.length] ?? "#546e7a";
}

// ---------------------------------------------------------------- delta tables

export const STAGE_METRICS = ["task_mean_s", "task_cpu_mean_s", "qps", "busy_pct", "occupancy_pct", "get_wait_mean_s", "put_wait_mean_s", "concurrency"] as const;
export const STAGE_PRIMARY = "task_mean_s";
export const CALLBACK_METRICS = ["per_step_s", "calls", "mean_s", "total_s"] as const;
export const CALLBACK_PRIMARY = "per_step_s";

export type NamedStageRow = DiffPipelineStageRow & { name: string };

/** pipeline_index of a DataLoader's parts (fetch, collate_fn), recorded beside SPDL stages. */
export const LOADER_PIPELINE_INDEX = -1;

/**
 * Stage rows with a display name: SPDL's stage name, prefixed with the
 * pipeline's position when the runs hold several pipelines; a DataLoader's
 * parts always say so.
 */
export function namedStageRows(rows: readonly DiffPipelineStageRow[]): NamedStageRow[] {
  const pipelines = new Set(rows.map((r) => r.pipeline_index).filter((i) => i !== LOADER_PIPELINE_INDEX));
  return rows.map((r) => {
    const stage = r.stage_name ?? "(unnamed stage)";
    if (r.pipeline_index === LOADER_PIPELINE_INDEX) return { ...r, name: `DataLoader · ${stage}` };
    return { ...r, name: pipelines.size > 1 ? `pipeline ${r.pipeline_index + 1} · ${stage}` : stage };
  });
}

/**
 * Why some stage cells are "—" (null: a run has the stage but did not
 * measure that), in words under the table; null when every cell holds a
 * number. A DataLoader's parts are timed call by call with no queue between
 * them, so items/s, queue waits, occupancy and the workers' busy share are
 * not theirs to have; their concurrency is the loader's workers, none when
 * the main process loads (`num_workers=0`).
 */
export function unmeasuredStageNote(rows: readonly NamedStageRow[]): string | null {
  const unmeasured = (r: NamedStageRow, m: string) => field(r, `baseline_${m}`) === null || field(r, `experimental_${m}`) === null;
  const metrics = STAGE_METRICS.filter((m) => rows.some((r) => unmeasured(r, m)));
  if (metrics.length === 0) return null;
  const names = metrics.map((m) => metricLabel(m)).join(", ");
  const loaderOnly = rows.every((r) => r.pipeline_index === LOADER_PIPELINE_INDEX || !STAGE_METRICS.some((m) => unmeasured(r, m)));
  const why = loaderOnly
    ? ": a DataLoader's parts are timed call by call, with no queue between them, so items/s, queue waits, occupancy and how busy the workers are are not measured (SPDL stages have them); their concurrency is the loader's workers, none when the main process loads (num_workers=0)."
    : " in that run.";
  return `— where a run did not measure it (${names})${why}`;
}

export function stageColumns(): Column[] {
  return withNameTitle(buildColumns(STAGE_METRICS, false, STAGE_PRIMARY), "Stage");
}

export function callbackColumns(): Column[] {
  return withNameTitle(buildColumns(CALLBACK_METRICS, false, CALLBACK_PRIMARY), "Callback");
}

function withNameTitle(cols: Column[], title: string): Column[] {
  return cols.map((c) => (c.role === "name" ? { ...c, label: title, title } : c));
}

/** One recording of a pooled group, in words: "base/r1: 12.3 ms per step, data wait 4 %, not input-bound". */
export function recordingText(r: PipelineRecording): string {
  const step = r.mean_step_s === null ? "no steps" : `${formatMsWithUnit(r.mean_step_s * 1e6)} per step`;
  const wait = r.data_wait_pct === null ? "" : `, data wait ${formatPct(r.data_wait_pct, false)}`;
  return `${r.name}: ${step}${wait}, ${VERDICT_TITLES[r.input_bound].toLowerCase()}`;
}
