/**
 * Typed client of the tb_pipeline HTTP API (docs/http_api.md).
 *
 * The only module that knows URLs. All of them are relative: TensorBoard
 * loads us in an iframe whose <base href> is `plugin/tb_pipeline/` under
 * `/data/`, so `fetch("runs")` reaches `/data/plugin/tb_pipeline/runs`
 * whatever prefix (--path_prefix) TensorBoard is served under.
 */

// ---------------------------------------------------------------- types

/**
 * Of the run's default trace. `unloaded`: not parsed and not queued (the
 * server prefetches only as many runs as it keeps in memory); a data
 * request for the run loads it.
 */
export type RunStatus = "ready" | "loading" | "failed" | "unloaded";

export interface WorkerInfo {
  name: string;
  spans: string[];
}

export interface RunInfo {
  name: string;
  workers: WorkerInfo[];
  kinds: string[];
  status: RunStatus;
  error: string | null;
  warnings: string[];
}

export interface RunsResponse {
  runs: RunInfo[];
  loading: boolean;
}

/** Step-time categories, in the order the backend assigns time to them. */
export const BREAKDOWN_CATEGORIES = [
  "kernel",
  "memcpy",
  "memset",
  "communication",
  "runtime",
  "data_loading",
  "cpu_exec",
  "other",
] as const;
export type BreakdownCategory = (typeof BREAKDOWN_CATEGORIES)[number];
export type Breakdown = Record<BreakdownCategory, number>;

export interface StepInfo {
  name: string;
  step: number;
  start_us: number;
  duration_us: number;
  breakdown_us: Breakdown;
}

export interface DeviceInfo {
  type: string;
  name: string | null;
  count: number | null;
  memory_bytes: number | null;
  compute_capability: string | null;
}

export interface OverviewResponse {
  run: string;
  worker: string;
  span: string;
  device: DeviceInfo;
  distributed: { rank: number; world_size: number; backend: string } | null;
  trace_duration_us: number;
  steps: StepInfo[];
  avg_step_time_us: number;
  breakdown_us: Breakdown;
  gpu_utilization_pct: number | null;
  memory: { avg_bytes: number | null; peak_bytes: number | null };
  warnings: string[];
}

export type DiffUnit = "us" | "bytes" | "pct" | "count" | null;

export interface DiffOverviewRow {
  metric: string;
  label: string;
  unit: DiffUnit;
  baseline: number | string | null;
  experimental: number | string | null;
  delta: number | null;
  delta_pct: number | null;
  /** Per-step metrics only (issue 12); see docs/http_api.md, Significance. */
  significance?: import("./model/explain").Significance | null;
}

export interface TraceRef {
  run: string;
  worker: string;
  span: string;
}

export interface DiffOverviewResponse {
  baseline: TraceRef;
  experimental: TraceRef;
  rows: DiffOverviewRow[];
  /** How the two runs are compared when that is not the plain per-step way (one run has no ProfilerStep annotations, ...). */
  note?: string | null;
}

export type PieceStatus = "matched" | "baseline_only" | "experimental_only";
export type PieceKind = "root" | "data_loading" | "module" | "backward" | "optimizer" | "unknown";

export interface DiffPiece {
  name: string;
  kind: PieceKind | string;
  step?: number;
  path: string;
  status: PieceStatus | string;
  has_children?: boolean;
  baseline_name?: string | null;
  experimental_name?: string | null;
  baseline_host_us: number;
  experimental_host_us: number;
  delta_host_us: number;
  delta_host_pct: number | null;
  baseline_device_us: number;
  experimental_device_us: number;
  delta_device_us: number;
  delta_device_pct: number | null;
  baseline_calls?: number;
  experimental_calls?: number;
  delta_calls?: number;
  /** Why this node is compared the way it is (e.g. one run has no steps). */
  note?: string | null;
}

export interface DiffTrend {
  baseline_host_us: number[];
  experimental_host_us: number[];
  delta_host_us: number[];
  baseline_device_us: number[];
  experimental_device_us: number[];
  delta_device_us: number[];
}

export interface DiffModulesResponse {
  path: string;
  breadcrumb: { name: string; path: string }[];
  node: DiffPiece;
  children: DiffPiece[];
  trend: DiffTrend;
  /** All children of the node; `children` is one page of them. */
  children_total?: number;
  /** The children were aligned by an approximate fallback (huge levels). */
  approximate?: boolean;
}

/** A row of diff/operators or diff/kernels: name plus per-metric fields. */
export interface DiffTableRow {
  name: string;
  input_shape?: string | null;
  [field: string]: number | string | null | undefined;
}

export interface DiffTableResponse {
  total: number;
  offset: number;
  limit: number;
  sort: string;
  order: "asc" | "desc";
  primary: string;
  columns: string[];
  rows: DiffTableRow[];
}

/** Which two traces to compare; the worker/span may be left to the server's default. */
export interface DiffSelection {
  baseline: string;
  experimental: string;
  bWorker?: string;
  bSpan?: string;
  eWorker?: string;
  eSpan?: string;
}

// ---------------------------------------------------------------- errors

/** An API answer that is not 2xx, with the server's own message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** `"loading"` when the server answered 409 (run still being parsed). */
    readonly runStatus: string | null = null,
  ) {
    super(message);
    this.name = "ApiError";
  }
  get isLoading(): boolean {
    return this.status === 409;
  }
}

