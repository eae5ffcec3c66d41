/**
 * Typed client of the tb_pipeline HTTP API (docs/http_api.md).
 *
 * The only module that knows URLs. All of them are relative: TensorBoard
 * loads us in an iframe whose <base href> is `plugin/tb_pipeline/` under
 * `/data/`, so `fetch("runs")` reaches `/data/plugin/tb_pipeline/runs`
 * whatever prefix (--path_prefix) TensorBoard is served under.
 */
import type { components } from "./generated/api";
import { BREAKDOWN_CATEGORIES as GENERATED_CATEGORIES } from "./generated/tableRules";

// ---------------------------------------------------------------- types

/*
 * Every response type is the generated one (src/generated/api.ts, from
 * docs/openapi.json, from the server's msgspec Structs in
 * tb_pipeline_plugin/contract/): declared once, in Python. Only
 * aliases live here, under the names the views use.
 */
type Schemas = components["schemas"];

export type WorkerInfo = Schemas["WorkerInfo"];
export type SpanInfo = Schemas["SpanInfo"];
export type RunInfo = Schemas["RunInfo"];
/**
 * Of the run's default trace. `unloaded`: not parsed and not queued (the
 * server prefetches only as many runs as it keeps in memory); a data
 * request for the run loads it.
 */
export type RunStatus = RunInfo["status"];
export type RunsResponse = Schemas["RunsResponse"];

export type Breakdown = Schemas["Breakdown"];
export type BreakdownCategory = keyof Breakdown;
/** Step-time categories, in the order the backend assigns time to them: generated from analysis/overview.py (a test checks it lists every category of the contract). */
export const BREAKDOWN_CATEGORIES = GENERATED_CATEGORIES satisfies readonly BreakdownCategory[];

export type StepInfo = Schemas["StepInfo"];
export type DeviceInfo = Schemas["DeviceInfo"];
export type OverviewResponse = Schemas["OverviewResponse"];

export type RunRef = Schemas["RunRef"];
export type DiffOverviewRow = Schemas["DiffOverviewRow"];
export type DiffUnit = DiffOverviewRow["unit"];
export type DiffOverviewResponse = Schemas["DiffOverviewResponse"];
export type DiffExplainResponse = Schemas["DiffExplainResponse"];

export type DiffPiece = Schemas["DiffPiece"];
export type PieceKind = DiffPiece["kind"];
export type PieceStatus = DiffPiece["status"];
export type DiffTrend = Schemas["DiffTrend"];
export type DiffModulesResponse = Schemas["DiffModulesResponse"];

export type DiffOperatorRow = Schemas["DiffOperatorRow"];
export type DiffKernelRow = Schemas["DiffKernelRow"];
export type DiffOperatorsResponse = Schemas["DiffOperatorsResponse"];
export type DiffKernelsResponse = Schemas["DiffKernelsResponse"];
/** A diff table answer; `table` says which (and so the shape of its rows). */
export type DiffTableResponse = DiffOperatorsResponse | DiffKernelsResponse;
export type DiffTableKind = DiffTableResponse["table"];
export type DiffTableRow = DiffTableResponse["rows"][number];
export type GroupBy = DiffOperatorsResponse["group_by"];
/** What a diff table's rows are grouped by: operators by name (and shape), kernels by name or by what launched them. */
export type DiffTableGroupBy = GroupBy | DiffKernelsResponse["group_by"];

export type DiffTimelineResponse = Schemas["DiffTimelineResponse"];
export type TimelineSide = Schemas["TimelineSide"];
export type TimelineKind = DiffTimelineResponse["kinds"][number];

export type DiagnosticResponse = Schemas["DiagnosticResponse"];
export type DiagnosticReport = Schemas["DiagnosticReport"];
export type DiagnosticStage = Schemas["DiagnosticStage"];
export type DiagnosticCurve = Schemas["DiagnosticCurve"];
export type DiagnosticPoint = Schemas["DiagnosticPoint"];
export type DiagnosticGil = Schemas["DiagnosticGil"];
export type DiagnosticEnvironment = Schemas["DiagnosticEnvironment"];
export type DiagnosticStageDiff = Schemas["DiagnosticStageDiff"];
export type DiffDiagnosticResponse = Schemas["DiffDiagnosticResponse"];
export type Verdict = DiagnosticStage["verdict"];
export type StageChange = DiagnosticStageDiff["change"];
export type PipelineReport = Schemas["PipelineReport"];
export type PipelineResponse = Schemas["PipelineResponse"];
export type DiffPipelineResponse = Schemas["DiffPipelineResponse"];
export type PipelineSummaryRow = Schemas["PipelineSummaryRow"];
export type PipelineRecording = Schemas["PipelineRecording"];
export type DiffPipelineStageRow = Schemas["DiffPipelineStageRow"];
export type DiffPipelineCallbackRow = Schemas["DiffPipelineCallbackRow"];
export type ThroughputPoint = Schemas["ThroughputPoint"];
export type HostPoint = Schemas["HostPoint"];
export type DistributedResponse = Schemas["DistributedResponse"];
export type RunRanks = Schemas["RunRanks"];
export type RankRow = Schemas["RankRow"];
export type RankDeltaRow = Schemas["RankDeltaRow"];
export type PercentileDeltaRow = Schemas["PercentileDeltaRow"];
export type Straggler = Schemas["Straggler"];

