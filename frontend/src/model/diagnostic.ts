/**
 * Diagnostic view data shaping: which runs to show, chart series over
 * concurrency levels, and the words around them. Pure functions over the
 * `diagnostic` / `diff/diagnostic` answers; every number (verdicts, best
 * concurrency, ratios, speed-ups) comes from the server, this only aligns,
 * formats and picks.
 */
import type {
  DiagnosticEnvironment,
  DiagnosticPoint,
  DiagnosticReport,
  DiagnosticStage,
  DiagnosticStageDiff,
  DiffDiagnosticResponse,
  RunInfo,
  StageChange,
  Verdict,
} from "../api";
import { EM_DASH, formatBytes, formatInt } from "./format";

export const EXECUTORS = ["thread", "process"] as const;
export type Executor = (typeof EXECUTORS)[number];
export const EXECUTOR_LABELS: Record<Executor, string> = { thread: "threads", process: "processes" };

/** What the tab shows for the picked runs. */
export type DiagnosticPlan =
  | { kind: "pair"; baseline: string; experimental: string }
  /** One run's results; `missing`: the other picked run, which has none (null when the same run is picked twice). */
  | { kind: "single"; run: string; side: "baseline" | "experimental"; missing: string | null }
  | { kind: "none"; picked: string[] };

export function hasDiagnostic(runs: readonly RunInfo[], name: string): boolean {
  return runs.some((r) => r.name === name && r.kinds.includes("diagnostic"));
}

export function diagnosticPlan(runs: readonly RunInfo[], baseline: string, experimental: string): DiagnosticPlan {
  const b = hasDiagnostic(runs, baseline);
  const e = hasDiagnostic(runs, experimental);
  if (b && e && baseline !== experimental) return { kind: "pair", baseline, experimental };
  if (b) return { kind: "single", run: baseline, side: "baseline", missing: baseline === experimental || e ? null : experimental };
  if (e) return { kind: "single", run: experimental, side: "experimental", missing: baseline };
  return { kind: "none", picked: [...new Set([baseline, experimental].filter((r) => r))] };
}

/** Per stage (matched by name, the server's order): the diff row and each side's stage. */
export interface StagePair {
  stage: string;
  diff: DiagnosticStageDiff;
  baseline: DiagnosticStage | undefined;
  experimental: DiagnosticStage | undefined;
}

export function pairStages(d: DiffDiagnosticResponse): StagePair[] {
  const find = (r: DiagnosticReport, name: string) => r.stages.find((s) => s.stage === name);
  return d.stages.map((diff) => ({
    stage: diff.stage,
    diff,
    baseline: find(d.baseline_report, diff.stage),
    experimental: find(d.experimental_report, diff.stage),
  }));
}

/** One run's report with the run it is of: a one-run answer, or one side of a pair's. */
export type NamedReport = DiagnosticReport & { run: string };

export function pairReports(d: DiffDiagnosticResponse): { baseline: NamedReport; experimental: NamedReport } {
  return { baseline: { ...d.baseline_report, run: d.baseline.run }, experimental: { ...d.experimental_report, run: d.experimental.run } };
}

export type Metric = "qps" | "cpu_pct" | "peak_memory_bytes";

/** Every level any curve of these stages measured, ascending: the shared x values of their charts. */
export function levels(stages: readonly (DiagnosticStage | undefined)[]): number[] {
  const all = new Set<number>();
  for (const s of stages) for (const c of s?.curves ?? []) for (const p of c.points) all.add(p.concurrency);
  return [...all].sort((a, b) => a - b);
}

/** One series per executor, aligned to `xs`; null where that executor did not run the level (or has no curve). */
export function curveSeries(stage: DiagnosticStage, metric: Metric, xs: readonly number[]): Record<Executor, (number | null)[]> {
  const out = {} as Record<Executor, (number | null)[]>;
  for (const ex of EXECUTORS) {
    const curve = stage.curves.find((c) => c.executor === ex);
    out[ex] = xs.map((x) => {
      const p = curve?.points.find((q) => q.concurrency === x);
      return p ? p[metric] : null;
    });
  }
  return out;
}

/** The largest value of `metric` over these stages' points (a shared y range, so two sides compare by eye); 0 with none. */
export function metricMax(stages: readonly (DiagnosticStage | undefined)[], metric: Metric): number {
  let max = 0;
  for (const s of stages) for (const c of s?.curves ?? []) for (const p of c.points) max = Math.max(max, p[metric]);
  return max;
}

/** A log2 x range with some room around the first and last level. */
export function levelRange(xs: readonly number[]): [number, number] {
  if (xs.length === 0) return [0.5, 2];
  return [xs[0]! / 1.3, xs[xs.length - 1]! * 1.3];
}