// ---------------------------------------------------------------- transport

export type FetchLike = (url: string, init?: { signal?: AbortSignal }) => Promise<Response>;

export interface ClientOptions {
  fetch?: FetchLike;
  /** How long to keep polling a 409 ("still loading") before giving up. */
  loadingTimeoutMs?: number;
  /** First delay between 409 retries; doubles up to 2 s. */
  retryDelayMs?: number;
}

/** Per request: cancellation, and a callback told each time the request waits for a run that is still loading (so the UI can say so). */
export interface RequestOpts {
  signal?: AbortSignal;
  onWait?: (message: string) => void;
}

type Params = Record<string, string | number | undefined | null>;

/** Builds `route?k=v&...`, leaving out empty parameters (server defaults apply). */
export function buildUrl(route: string, params: Params = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === "") continue;
    q.set(k, String(v));
  }
  const qs = q.toString();
  return qs ? `${route}?${qs}` : route;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(t);
      reject(new DOMException("aborted", "AbortError"));
    });
  });
}

function diffParams(sel: DiffSelection): Params {
  return {
    baseline: sel.baseline,
    experimental: sel.experimental,
    b_worker: sel.bWorker,
    b_span: sel.bSpan,
    e_worker: sel.eWorker,
    e_span: sel.eSpan,
  };
}

export interface DiffTableQuery {
  sort?: string;
  order?: "asc" | "desc";
  filter?: string;
  offset?: number;
  limit?: number;
  groupBy?: "name" | "name_and_shape";
  path?: string;
}

export class ApiClient {
  private readonly fetchFn: FetchLike;
  private readonly loadingTimeoutMs: number;
  private readonly retryDelayMs: number;

  constructor(opts: ClientOptions = {}) {
    // `fetch` must be called with the window as `this`.
    this.fetchFn = opts.fetch ?? ((url, init) => fetch(url, init));
    this.loadingTimeoutMs = opts.loadingTimeoutMs ?? 120_000;
    this.retryDelayMs = opts.retryDelayMs ?? 250;
  }

  /**
   * GET a route and decode its JSON. A 409 means the run is still parsing:
   * poll with backoff until it is ready (or the timeout passes, then throw
   * the 409 so the UI says "still loading" instead of spinning forever).
   * Any other non-2xx throws an ApiError carrying the server's message.
   */
  async get<T>(route: string, params: Params = {}, opts: RequestOpts = {}): Promise<T> {
    const { signal, onWait } = opts;
    const url = buildUrl(route, params);
    const deadline = Date.now() + this.loadingTimeoutMs;
    let delay = this.retryDelayMs;
    for (;;) {
      const res = await this.fetchFn(url, signal ? { signal } : undefined);
      if (res.ok) return (await res.json()) as T;
      const err = await toApiError(res);
      if (!err.isLoading || Date.now() + delay > deadline) throw err;
      onWait?.(err.message);
      await sleep(delay, signal);
      delay = Math.min(delay * 2, 2000);
    }
  }

  runs(opts?: RequestOpts): Promise<RunsResponse> {
    return this.get<RunsResponse>("runs", {}, opts);
  }

  overview(ref: { run: string; worker?: string; span?: string }, opts?: RequestOpts): Promise<OverviewResponse> {
    return this.get<OverviewResponse>("overview", { run: ref.run, worker: ref.worker, span: ref.span }, opts);
  }

  diffOverview(sel: DiffSelection, opts?: RequestOpts): Promise<DiffOverviewResponse> {
    return this.get<DiffOverviewResponse>("diff/overview", diffParams(sel), opts);
  }

  diffModules(sel: DiffSelection, path: string, opts?: RequestOpts): Promise<DiffModulesResponse> {
    return this.get<DiffModulesResponse>("diff/modules", { ...diffParams(sel), path }, opts);
  }

  diffOperators(sel: DiffSelection, q: DiffTableQuery = {}, opts?: RequestOpts): Promise<DiffTableResponse> {
    return this.get<DiffTableResponse>(
      "diff/operators",
      { ...diffParams(sel), ...tableParams(q), group_by: q.groupBy, path: q.path },
      opts,
    );
  }

  diffKernels(sel: DiffSelection, q: DiffTableQuery = {}, opts?: RequestOpts): Promise<DiffTableResponse> {
    return this.get<DiffTableResponse>("diff/kernels", { ...diffParams(sel), ...tableParams(q) }, opts);
  }
}

function tableParams(q: DiffTableQuery): Params {
  return { sort: q.sort, order: q.order, filter: q.filter, offset: q.offset, limit: q.limit };
}

async function toApiError(res: Response): Promise<ApiError> {
  let message = `${res.status} ${res.statusText}`.trim();
  let runStatus: string | null = null;
  try {
    const body = (await res.json()) as { error?: unknown; run_status?: unknown };
    if (typeof body.error === "string" && body.error) message = body.error;
    if (typeof body.run_status === "string") runStatus = body.run_status;
  } catch {
    // Not JSON (a proxy's HTML error page, say): keep the status line.
  }
  return new ApiError(res.status, message, runStatus);
}

/** Upper bound the server accepts for `limit`; we fetch whole tables and sort locally. */
export const MAX_TABLE_ROWS = 10_000;
