/**
 * The view's state as URL parameters, so a comparison can be shared and
 * survives a reload. Pure: parse/serialize only; where the string lives
 * (our iframe's hash, TensorBoard's `p.tb_pipeline.*` hash keys) is
 * src/hostState.ts's business.
 */
import type { RunInfo } from "../api";
import { DIFF_TABLE_KINDS } from "./diffTables";
import { isGroup } from "./runPicker";

/** Tabs in order: the two fixed views, one per diff table of the registry, the timeline, memory, then the pipeline, diagnostic and distributed views. */
export const VIEWS = ["overview", "modules", ...DIFF_TABLE_KINDS, "timeline", "memory", "pipeline", "diagnostic", "distributed"] as const;
export type View = (typeof VIEWS)[number];

export interface TraceChoice {
  run: string;
  worker: string;
  span: string;
}

export interface UrlState {
  baseline: TraceChoice;
  experimental: TraceChoice;
  view: View;
  /** Zoom level in the module diff (a `diff/modules` path; "" = all steps). */
  path: string;
  /** Module piece the operator table is restricted to ("" = none). */
  piece: string;
  /** Host or device time in the module diff; "" = the server's choice (device time for device-bound runs). */
  time: "" | "host" | "device";
  /** Module diff on host time: each module's forward plus its backward, or forward only. */
  pass: "both" | "forward";
  /** Operators grouped by name and input shape. */
  byShape: boolean;
  /** Kernels grouped by what launched them ("" = by kernel name). */
  launch: "" | "operator" | "module";
  /** Table sort column ("" = the default, largest absolute delta). */
  sort: string;
  dir: "asc" | "desc";
  filter: string;
  /** Timeline: an event name to select (its first occurrence in the piece at `path`). */
  find: string;
  /** Runs the user added to the Pipeline tab's trend plots, in the order added. */
  plotted: string[];
}

export const EMPTY_CHOICE: TraceChoice = { run: "", worker: "", span: "" };

export const DEFAULT_STATE: UrlState = {
  baseline: EMPTY_CHOICE,
  experimental: EMPTY_CHOICE,
  view: "overview",
  path: "",
  piece: "",
  time: "",
  pass: "both",
  byShape: false,
  launch: "",
  sort: "",
  dir: "desc",
  filter: "",
  find: "",
  plotted: [],
};

/** Short keys keep shared URLs readable. */
const KEYS = {
  b: "b", bw: "bw", bs: "bs", e: "e", ew: "ew", es: "es",
  view: "view", path: "path", piece: "piece", time: "time", pass: "pass", shape: "shape", launch: "kgroup",
  sort: "sort", dir: "dir", q: "q", find: "find", plotted: "pl",
} as const;

/** Run names joined by "," each escaped first, so a name holding a comma survives. */
function joinNames(names: readonly string[]): string {
  return names.map((n) => encodeURIComponent(n)).join(",");
}

function splitNames(value: string | null): string[] {
  if (!value) return [];
  const names = value.split(",").map((part) => {
    try {
      return decodeURIComponent(part);
    } catch {
      return part;
    }
  });
  return [...new Set(names.filter((n) => n !== ""))];
}

function isView(v: string | null): v is View {
  return v !== null && (VIEWS as readonly string[]).includes(v);
}

/** Reads a state from `k=v&...` pairs (a hash without '#' or a query). Unknown or bad values fall back to defaults. */
export function parseState(params: URLSearchParams | Record<string, string>): UrlState {
  const get = (k: string): string | null =>
    params instanceof URLSearchParams ? params.get(k) : Object.prototype.hasOwnProperty.call(params, k) ? (params[k] ?? null) : null;
  const view = get(KEYS.view);
  const time = get(KEYS.time);
  const dir = get(KEYS.dir);
  return {
    baseline: { run: get(KEYS.b) ?? "", worker: get(KEYS.bw) ?? "", span: get(KEYS.bs) ?? "" },
    experimental: { run: get(KEYS.e) ?? "", worker: get(KEYS.ew) ?? "", span: get(KEYS.es) ?? "" },
    view: isView(view) ? view : DEFAULT_STATE.view,
    path: get(KEYS.path) ?? "",
    piece: get(KEYS.piece) ?? "",
    time: time === "device" || time === "host" ? time : "",
    pass: get(KEYS.pass) === "forward" ? "forward" : "both",
    byShape: get(KEYS.shape) === "1",
    launch: ((v) => (v === "operator" || v === "module" ? v : ""))(get(KEYS.launch)),
    sort: get(KEYS.sort) ?? "",
    dir: dir === "asc" ? "asc" : "desc",
    filter: get(KEYS.q) ?? "",
    find: get(KEYS.find) ?? "",
    plotted: splitNames(get(KEYS.plotted)),
  };
}