/** An x tick label: log2 splits come back as 3.9999999 and the like; only whole levels >= 1 are labelled. */
export function levelTick(v: number): string {
  const r = Math.round(v);
  return r >= 1 && Math.abs(v - r) < 1e-6 ? String(r) : "";
}

const qpsFmt0 = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const qpsFmt1 = new Intl.NumberFormat("en-US", { minimumFractionDigits: 1, maximumFractionDigits: 1 });

/** 273.08 -> "273", 4.26 -> "4.3": whole calls per second where they are many. */
export function formatQps(qps: number | null | undefined): string {
  if (qps === null || qps === undefined || !Number.isFinite(qps)) return EM_DASH;
  return Math.abs(qps) >= 100 ? qpsFmt0.format(qps) : qpsFmt1.format(qps);
}

/** 0.0012 s -> "1.20 ms". */
export function formatLatency(s: number | null | undefined): string {
  if (s === null || s === undefined || !Number.isFinite(s)) return EM_DASH;
  return `${(s * 1000).toFixed(2)} ms`;
}

export function formatCpu(pct: number | null | undefined): string {
  if (pct === null || pct === undefined || !Number.isFinite(pct)) return EM_DASH;
  return `${formatInt(pct)} %`;
}

/** "×0.52" (experimental / baseline). */
export function formatRatio(r: number | null | undefined): string {
  if (r === null || r === undefined || !Number.isFinite(r)) return EM_DASH;
  return `×${r.toFixed(2)}`;
}

/** "×0.58 ± 0.12": the ratio and half its interval's width (the server's words use the same); the bare ratio without an interval. */
export function formatRatioInterval(r: number | null | undefined, low: number | null | undefined, high: number | null | undefined): string {
  if (r === null || r === undefined || !Number.isFinite(r)) return EM_DASH;
  if (low === null || low === undefined || high === null || high === undefined) return formatRatio(r);
  return `${formatRatio(r)} ± ${((high - low) / 2).toFixed(2)}`;
}

export const CHANGE_LABELS: Record<StageChange, string> = {
  same: "same verdict",
  changed: "changed",
  within_noise: "within noise",
  machine_busy: "machine busy",
  no_interval: "no interval",
  one_side: "one run only",
};

/** The executors whose best level differs, judged against noise ("threads: changed · processes: within noise"); null when neither moved. */
export function bestLevelChangeText(diff: DiagnosticStageDiff): string | null {
  const parts = EXECUTORS.flatMap((ex) => {
    const c = ex === "thread" ? diff.best_thread_concurrency_change : diff.best_process_concurrency_change;
    return c === null || c === "same" ? [] : [`${EXECUTOR_LABELS[ex]}: ${CHANGE_LABELS[c]}`];
  });
  return parts.length ? `Best level differs (${parts.join(" · ")})` : null;
}

/** Why a stage's QPS may not be its own, or null: other processes crowded the machine while it was measured. */
export function crowdedText(stage: DiagnosticStage): string | null {
  if (!stage.crowded) return null;
  return `Other processes took up to ${formatInt(stage.others_cpu_pct)} % CPU while this stage was measured on a full machine: if it computes, it got what they left, and its QPS says as much about them as about the stage.`;
}

/** A point's QPS interval, "24,458–30,108"; a dash for results written before levels were sliced. */
export function qpsIntervalText(p: DiagnosticPoint): string {
  if (p.qps_low === null || p.qps_high === null) return EM_DASH;
  return `${formatQps(p.qps_low)}–${formatQps(p.qps_high)}`;
}

/** good: the stage uses what it is given; bad: something caps it; neutral: nothing to say either way (a stage
 * parallel inside uses its cores, and the advice is in its reason). */
export function verdictTone(v: Verdict): "good" | "bad" | "neutral" {
  if (v === "scales" || v === "io_bound") return "good";
  if (v === "gil_bound" || v === "contention" || v === "cpu_saturated" || v === "oversubscribed" || v === "failing") return "bad";
  return "neutral";
}

/** The levels not run for the time budget or for memory, one line each ("processes ×8: time: would take about 40 s, ..."). */
export function skippedLevelLines(stage: DiagnosticStage): string[] {
  return stage.skipped_levels.map((s) => `${EXECUTOR_LABELS[s.executor]} ×${s.concurrency}: ${s.cause}: ${s.reason}`);
}

/** torch's intra-op threads the sweep ran with, in words; null when unknown (torch not loaded, or older results). */
export function threadsText(env: DiagnosticEnvironment): string | null {
  const main = env.intra_op_threads;
  const workers = env.process_intra_op_threads;
  if (main === null && workers === null) return null;
  const plural = (n: number) => `${n} intra-op thread${n === 1 ? "" : "s"}`;
  const parts = [main === null ? null : `${plural(main)} in threads`, workers === null ? "inherited by processes" : `${plural(workers)} a worker process`];
  return `torch: ${parts.filter((p) => p !== null).join(", ")}`;
}

