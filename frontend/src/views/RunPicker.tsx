/**
 * Baseline and experimental choice: run, worker and span each as a native
 * <select> (keyboard and screen-reader friendly for free).
 */
import type { RunInfo } from "../api";
import type { TraceChoice } from "../model/urlState";
import { TimelineLink } from "../components/TimelineLink";

interface Props {
  runs: RunInfo[];
  baseline: TraceChoice;
  experimental: TraceChoice;
  onChange: (side: "baseline" | "experimental", choice: TraceChoice) => void;
  onSwap: () => void;
}

function runLabel(r: RunInfo): string {
  // An `unloaded` run loads when picked: nothing worth a label.
  if (r.status === "loading") return `${r.name} (loading…)`;
  if (r.status === "failed") return `${r.name} (failed)`;
  return r.name;
}

function Side({ side, runs, choice, onChange }: { side: "baseline" | "experimental"; runs: RunInfo[]; choice: TraceChoice; onChange: Props["onChange"] }) {
  const title = side === "baseline" ? "Baseline" : "Experimental";
  const run = runs.find((r) => r.name === choice.run);
  const worker = run?.workers.find((w) => w.name === choice.worker);
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
      <label for={`${id}-worker`}>
        Worker
        <select
          id={`${id}-worker`}
          name={`${side}-worker`}
          value={choice.worker}
          disabled={!run || run.workers.length < 2}
          onChange={(e) => onChange(side, { ...choice, worker: e.currentTarget.value, span: "" })}
        >
          {(run?.workers ?? []).map((w) => (
            <option key={w.name} value={w.name}>
              {w.name}
            </option>
          ))}
        </select>
      </label>
      <label for={`${id}-span`}>
        Span
        <select
          id={`${id}-span`}
          name={`${side}-span`}
          value={choice.span}
          disabled={!worker || worker.spans.length < 2}
          onChange={(e) => onChange(side, { ...choice, span: e.currentTarget.value })}
        >
          {(worker?.spans ?? []).map((s, i) => (
            <option key={s} value={s}>
              {worker && worker.spans.length > 1 ? `${i + 1}: ${s}` : s}
            </option>
          ))}
        </select>
      </label>
      <TimelineLink sel={choice} what={side} />
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