/** Which two traces to compare; the worker/span may be left to the server's default. */
export interface DiffSelection {
  baseline: string;
  experimental: string;
  bWorker?: string;
  bSpan?: string;
  eWorker?: string;
  eSpan?: string;
  /** Samples / tokens per step given for a run whose statistics do not say (diff/units.py). */
  bSamples?: number;
  eSamples?: number;
  bTokens?: number;
  eTokens?: number;
}

// ---------------------------------------------------------------- errors

/** An API answer that is not 2xx, with the server's own message; status 0: no answer at all. */
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
  /** First delay between 409 retries; doubles up to `MAX_RETRY_DELAY_MS`. */
  retryDelayMs?: number;
}

/** The longest pause between two asks of a run still loading, when the
 * server answered 409 without waiting (`LOADING_WAIT_MS`): a finished load
 * is then seen at most this late. A 409 costs the server about a millisecond. */
export const MAX_RETRY_DELAY_MS = 500;

/** How long every ask lets the server wait for a run it reads that is still
 * loading (the routes' `wait_ms`, docs/http_api.md): the answer comes the
 * moment the load finishes, not at the next poll, with one ask per 2 s. The
 * first ask waits too: a load that ends within it (a run's pipeline
 * statistics or diagnostic results, read on first use) answers 200, where a
 * 409 would be a failed request in the browser's console for a page that
 * works; the view says "Loading…" meanwhile. */
export const LOADING_WAIT_MS = 2000;

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
    baseline_samples: sel.bSamples,
    experimental_samples: sel.eSamples,
    baseline_tokens: sel.bTokens,
    experimental_tokens: sel.eTokens,
  };
}

export interface DiffTableQuery {
  sort?: string;
  order?: "asc" | "desc";
  filter?: string;
  offset?: number;
  limit?: number;
  /** Operators only: the kernels route rejects it. */
  groupBy?: DiffTableGroupBy;
  path?: string;
}

export interface TimelineQuery {
  path: string;
  fromUs?: number;
  toUs?: number;
  widthPx?: number;
  maxEvents?: number;
  /** An event name whose first occurrence is drawn however short. */
  find?: string;
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
   * GET a route and decode its JSON, letting the server wait for a run still
   * loading (`LOADING_WAIT_MS`). A 409 means it is loading still: ask again,
   * with a growing pause when it answered without waiting, until it is ready
   * (or the timeout passes, then throw the 409 so the UI says "still loading"
   * instead of spinning forever). Any other non-2xx throws an ApiError
   * carrying the server's message.
   */
  async get<T>(route: string, params: Params = {}, opts: RequestOpts = {}, firstWaitMs = LOADING_WAIT_MS): Promise<T> {
    const { signal, onWait } = opts;
    const deadline = Date.now() + this.loadingTimeoutMs;
    let delay = this.retryDelayMs;
    let waitMs = firstWaitMs;
    for (;;) {
      const url = buildUrl(route, waitMs ? { ...params, wait_ms: waitMs } : params);
      const asked = Date.now();
      let res: Response;
      try {
        res = await this.fetchFn(url, signal ? { signal } : undefined);
      } catch (e) {
        // An abort is the caller's own; anything else is a server that stopped, restarted or is out of reach,
        // which the browser only calls "Failed to fetch".
        if (signal?.aborted || (e instanceof DOMException && e.name === "AbortError")) throw e;
        throw new ApiError(0, `no answer from TensorBoard (${e instanceof Error ? e.message : String(e)})`);
      }
      if (res.ok) return (await res.json()) as T;
      const err = await toApiError(res);
      // Answered before the server could have waited (nothing it knew to wait on): pause, as a poll.
      const unwaited = waitMs > 0 && Date.now() - asked < waitMs / 2;
      if (!err.isLoading || Date.now() + (unwaited ? delay : 0) > deadline) throw err;
      onWait?.(err.message);
      if (unwaited) {
        await sleep(delay, signal);
        delay = Math.min(delay * 2, MAX_RETRY_DELAY_MS);
      }
      waitMs = LOADING_WAIT_MS;
    }
  }

