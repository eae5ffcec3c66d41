/**
 * profiler.html's script: torch-tb-profiler's trace viewer for one of our
 * traces (see model/profilerLink.ts for why this page exists).
 *
 * 1. our `profiler_link` route: torch-tb-profiler's run/worker/span of the trace;
 * 2. its `runs` until it lists the run (it parses in the background);
 * 3. its `trace_embedding.html` in an iframe and, in parallel, its `trace`;
 *    when the viewer says `ready`, the trace text is posted to it, as its own
 *    Trace view does.
 * trace_embedding.html loads a web-components polyfill from a CDN: without
 * the network the viewer never says `ready`, and the page says so and offers
 * the trace as a file instead.
 */
import {
  EMBED_URL,
  isViewerReady,
  PROFILER_RUNS_URL,
  profilerRunState,
  profilerTraceUrl,
  readProfilerQuery,
  profilerLinkUrl,
  viewerMessage,
} from "./model/profilerLink";

const RUNS_POLL_MS = 2000;
const RUNS_WAIT_MS = 5 * 60_000;
// The longest wait for the viewer's ready message; once its page has loaded (its scripts ran, or failed to
// load, as the CDN polyfill does offline) only AFTER_LOAD_WAIT_MS more, so an offline user reads why in
// seconds. A ready message after either still shows the trace.
const VIEWER_WAIT_MS = 20_000;
const AFTER_LOAD_WAIT_MS = 5_000;

const CSS = `
html, body { margin: 0; height: 100%; font: 13px system-ui, sans-serif; color: #202124; }
body { display: flex; flex-direction: column; }
header { padding: 6px 10px; border-bottom: 1px solid #dadce0; display: flex; gap: 12px; align-items: baseline; flex-wrap: wrap; }
#profiler-title { font-weight: 600; }
#profiler-status { color: #5f6368; }
#profiler-status.error { color: #c5221f; }
main { flex: 1; display: flex; min-height: 0; }
iframe { flex: 1; border: 0; width: 100%; }
code { background: #f1f3f4; padding: 0 3px; }
`;

interface Names {
  run: string;
  worker: string;
  span: string;
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  return e;
}

function status(text: string | Node[], error = false): void {
  const s = document.getElementById("profiler-status")!;
  s.className = error ? "error" : "";
  s.replaceChildren(...(typeof text === "string" ? [document.createTextNode(text)] : text));
  s.dataset.state = error ? "error" : "info";
}

async function errorText(r: Response): Promise<string> {
  try {
    const body = (await r.json()) as { error?: string };
    return body.error ?? `HTTP ${r.status}`;
  } catch {
    return `HTTP ${r.status}`;
  }
}

const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));

async function waitForRun(run: string): Promise<boolean> {
  const deadline = Date.now() + RUNS_WAIT_MS;
  for (;;) {
    const r = await fetch(PROFILER_RUNS_URL).catch(() => null);
    if (!r || r.status === 404) {
      status('torch-tb-profiler is not loaded in this TensorBoard (pip install "tb_pipeline_plugin[profiler]", then restart TensorBoard).', true);
      return false;
    }
    const state = profilerRunState(r.ok ? await r.json() : null, run);
    if (state === "listed") return true;
    if (Date.now() > deadline) {
      status(`torch-tb-profiler has not listed run “${run}” after ${RUNS_WAIT_MS / 60_000} minutes; check TensorBoard's log.`, true);
      return false;
    }
    status(
      state === "loading"
        ? `torch-tb-profiler is still parsing the logdir (run “${run}” not ready yet)…`
        : `Waiting for torch-tb-profiler to find run “${run}” (it scans the logdir every 10 s)…`,
    );
    await sleep(RUNS_POLL_MS);
  }
}

async function main(): Promise<void> {
  const sheet = new CSSStyleSheet();
  sheet.replaceSync(CSS);
  document.adoptedStyleSheets = [sheet];
  const q = readProfilerQuery(location.search);
  if (!q) {
    status("No run given: open this page from a “trace viewer” link of the Pipeline Diff tab.", true);
    return;
  }
  const title = `${q.sel.run}${q.sel.worker ? ` · ${q.sel.worker}` : ""}${q.sel.span ? ` · ${q.sel.span}` : ""}`;
  document.getElementById("profiler-title")!.textContent = `Timeline: ${title}`;
  document.title = `Timeline · ${title}`;
  if (q.find) {
    const hint = el("span");
    hint.append("Look for ", el("code", q.find), " in the viewer's search box");
    document.querySelector("header")!.append(hint);
  }

  const r = await fetch(profilerLinkUrl(q.sel));
  if (!r.ok) {
    status(`No trace viewer for this trace: ${await errorText(r)}`, true);
    return;
  }
  const names = ((await r.json()) as { profiler: Names }).profiler;
  if (!(await waitForRun(names.run))) return;

  status("Loading the trace…");
  const traceUrl = profilerTraceUrl(names);
  const frame = el("iframe");
  frame.title = "torch-tb-profiler trace viewer";
  let ready = false;
  let trace: string | null = null;
  const post = () => {
    if (ready && trace !== null) {
      frame.contentWindow?.postMessage(viewerMessage(title, trace), location.origin);
      status(`Trace of ${names.run} · ${names.worker} (torch-tb-profiler span ${names.span}).`);
    }
  };
  window.addEventListener("message", (ev) => {
    if (ev.source === frame.contentWindow && isViewerReady(ev.data)) {
      ready = true;
      post();
    }
  });
  const loaded = new Promise<void>((res) => frame.addEventListener("load", () => res(), { once: true }));
  frame.src = EMBED_URL;
  document.getElementById("profiler-main")!.append(frame);

  // Fetched while the viewer starts, as torch-tb-profiler's Trace view does.
  const tr = await fetch(traceUrl);
  if (!tr.ok) {
    status(`torch-tb-profiler could not serve this trace: ${await errorText(tr)}`, true);
    return;
  }
  trace = await tr.text();
  post();
  await Promise.race([sleep(VIEWER_WAIT_MS), loaded.then(() => sleep(AFTER_LOAD_WAIT_MS))]);
  if (!ready) {
    const file = el("a", "the trace file");
    file.href = URL.createObjectURL(new Blob([trace], { type: "application/json" }));
    file.download = `${names.worker}.pt.trace.json`;
    status(
      [
        document.createTextNode(
          "torch-tb-profiler's trace viewer did not start: its trace_embedding.html loads a web-components polyfill from cdnjs.cloudflare.com, which this browser cannot reach. Open ",
        ),
        file,
        document.createTextNode(" in Perfetto (ui.perfetto.dev) or chrome://tracing instead."),
      ],
      true,
    );
  }
}

void main().catch((e: unknown) => status(`The profiler page failed: ${e instanceof Error ? e.message : String(e)}`, true));
