/**
 * Baseline and experimental choice: run, process (a trace's worker) and span
 * each as a native <select> (keyboard and screen-reader friendly for free);
 * a span picker with one span to pick is hidden, the one trace said in words.
 * Labels and what can be chosen come from model/runPicker.ts.
 */
import type { RunInfo } from "../api";
import { canPickSpan, canPickWorker, isGroup, runLabel, spanOptions } from "../model/runPicker";
import type { TraceChoice } from "../model/urlState";
import { ProfilerLink } from "../components/ProfilerLink";

interface Props {
  runs: RunInfo[];
  baseline: TraceChoice;
  experimental: TraceChoice;
  onChange: (side: "baseline" | "experimental", choice: TraceChoice) => void;
  onSwap: () => void;
}

function Side({ side, runs, choice, onChange }: { side: "baseline" | "experimental"; runs: RunInfo[]; choice: TraceChoice; onChange: Props["onChange"] }) {
  const title = side === "baseline" ? "Baseline" : "Experimental";
  const run = runs.find((r) => r.name === choice.run);
  const worker = run?.workers.find((w) => w.name === choice.worker);
  const spans = spanOptions(worker);
  const pickSpan = canPickSpan(run, worker?.spans);
  const id = `pick-${side}`;
  return (
    <fieldset data-side={side}>
      <legend>
        <span class={`swatch ${side}`} aria-hidden="true" />
        {title}
      </legend>
      <label for={`${id}-run`}>
        Run
        <select id={`${id}-run`} name={`${side}-run`} value={choice.run} onChange={(e) => onChange(side, { run: e.currentTarget.value, worker: "", span: "" })}>
          {runs.map((r) => (
            <option key={r.name} value={r.name}>
              {runLabel(r)}
            </option>
          ))}
        </select>
      </label>
      <label for={`${id}-worker`} title="The process that wrote the trace (host_pid; torch-tb-profiler's “worker”, one per rank in a distributed job)">
        Process
        <select
          id={`${id}-worker`}
          name={`${side}-worker`}
          value={choice.worker}
          disabled={!canPickWorker(run)}
          onChange={(e) => onChange(side, { ...choice, worker: e.currentTarget.value, span: "" })}
        >
          {(run?.workers ?? []).map((w) => (
            <option key={w.name} value={w.name}>
              {w.name}
            </option>
          ))}
        </select>
      </label>
      {/* One trace of one process: nothing to choose; its steps and start say which trace it is. */}
      {!pickSpan && spans.length === 1 && (
        <span class="picker-fact" data-testid={`${id}-trace`} title={spans[0]?.title}>
          Trace
          <span>{spans[0]?.label}</span>
        </span>
      )}
      <label for={`${id}-span`} hidden={!pickSpan}>
        Span
        <select
          id={`${id}-span`}
          name={`${side}-span`}
          value={choice.span}
          title={spans.find((s) => s.span === choice.span)?.title}
          disabled={!pickSpan}
          onChange={(e) => onChange(side, { ...choice, span: e.currentTarget.value })}
        >
          {spans.map((s) => (
            <option key={s.span} value={s.span} title={s.title}>
              {s.label}
            </option>
          ))}
        </select>
      </label>
      {/* A group is several recordings: no one trace to open. */}
      {!(run && isGroup(run)) && <ProfilerLink sel={choice} what={side} />}
    </fieldset>
  );
}

export function RunPicker({ runs, baseline, experimental, onChange, onSwap }: Props) {
  return (
    <form class="picker" aria-label="Runs to compare" onSubmit={(e) => e.preventDefault()}>
      <Side side="baseline" runs={runs} choice={baseline} onChange={onChange} />
      <button class="btn" type="button" onClick={onSwap} title="Swap baseline and experimental" aria-label="Swap baseline and experimental">
        ⇄
      </button>
      <Side side="experimental" runs={runs} choice={experimental} onChange={onChange} />
    </form>
  );
}
