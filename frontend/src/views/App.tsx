/**
 * The plugin page: run picker, tabs, and the status of the runs in words.
 * Owns the URL state and the runs list; views fetch their own data.
 */
import type { ComponentChildren, TargetedKeyboardEvent } from "preact";
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import type { ApiClient, DiffSelection, RunInfo, RunsResponse } from "../api";
import { ErrorMessage, Message } from "../components/Message";
import { NoteText } from "../components/NoteText";
import { MSG_DATA_RELOADED, type HostIpc } from "../hostIpc";
import { DIFF_TABLES } from "../model/diffTables";
import { distributedTabShown } from "../model/distributed";
import { writeState } from "../hostState";
import { resolveSelection, VIEWS, withSelection, type TraceChoice, type UrlState, type View } from "../model/urlState";
import { DiagnosticView } from "./DiagnosticView";
import { DistributedView } from "./DistributedView";
import { DiffTableView } from "./DiffTableView";
import { MemoryView } from "./MemoryView";
import { ModuleDiffView } from "./ModuleDiffView";
import { OverviewView } from "./OverviewView";
import { PipelineView } from "./PipelineView";
import { RunPicker } from "./RunPicker";
import { TimelineView } from "./TimelineView";

function viewLabel(view: View): string {
  if (view === "overview") return "Overview";
  if (view === "modules") return "Module diff";
  if (view === "memory") return "Memory";
  if (view === "pipeline") return "Pipeline";
  if (view === "diagnostic") return "Diagnostic";
  if (view === "distributed") return "Distributed";
  if (view === "timeline") return "Timeline";
  return DIFF_TABLES[view].tab;
}

/** While the server parses runs, ask again this often. */
const RUNS_POLL_MS = 1000;

type RunsState = { state: "loading" } | { state: "ok"; data: RunsResponse } | { state: "error"; error: unknown };