  runs(opts?: RequestOpts): Promise<RunsResponse> {
    // The listing answers at once while runs load (each with its status): nothing to wait for.
    return this.get<RunsResponse>("runs", {}, opts, 0);
  }

  overview(ref: { run: string; worker?: string; span?: string }, opts?: RequestOpts): Promise<OverviewResponse> {
    return this.get<OverviewResponse>("overview", { run: ref.run, worker: ref.worker, span: ref.span }, opts);
  }

  diffOverview(sel: DiffSelection, opts?: RequestOpts): Promise<DiffOverviewResponse> {
    return this.get<DiffOverviewResponse>("diff/overview", diffParams(sel), opts);
  }

  /** Both runs' memory peaks and what was alive at each, by module and operator (`diff/memory`). */
  diffMemory(sel: DiffSelection, opts?: RequestOpts): Promise<Schemas["DiffMemoryResponse"]> {
    return this.get<Schemas["DiffMemoryResponse"]>("diff/memory", diffParams(sel), opts);
  }

  /** The step-time delta split into ranked contributors, with the sentence (`diff/explain`). */
  diffExplain(sel: DiffSelection, opts?: RequestOpts): Promise<DiffExplainResponse> {
    return this.get<DiffExplainResponse>("diff/explain", diffParams(sel), opts);
  }

  diffModules(sel: DiffSelection, path: string, opts?: RequestOpts): Promise<DiffModulesResponse> {
    return this.get<DiffModulesResponse>("diff/modules", { ...diffParams(sel), path }, opts);
  }

  /**
   * Both runs' events of the aligned piece at `path` (`diff/timeline`):
   * `window` (µs after each side's piece start) narrows it; `widthPx` is
   * what it is drawn on (shorter events come merged; 0: every event).
   */
  diffTimeline(sel: DiffSelection, q: TimelineQuery, opts?: RequestOpts): Promise<DiffTimelineResponse> {
    return this.get<DiffTimelineResponse>(
      "diff/timeline",
      { ...diffParams(sel), path: q.path, from_us: q.fromUs, to_us: q.toUs, width_px: q.widthPx, max_events: q.maxEvents, find: q.find },
      opts,
    );
  }

  /** Diagnostic-mode results of one run (`diagnostic`). */
  diagnostic(run: string, opts?: RequestOpts): Promise<DiagnosticResponse> {
    return this.get<DiagnosticResponse>("diagnostic", { run }, opts);
  }

  /** Diagnostic-mode results of two runs, stages matched by name (`diff/diagnostic`). */
  diffDiagnostic(baseline: string, experimental: string, opts?: RequestOpts): Promise<DiffDiagnosticResponse> {
    return this.get<DiffDiagnosticResponse>("diff/diagnostic", { baseline, experimental }, opts);
  }

  /** One run's pipeline statistics (a trace-only run: the split from its DataLoader annotations). */
  pipeline(run: string, opts?: RequestOpts): Promise<PipelineResponse> {
    return this.get<PipelineResponse>("pipeline", { run }, opts);
  }

  diffPipeline(baseline: string, experimental: string, opts?: RequestOpts): Promise<DiffPipelineResponse> {
    return this.get<DiffPipelineResponse>("diff/pipeline", { baseline, experimental }, opts);
  }

  /** Every rank of a run (`distributed`); with `experimental`, the two runs rank by rank. */
  distributed(baseline: string, experimental: string | null, opts?: RequestOpts): Promise<DistributedResponse> {
    return this.get<DistributedResponse>("distributed", { baseline, experimental }, opts);
  }

  /** `diff/<table>`; the answer names its table again in `table` (views key on that). */
  diffTable(table: DiffTableKind, sel: DiffSelection, q: DiffTableQuery = {}, opts?: RequestOpts): Promise<DiffTableResponse> {
    return this.get<DiffTableResponse>(
      `diff/${table}`,
      { ...diffParams(sel), ...tableParams(q), group_by: q.groupBy, path: q.path },
      opts,
    );
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

/** Upper bound the server accepts for `limit` (generated from diff/tables.py:MAX_LIMIT). */
export { MAX_TABLE_ROWS } from "./generated/tableRules";
