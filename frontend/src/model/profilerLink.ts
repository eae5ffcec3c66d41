/**
 * "Timeline" links: torch-tb-profiler's trace viewer for one of our traces.
 *
 * torch-tb-profiler's own page reads no run from its URL, so a link goes to
 * our `profiler.html` (served by our plugin), which asks our `profiler_link`
 * route for torch-tb-profiler's names of the trace, embeds its
 * `trace_embedding.html` and posts it its `trace` answer, as its Trace view
 * does. Pure functions only: URLs, parsing, message shapes.
 *
 * Every URL is relative to our plugin's base, `/data/plugin/tb_pipeline/`
 * (the iframe's <base href> and the profiler page's own directory).
 */

/** torch-tb-profiler's `plugin_name` in TensorBoard's plugin listing. */
export const PROFILER_PLUGIN = "pytorch_profiler";
/** TensorBoard's `/data/plugins_listing`. */
export const PLUGINS_LISTING_URL = "../../plugins_listing";
export const PROFILER_BASE = `../${PROFILER_PLUGIN}/`;
export const EMBED_URL = `${PROFILER_BASE}trace_embedding.html`;

export interface TraceSel {
  run: string;
  /** Empty: the server's default (first worker, last span), as on every route. */
  worker: string;
  span: string;
}

/**
 * Whether torch-tb-profiler is loaded in this TensorBoard. Presence in the
 * listing, not its `enabled` flag: that stays false until its background
 * scan has found a run, while its routes (and our links) already work.
 */
export function profilerListed(listing: unknown): boolean {
  return typeof listing === "object" && listing !== null && Object.prototype.hasOwnProperty.call(listing, PROFILER_PLUGIN);
}

function query(params: Record<string, string>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== "") q.set(k, v);
  return q.toString();
}

/**
 * Href of the profiler page for a trace; `find` (an operator, kernel or
 * piece name) is shown on the page as what to look for in the viewer.
 */
export function profilerHref(t: TraceSel, find = ""): string {
  return `profiler.html?${query({ run: t.run, worker: t.worker, span: t.span, find })}`;
}

/** The profiler page's own query string, back into a selection. */
export function readProfilerQuery(search: string): { sel: TraceSel; find: string } | null {
  const q = new URLSearchParams(search);
  const run = q.get("run");
  if (!run) return null;
  return { sel: { run, worker: q.get("worker") ?? "", span: q.get("span") ?? "" }, find: q.get("find") ?? "" };
}

/** Our `profiler_link` route for a selection. */
export function profilerLinkUrl(t: TraceSel): string {
  return `profiler_link?${query({ run: t.run, worker: t.worker, span: t.span })}`;
}

/** torch-tb-profiler's routes, with its names (from our `profiler_link` route). */
export function profilerTraceUrl(names: { run: string; worker: string; span: string }): string {
  return `${PROFILER_BASE}trace?${new URLSearchParams(names).toString()}`;
}

export const PROFILER_RUNS_URL = `${PROFILER_BASE}runs`;

/** trace_embedding.html posts `{msg: "ready"}` once the Catapult viewer is up. */
export function isViewerReady(data: unknown): boolean {
  return typeof data === "object" && data !== null && (data as { msg?: unknown }).msg === "ready";
}

/** What trace_embedding.html expects: its Trace view posts the trace JSON text as `data`. */
export function viewerMessage(name: string, traceText: string): { msg: "data"; name: string; data: string } {
  return { msg: "data", name, data: traceText };
}

/** torch-tb-profiler's `runs` answer: is `run` there yet, and is it still scanning? */
export function profilerRunState(body: unknown, run: string): "listed" | "loading" | "absent" {
  const b = body as { runs?: unknown; loading?: unknown } | null;
  const runs = Array.isArray(b?.runs) ? (b.runs as unknown[]) : [];
  if (runs.includes(run)) return "listed";
  return b?.loading ? "loading" : "absent";
}

/** The two traces of a diff selection (same shape as the API client's `DiffSelection`). */
export function sidesOf(sel: { baseline: string; experimental: string; bWorker?: string; bSpan?: string; eWorker?: string; eSpan?: string }): {
  baseline: TraceSel;
  experimental: TraceSel;
} {
  return {
    baseline: { run: sel.baseline, worker: sel.bWorker ?? "", span: sel.bSpan ?? "" },
    experimental: { run: sel.experimental, worker: sel.eWorker ?? "", span: sel.eSpan ?? "" },
  };
}