export function App({ client, ipc, initial }: { client: ApiClient; ipc: HostIpc; initial: UrlState }) {
  const [state, setState] = useState<UrlState>(initial);
  const [runs, setRuns] = useState<RunsState>({ state: "loading" });
  // Bumped by TensorBoard's reload button so every view refetches.
  const [reloadToken, setReloadToken] = useState(0);
  const pollTimer = useRef<ReturnType<typeof setTimeout> | null>(null);

  const loadRuns = useCallback(async () => {
    if (pollTimer.current) clearTimeout(pollTimer.current);
    pollTimer.current = null;
    try {
      const data = await client.runs();
      setRuns({ state: "ok", data });
      if (data.loading) pollTimer.current = setTimeout(() => void loadRuns(), RUNS_POLL_MS);
    } catch (error) {
      setRuns({ state: "error", error });
    }
  }, [client]);

  useEffect(() => {
    void loadRuns();
    ipc.listen(MSG_DATA_RELOADED, () => {
      void loadRuns();
      setReloadToken((t) => t + 1);
    });
    return () => {
      if (pollTimer.current) clearTimeout(pollTimer.current);
    };
  }, [loadRuns, ipc]);

  const runList: RunInfo[] = runs.state === "ok" ? runs.data.runs : [];

  // A picked run the server has not parsed (`unloaded`, or `loading` but
  // maybe queued behind the prefetches `runs` started): ask for its data,
  // which the server loads before any prefetch, and reread the runs list when
  // that answers so the status and warnings shown are the server's. Asked
  // again if the run is still not ready then (its file changed meanwhile,
  // say), so the page never waits for a load nobody started.
  const [askedGen, setAskedGen] = useState(0);
  const pendingKey = runs.state === "ok" ? JSON.stringify(pendingRuns(runList, [state.baseline.run, state.experimental.run])) : "[]";
  useEffect(() => {
    const pending = JSON.parse(pendingKey) as string[];
    if (pending.length === 0) return;
    const ctrl = new AbortController();
    let again: ReturnType<typeof setTimeout> | null = null;
    const settled = () => {
      if (ctrl.signal.aborted) return;
      void loadRuns().then(() => {
        // Still pending after the reread (or it failed): ask again, not in a tight loop.
        if (!ctrl.signal.aborted) again = setTimeout(() => setAskedGen((g) => g + 1), RUNS_POLL_MS);
      });
    };
    // The run's default trace: the one its `status` describes.
    for (const run of pending) client.overview({ run }, { signal: ctrl.signal }).then(settled, settled);
    return () => {
      ctrl.abort();
      if (again) clearTimeout(again);
    };
  }, [pendingKey, askedGen, client, loadRuns]);

  // Repair the selection against the runs the server has (first load, a run deleted, a URL from elsewhere).
  useEffect(() => {
    if (runs.state !== "ok") return;
    // Keep the same object when nothing changed: the runs list is polled
    // while any run loads, and a new selection object would refetch every view.
    setState((s) => {
      const r = resolveSelection(s, runList);
      return sameChoice(r.baseline, s.baseline) && sameChoice(r.experimental, s.experimental) ? s : r;
    });
  }, [runs]);

  // Layout effect: the URL is written in the same task as the click that
  // changed the state, so a reload right after it cannot lose the change.
  useLayoutEffect(() => writeState(state), [state]);

  const patch = useCallback((p: Partial<UrlState>) => setState((s) => ({ ...s, ...p })), []);
  const choose = useCallback(
    (side: "baseline" | "experimental", c: TraceChoice) => setState((s) => withSelection(s, side, c, runList)),
    [runList],
  );
  const swap = useCallback(() => setState((s) => ({ ...s, baseline: s.experimental, experimental: s.baseline, path: "", piece: "", find: "" })), []);
  const setView = (view: View) => setState((s) => (s.view === view ? s : { ...s, view, sort: "", dir: "desc", filter: "" }));

  const sel: DiffSelection = useMemo(
    () => ({
      baseline: state.baseline.run,
      experimental: state.experimental.run,
      bWorker: state.baseline.worker || undefined,
      bSpan: state.baseline.span || undefined,
      eWorker: state.experimental.worker || undefined,
      eSpan: state.experimental.span || undefined,
      bSamples: state.work.baselineSamples ?? undefined,
      eSamples: state.work.experimentalSamples ?? undefined,
      bTokens: state.work.baselineTokens ?? undefined,
      eTokens: state.work.experimentalTokens ?? undefined,
    }),
    [state.baseline, state.experimental, state.work],
  );

  if (runs.state === "loading") return <Shell><Message kind="info" title="Loading the list of runs…" /></Shell>;
  if (runs.state === "error") return <Shell><ErrorMessage error={runs.error} what="the list of runs" /></Shell>;
  if (runList.length === 0)
    return (
      <Shell>
        <Message kind="info" title="No runs in the logdir">
          A run is a directory under TensorBoard's --logdir holding <code>*.pt.trace.json</code> (or <code>.json.gz</code>) files, as written by{" "}
          <code>torch.profiler.tensorboard_trace_handler(dir)</code>. Record two runs, then press TensorBoard's reload button.
        </Message>
      </Shell>
    );

  const b = runList.find((r) => r.name === state.baseline.run);
  const e = runList.find((r) => r.name === state.experimental.run);
  const blocking = [b, e].filter((r): r is RunInfo => !!r && r.status !== "ready");
  // Views wait until the selection names its worker and span (the effect
  // above fills them in): otherwise the first request goes out without
  // them and is cancelled and sent again a moment later.
  const resolved = resolveSelection(state, runList);
  const settled = sameChoice(resolved.baseline, state.baseline) && sameChoice(resolved.experimental, state.experimental);
  const ready = b && e && blocking.length === 0 && settled;
  const warned = [b, e].filter((r, i, a): r is RunInfo => !!r && r.warnings.length > 0 && a.indexOf(r) === i);

  // Tabs with something to show for the picked runs; the current one always stays (a shared URL may name it).
  const tabs = VIEWS.filter((v) => v === state.view || v !== "distributed" || distributedTabShown(runList, state.baseline.run, state.experimental.run));
  const onTabKey = (ev: TargetedKeyboardEvent<HTMLDivElement>) => {
    const i = tabs.indexOf(state.view);
    const next = ev.key === "ArrowRight" ? tabs[(i + 1) % tabs.length] : ev.key === "ArrowLeft" ? tabs[(i + tabs.length - 1) % tabs.length] : null;
    if (next) {
      ev.preventDefault();
      setView(next);
      (ev.currentTarget.querySelector(`[data-tab="${next}"]`) as HTMLElement | null)?.focus();
    }
  };

  return (
    <Shell>
      <RunPicker runs={runList} baseline={state.baseline} experimental={state.experimental} onChange={choose} onSwap={swap} />
      {b && e && b.name === e.name && b === e && state.baseline.span === state.experimental.span && state.baseline.worker === state.experimental.worker && (
        <Message kind="info" title="Baseline and experimental are the same trace">
          Every delta is zero. Pick another run (or span) on one side.
        </Message>
      )}
      {blocking.map((r) =>
        r.status === "loading" || r.status === "unloaded" ? (
          <Message key={r.name} kind="info" title={`Run “${r.name}” is still loading`}>
            The server is parsing its trace files; this page checks again every second and shows the comparison once it is ready.
          </Message>
        ) : (
          <Message key={r.name} kind="error" title={`Run “${r.name}” could not be read`}>
            {r.error ? (/[.!?]$/.test(r.error.trim()) ? r.error : `${r.error}.`) : "The server gave no reason."} Pick another run.
          </Message>
        ),
      )}
      {warned.map((r) => (
        // Not only damage: a group's manifest naming a file, or what an old trace lacks, is said here too.
        <Message key={`w-${r.name}`} kind="warn" title={`Run “${r.name}”: read with warnings`}>
          <ul>
            {r.warnings.map((w, i) => (
              <li key={i}>
                <NoteText text={w} />
              </li>
            ))}
          </ul>
        </Message>
      ))}
      <div class="tabs" role="tablist" aria-label="Views" onKeyDown={onTabKey}>
        {tabs.map((v) => (
          <button
            key={v}
            type="button"
            role="tab"
            id={`tab-${v}`}
            data-tab={v}
            aria-selected={state.view === v}
            aria-controls="panel"
            tabIndex={state.view === v ? 0 : -1}
            onClick={() => setView(v)}
          >
            {viewLabel(v)}
          </button>
        ))}
      </div>
      <div class="panel" id="panel" role="tabpanel" aria-labelledby={`tab-${state.view}`}>
        {ready ? (
          <ViewFor view={state.view} client={client} sel={sel} state={state} onChange={patch} reloadToken={reloadToken} runs={runList} />
        ) : blocking.length === 0 ? (
          <Message kind="info" title="Pick a baseline and an experimental run above" />
        ) : null}
      </div>
    </Shell>
  );
}