/** Best concurrency per executor in words, or why there is none. */
export function bestText(stage: DiagnosticStage, executor: Executor): string {
  const level = executor === "thread" ? stage.best_thread_concurrency : stage.best_process_concurrency;
  const qps = executor === "thread" ? stage.best_thread_qps : stage.best_process_qps;
  if (level === null) {
    if (executor === "process" && stage.process_skipped) return `not measured (${stage.process_skipped})`;
    return "not measured";
  }
  return `${level} ${level === 1 ? EXECUTOR_LABELS[executor].replace(/e?s$/, "") : EXECUTOR_LABELS[executor]} (${formatQps(qps)} QPS)`;
}

export interface GilRow {
  function: string;
  /** basename:line, the full path in `file`; a dash without a file. */
  where: string;
  file: string;
  line: number;
  samples: number;
  sharePct: number;
}

export function gilRows(stage: DiagnosticStage): GilRow[] {
  return (stage.gil?.top ?? []).map((h) => ({
    function: h.function,
    // A function with no source file (the sampler's own loop between calls) is nowhere to look: a dash.
    where: h.file ? `${h.file.split(/[\\/]/).pop() ?? h.file}:${h.line}` : EM_DASH,
    file: h.file,
    line: h.line,
    samples: h.samples,
    sharePct: 100 * h.share,
  }));
}

/** One line about the GIL sampling of a stage: how much of the time it was held, or why there was no sampling. */
export function gilSummary(stage: DiagnosticStage): string {
  const g = stage.gil;
  if (!g) return "GIL not sampled (no thread sweep, or sampling was turned off).";
  if (g.skipped) return `GIL not sampled: ${g.skipped}`;
  const held = `${Math.round(100 * g.held_share)} %`;
  return `At ${g.concurrency} thread${g.concurrency === 1 ? "" : "s"} the GIL was held ${held} of the sampled time (${formatInt(g.total_samples)} sample${g.total_samples === 1 ? "" : "s"}).`;
}

export function environmentText(env: DiagnosticEnvironment | null): string {
  if (!env) return "Machine unknown (no environment record).";
  const impl = env.implementation === "cpython" ? "CPython" : env.implementation;
  const version = env.python.split(" ")[0] ?? env.python;
  const gil = env.free_threaded ? (env.gil_enabled ? "free-threaded build, GIL on" : "free-threaded, no GIL") : "GIL build";
  const threads = threadsText(env);
  const budget = env.time_limit_s === null ? "" : ` · time budget ${env.time_limit_s} s`;
  return `${env.cores} core${env.cores === 1 ? "" : "s"} · ${impl} ${version} (${gil}) · processes by ${env.process_start_method} · levels ${env.levels.join(", ")} · ${env.duration_s} s per level${budget}${threads ? ` · ${threads}` : ""}`;
}

/** Why a result is partial, in words; null when it is complete. */
export function statusText(r: DiagnosticReport): string | null {
  if (r.complete && !r.cut_short) return null;
  if (r.complete) return `The sweep was cut short${r.reason ? ` (${r.reason})` : ""}: what was measured is shown.`;
  return "The sweep has not finished (still running, or it was killed): what was written so far is shown.";
}

export interface PointRow {
  key: string;
  executor: Executor;
  concurrency: number;
  qps: string;
  /** The level's QPS interval, or a dash. */
  qpsInterval: string;
  p50: string;
  p90: string;
  cpu: string;
  memory: string;
  errors: number;
  /** torch's intra-op threads in the workers, or a dash. */
  threads: string;
  /** Cores one call kept busy per calling thread ("2.0"), or a dash. */
  coresPerCall: string;
  /** Why the level stopped early, or null. */
  cutReason: string | null;
  /** The raw QPS, for tests and copy-paste. */
  rawQps: number;
}

/** Every sweep point of a stage as table rows, threads first. */
export function pointRows(stage: DiagnosticStage): PointRow[] {
  return stage.curves.flatMap((c) =>
    c.points.map((p) => ({
      key: `${c.executor}-${p.concurrency}`,
      executor: c.executor,
      concurrency: p.concurrency,
      qps: formatQps(p.qps),
      qpsInterval: qpsIntervalText(p),
      p50: formatLatency(p.p50_latency_s),
      p90: formatLatency(p.p90_latency_s),
      cpu: formatCpu(p.cpu_pct),
      memory: formatBytes(p.peak_memory_bytes),
      errors: p.errors,
      threads: p.intra_op_threads === null ? EM_DASH : String(p.intra_op_threads),
      coresPerCall: p.cores_per_caller === null ? EM_DASH : p.cores_per_caller.toFixed(1),
      cutReason: p.cut_reason,
      rawQps: p.qps,
    })),
  );
}