/** The state as ordered key/value pairs; defaults are left out to keep URLs short. */
export function stateEntries(s: UrlState): [string, string][] {
  const out: [string, string][] = [];
  const put = (k: string, v: string, dflt: string) => {
    if (v !== dflt) out.push([k, v]);
  };
  put(KEYS.b, s.baseline.run, "");
  put(KEYS.bw, s.baseline.worker, "");
  put(KEYS.bs, s.baseline.span, "");
  put(KEYS.e, s.experimental.run, "");
  put(KEYS.ew, s.experimental.worker, "");
  put(KEYS.es, s.experimental.span, "");
  put(KEYS.view, s.view, DEFAULT_STATE.view);
  put(KEYS.path, s.path, "");
  put(KEYS.piece, s.piece, "");
  put(KEYS.time, s.time, "");
  put(KEYS.pass, s.pass, "both");
  put(KEYS.shape, s.byShape ? "1" : "0", "0");
  put(KEYS.launch, s.launch, "");
  put(KEYS.sort, s.sort, "");
  if (s.sort) put(KEYS.dir, s.dir, "");
  put(KEYS.q, s.filter, "");
  put(KEYS.find, s.find, "");
  put(KEYS.plotted, joinNames(s.plotted), "");
  return out;
}

export function serializeState(s: UrlState): string {
  return new URLSearchParams(stateEntries(s)).toString();
}

/** `#a=1&b=2` or `a=1&b=2` -> state. */
export function parseHash(hash: string): UrlState {
  return parseState(new URLSearchParams(hash.replace(/^#/, "")));
}

/**
 * Makes a choice valid against the runs the server has: an unknown run is
 * dropped, an unknown or empty worker becomes the first one and an unknown
 * or empty span the last (the server's defaults, so URLs without them name
 * the same trace).
 */
export function resolveChoice(choice: TraceChoice, runs: readonly RunInfo[]): TraceChoice {
  const run = runs.find((r) => r.name === choice.run);
  if (!run) return EMPTY_CHOICE;
  // A group is picked whole: worker and span belong to its recordings.
  if (isGroup(run)) return { run: run.name, worker: "", span: "" };
  const worker = run.workers.find((w) => w.name === choice.worker) ?? run.workers[0];
  if (!worker) return { run: run.name, worker: "", span: "" };
  const span = worker.spans.includes(choice.span) ? choice.span : (worker.spans[worker.spans.length - 1] ?? "");
  return { run: run.name, worker: worker.name, span };
}

/**
 * Fills an incomplete selection: with no choice yet, the first run is the
 * baseline and the next one the experimental (a sensible first view of a
 * logdir with two runs); otherwise keeps what the URL says.
 */
export function resolveSelection(s: UrlState, runs: readonly RunInfo[]): UrlState {
  let baseline = resolveChoice(s.baseline, runs);
  let experimental = resolveChoice(s.experimental, runs);
  if (!baseline.run && runs[0]) baseline = resolveChoice({ ...EMPTY_CHOICE, run: runs[0].name }, runs);
  if (!experimental.run) {
    const other = runs.find((r) => r.name !== baseline.run) ?? runs[0];
    if (other) experimental = resolveChoice({ ...EMPTY_CHOICE, run: other.name }, runs);
  }
  return { ...s, baseline, experimental };
}

/** When the compared traces change, module zoom/piece selections refer to another tree: reset them. */
export function withSelection(s: UrlState, side: "baseline" | "experimental", choice: TraceChoice, runs: readonly RunInfo[]): UrlState {
  const resolved = resolveChoice(choice, runs);
  return { ...s, [side]: resolved, path: "", piece: "", find: "" };
}

// ------------------------------------------------- TensorBoard hash mirror

export const HOST_PREFIX = "p.tb_pipeline.";

/**
 * TensorBoard's own hash is `#<tab>&k=v&...` (tf_storage), and its plugin
 * API hands a plugin the `p.<plugin>.*` keys. Returns the parent hash with
 * our keys replaced by `state`'s, leaving TensorBoard's keys alone.
 */
export function mergeHostHash(parentHash: string, s: UrlState): string {
  const parts = parentHash.replace(/^#/, "").split("&").filter((p) => p !== "");
  const kept = parts.filter((p) => {
    const eq = p.indexOf("=");
    if (eq < 0) return true;
    return !safeDecode(p.slice(0, eq)).startsWith(HOST_PREFIX);
  });
  const ours = stateEntries(s).map(([k, v]) => `${encodeURIComponent(HOST_PREFIX + k)}=${encodeURIComponent(v)}`);
  return "#" + [...kept, ...ours].join("&");
}

/** Our keys from a TensorBoard hash, prefix stripped (like its GetURLPluginData). */
export function readHostHash(parentHash: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of parentHash.replace(/^#/, "").split("&")) {
    const eq = p.indexOf("=");
    if (eq < 0) continue;
    const k = safeDecode(p.slice(0, eq));
    if (k.startsWith(HOST_PREFIX)) out[k.slice(HOST_PREFIX.length)] = safeDecode(p.slice(eq + 1));
  }
  return out;
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** The Timeline view of the piece at `path`, selecting `find`'s first event there when given. */
export function timelineOf(path: string, find = ""): Partial<UrlState> {
  return { view: "timeline", path, find, sort: "", dir: "desc", filter: "" };
}