function ViewFor(props: { view: View; client: ApiClient; sel: DiffSelection; state: UrlState; onChange: (p: Partial<UrlState>) => void; reloadToken: number; runs: RunInfo[] }) {
  const { view, client, sel, state, onChange, reloadToken } = props;
  switch (view) {
    case "overview":
      return <OverviewView client={client} sel={sel} reloadToken={reloadToken} />;
    case "memory":
      return <MemoryView client={client} sel={sel} reloadToken={reloadToken} />;
    case "modules":
      return <ModuleDiffView client={client} sel={sel} state={state} onChange={onChange} reloadToken={reloadToken} />;
    case "pipeline":
      return <PipelineView client={client} sel={sel} reloadToken={reloadToken} added={state.plotted} onAdded={(plotted) => onChange({ plotted })} />;
    case "diagnostic":
      return <DiagnosticView client={client} runs={props.runs} sel={sel} reloadToken={reloadToken} />;
    case "distributed":
      return <DistributedView client={client} runs={props.runs} sel={sel} reloadToken={reloadToken} />;
    case "timeline":
      return <TimelineView client={client} sel={sel} state={state} onChange={onChange} reloadToken={reloadToken} />;
    default:
      // Every other tab is a diff table, one per entry of model/diffTables.ts.
      return <DiffTableView client={client} sel={sel} table={view} state={state} onChange={onChange} reloadToken={reloadToken} />;
  }
}

/** The picked runs (each once) whose default trace is not parsed yet. */
function pendingRuns(runs: readonly RunInfo[], picked: readonly string[]): string[] {
  return [...new Set(picked)].filter((name) => {
    const r = runs.find((x) => x.name === name);
    return !!r && (r.status === "unloaded" || r.status === "loading");
  });
}

function sameChoice(a: TraceChoice, b: TraceChoice): boolean {
  return a.run === b.run && a.worker === b.worker && a.span === b.span;
}

function Shell({ children }: { children: ComponentChildren }) {
  return (
    <main class="app" aria-label="Run comparison">
      {children}
    </main>
  );
}
