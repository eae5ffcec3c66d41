/**
 * Pipeline: is each run input-bound, and what to do next (in words); the
 * step split of both runs as bars; summary deltas; throughput and host
 * metrics over time, where the user may overlay more runs than the pair;
 * SPDL stage and callback delta tables, largest |delta| first.
 * Numbers come from `diff/pipeline` (the pair) and `pipeline` (extra runs),
 * shaped in model/pipeline.ts.
 */
import { ComparisonHead } from "../components/ComparisonHead";
import { useMemo, useState } from "preact/hooks";
import type uPlot from "uplot";
import type { ApiClient, DiffPipelineResponse, DiffSelection, PipelineReport, PipelineSummaryRow } from "../api";
import { DeltaText } from "../components/Delta";
import { SignificanceMark } from "../components/Explanation";
import { Loading } from "../components/Loading";
import { NoteText } from "../components/NoteText";
import { ErrorMessage, Message } from "../components/Message";
import { Legend, UPlotChart } from "../components/UPlotChart";
import { SortedTable } from "../components/SortedTable";
import { byteTickLabels, formatPct, formatTicks } from "../model/format";
import {
  callbackColumns,
  CALLBACK_PRIMARY,
  addedRuns,
  extraRunChoices,
  extraRunColor,
  HOST_METRICS,
  hostTrend,
  hostValueText,
  namedStageRows,
  presentHostMetrics,
  recordingText,
  segmentText,
  SOURCE_TEXT,
  splitSegments,
  stageColumns,
  STAGE_PRIMARY,
  summaryDeltaText,
  summaryPolarity,
  summaryValueText,
  throughputMetric,
  throughputTrend,
  unmeasuredStageNote,
  VERDICT_TITLES,
  type HostMetric,
  type Trend,
  type TrendRun,
} from "../model/pipeline";
import { defaultSort } from "../model/tableModel";
import { useRequest } from "../useRequest";
import { BASELINE_COLOR, EXPERIMENTAL_COLOR, bytesAxis, msAxis } from "../components/chartKit";

interface Props {
  client: ApiClient;
  sel: DiffSelection;
  reloadToken: number;
  /** Runs added to the trend plots (URL state) and how to change them. */
  added: readonly string[];
  onAdded: (names: string[]) => void;
}

export function PipelineView({ client, sel, reloadToken, added, onAdded }: Props) {
  const req = useRequest<DiffPipelineResponse>((opts) => client.diffPipeline(sel.baseline, sel.experimental, opts), [client, sel.baseline, sel.experimental, reloadToken]);
  if (req.state === "loading" || req.state === "idle") return <Loading what="the pipeline statistics" waitingFor={req.state === "loading" ? req.waitingFor : null} />;
  if (req.state === "error") return <ErrorMessage error={req.error} what="the pipeline statistics" />;
  const d = req.data;
  const stageRows = namedStageRows(d.stages);
  const sides = [
    { side: "Baseline", name: d.baseline.run, report: d.baseline_report, color: BASELINE_COLOR },
    { side: "Experimental", name: d.experimental.run, report: d.experimental_report, color: EXPERIMENTAL_COLOR },
  ];
  return (
    <div data-view="pipeline">
      {sides.map((s) =>
        s.report.warnings.length > 0 ? (
          <Message key={`w-${s.side}`} kind="warn" title={`${s.side} “${s.name}”: parts of the statistics could not be read`}>
            <ul>
              {s.report.warnings.map((w, i) => (
                <li key={i}>{w}</li>
              ))}
            </ul>
          </Message>
        ) : null,
      )}
      <div class="grid2">
        {sides.map((s) => (
          <Verdict key={s.side} side={s.side} name={s.name} report={s.report} />
        ))}
      </div>
      <section class="card" aria-labelledby="pl-split">
        <h2 id="pl-split">Where a step goes (mean per step)</h2>
        <Legend items={splitSegments(d.baseline_report).map((seg) => ({ label: seg.label, color: seg.color, kind: "bar" as const }))} />
        {sides.map((s) => (
          <SplitBar key={s.side} side={s.side} name={s.name} report={s.report} />
        ))}
      </section>
      <section class="card" aria-labelledby="pl-summary">
        <h2 id="pl-summary">Comparison</h2>
        <SummaryTable rows={d.summary} />
        <p class="note" data-testid="pipeline-noise" data-noise={d.noise.source}>
          Significance marks: the step time and each part of it per step{d.noise.source === "measured" ? ", and a stage's mean task time where both sides are groups" : ""}. <NoteText text={d.noise.note} />.
        </p>
      </section>
      <Trends client={client} pair={sides} reloadToken={reloadToken} added={added} onAdded={onAdded} />
      <SortedTable
        title="Data-loading stages"
        label="Data-loading stages (SPDL stages, DataLoader parts), baseline versus experimental, largest change in mean task time first"
        testId="pipeline-stages"
        rows={stageRows}
        columns={stageColumns()}
        initialSort={defaultSort(STAGE_PRIMARY)}
        markKey={`delta_${STAGE_PRIMARY}`}
        note={unmeasuredStageNote(stageRows)}
        empty="Neither run has stage statistics (tb-pipeline record writes them for SPDL pipelines and DataLoaders)."
      />
      <SortedTable
        title="Callbacks"
        label="Callbacks, baseline versus experimental, largest change in time per step first"
        testId="pipeline-callbacks"
        rows={d.callbacks}
        columns={callbackColumns()}
        initialSort={defaultSort(CALLBACK_PRIMARY)}
        empty="Neither run recorded callbacks (Recorder.callback, or Composer's callback events)."
      />
    </div>
  );
}

function Verdict({ side, name, report }: { side: string; name: string; report: PipelineReport }) {
  const v = report.input_bound;
  return (
    <section class="card" aria-label={`${side} verdict: ${VERDICT_TITLES[v.verdict]}`} data-testid="pipeline-verdict" data-side={side.toLowerCase()} data-verdict={v.verdict}>
      <h2>
        {side}: {name}
      </h2>
      <p>
        <strong data-testid="verdict-summary">{v.summary}</strong>
      </p>
      <p data-testid="next-step">
        <strong>Next step:</strong> <NoteText text={v.next_step} />
      </p>
      {report.bottleneck.slowest_stage !== null && <p data-testid="bottleneck">{report.bottleneck.summary}</p>}
      {report.split.notes.map((n, i) => (
        <p key={i} class="muted">
          {n}
        </p>
      ))}
      {report.epilogue && (
        <p data-testid="epilogue" data-epilogue-s={report.epilogue.epilogue_s}>
          <strong>After the loop:</strong> {report.epilogue.note}
        </p>
      )}
      <p class="muted">Statistics {SOURCE_TEXT[report.source]}.</p>
      {report.group && <Recordings group={report.group} />}
    </section>
  );
}

/** A pooled group: what was pooled, and each recording's own figures (the spread the pooled ones hide). */
function Recordings({ group }: { group: NonNullable<PipelineReport["group"]> }) {
  return (
    <div data-testid="pipeline-group">
      <p class="note">{group.note}</p>
      <ul class="muted">
        {group.recordings.map((r) => (
          <li key={r.name} data-recording={r.name}>
            {recordingText(r)}
            {r.name === group.representative ? " (host samples)" : ""}
          </li>
        ))}
      </ul>
    </div>
  );
}

function SplitBar({ side, name, report }: { side: string; name: string; report: PipelineReport }) {
  const segs = splitSegments(report);
  if (report.split.steps === 0) return <p class="muted">{side} “{name}”: no steps recorded.</p>;
  return (
    <div class="split-row" data-testid="split-bar" data-side={side.toLowerCase()}>
      <div class="split-label">
        {side} <span class="muted">{name}</span>
      </div>
      <div class="split-bar" role="img" aria-label={`${side}: ${segs.map(segmentText).join(", ")}`}>
        {segs.map((seg) =>
          seg.pct !== null && seg.pct > 0 ? (
            <div key={seg.part} class="split-seg" data-part={seg.part} data-pct={seg.pct} title={segmentText(seg)} style={{ width: `${seg.pct}%`, background: seg.color }}>
              {seg.pct >= 8 ? formatPct(seg.pct, false) : ""}
            </div>
          ) : null,
        )}
      </div>
    </div>
  );
}

function SummaryTable({ rows }: { rows: PipelineSummaryRow[] }) {
  return (
    <table class="kv" aria-label="Pipeline figures of baseline and experimental with their difference">
      <ComparisonHead />
      <tbody>
        {rows.map((r) => {
          const polarity = summaryPolarity(r);
          return (
            <tr key={r.metric} data-metric={r.metric}>
              <th scope="row" style={{ fontWeight: 400 }}>
                {r.label}
              </th>
              <td data-raw={r.baseline ?? ""}>{summaryValueText(r, r.baseline)}</td>
              <td data-raw={r.experimental ?? ""}>{summaryValueText(r, r.experimental)}</td>
              <td data-raw={r.delta ?? ""}>
                <DeltaText value={r.delta} text={summaryDeltaText(r)} polarity={polarity} /> <SignificanceMark sig={r.significance} />
              </td>
              <td data-raw={r.delta_pct ?? ""}>
                <DeltaText value={r.delta_pct} text={formatPct(r.delta_pct)} polarity={polarity} />
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

interface PlottedRun extends TrendRun {
  color: string;
  side: string;
}

/** Throughput and host lines of the pair plus any runs the user adds. */
function Trends(props: {
  client: ApiClient;
  pair: { side: string; name: string; report: PipelineReport; color: string }[];
  reloadToken: number;
  added: readonly string[];
  onAdded: (names: string[]) => void;
}) {
  const { client, pair, reloadToken, onAdded } = props;
  const [choice, setChoice] = useState("");
  const [hostMetric, setHostMetric] = useState<HostMetric>("cpu_pct");
  const runs = useRequest((opts) => client.runs(opts), [client, reloadToken]);
  // Until the runs are known, the URL's names stand as they are.
  const extra = runs.state === "ok" ? addedRuns(props.added, runs.data.runs, pair.map((p) => p.name)) : [...props.added];
  const extraKey = extra.join("\u0000");
  const extras = useRequest(
    extra.length ? (opts) => Promise.all(extra.map((name) => client.pipeline(name, opts))) : null,
    [client, extraKey, reloadToken],
  );
  const plotted: PlottedRun[] = [
    ...pair.map((p) => ({ name: p.name, report: p.report, color: p.color, side: p.side })),
    ...(extras.state === "ok" ? extras.data.map((r, i) => ({ name: r.run, report: r, color: extraRunColor(i), side: "Added" })) : []),
  ];
  const choices = runs.state === "ok" ? extraRunChoices(runs.data.runs, [...pair.map((p) => p.name), ...extra]) : [];
  const metric = throughputMetric(plotted);
  const hostMetrics = presentHostMetrics(plotted);
  const shownHost = hostMetrics.includes(hostMetric) ? hostMetric : hostMetrics[0];
  const add = () => {
    const name = choice || choices[0];
    if (name) onAdded([...extra, name]);
    setChoice("");
  };
  return (
    <section class="card" aria-labelledby="pl-trends">
      <h2 id="pl-trends">Over time</h2>
      <div class="trend-runs" role="group" aria-label="Runs on the trend plots">
        {extra.map((name, i) => (
          <span key={name} class="chip" style={{ borderColor: extraRunColor(i) }}>
            {name}
            <button type="button" aria-label={`Remove ${name} from the plots`} onClick={() => onAdded(extra.filter((n) => n !== name))}>
              ×
            </button>
          </span>
        ))}
        {choices.length > 0 && (
          <>
            <label>
              Add a run to the plots{" "}
              <select value={choice || choices[0]} onChange={(e) => setChoice((e.currentTarget as HTMLSelectElement).value)} data-testid="extra-run-select">
                {choices.map((c) => (
                  <option key={c} value={c}>
                    {c}
                  </option>
                ))}
              </select>
            </label>{" "}
            <button type="button" onClick={add} data-testid="extra-run-add">
              Add
            </button>
          </>
        )}
        {extras.state === "loading" && <span class="muted"> Loading the added runs…</span>}
      </div>
      {extras.state === "error" && <ErrorMessage error={extras.error} what="an added run" />}
      <Legend items={plotted.map((r) => ({ label: `${r.side === "Added" ? "" : `${r.side}: `}${r.name}`, color: r.color, kind: "line" as const }))} />
      <div class="grid2">
        <div>
          <h3>{metric === "samples_per_s" ? "Samples per second" : "Steps per second"}</h3>
          <TrendChart runs={plotted} trend={throughputTrend(plotted, metric)} yLabel={metric === "samples_per_s" ? "Samples/s" : "Steps/s"} text={(v) => (v === null ? "—" : v.toFixed(1))} label={`Throughput over time of ${plotted.length} runs`} />
        </div>
        <div>
          <h3>
            Host:{" "}
            {shownHost ? (
              <select value={shownHost} onChange={(e) => setHostMetric((e.currentTarget as HTMLSelectElement).value as HostMetric)} aria-label="Host metric">
                {HOST_METRICS.filter((m) => hostMetrics.includes(m.key)).map((m) => (
                  <option key={m.key} value={m.key}>
                    {m.label}
                  </option>
                ))}
              </select>
            ) : (
              "no samples"
            )}
          </h3>
          {shownHost ? (
            <TrendChart runs={plotted} trend={hostTrend(plotted, shownHost)} yLabel={HOST_METRICS.find((m) => m.key === shownHost)?.label ?? ""} unit={HOST_METRICS.find((m) => m.key === shownHost)?.unit} text={(v) => hostValueText(shownHost, v)} label={`${HOST_METRICS.find((m) => m.key === shownHost)?.label ?? "Host metric"} over time of ${plotted.length} runs`} />
          ) : (
            <p class="muted">No host samples in these runs (the recorder samples CPU, memory, disk and network; trace-only runs have none).</p>
          )}
        </div>
      </div>
    </section>
  );
}

function TrendChart(props: { runs: PlottedRun[]; trend: Trend; yLabel: string; unit?: "pct" | "bytes" | "bytes_per_s"; text: (v: number | null) => string; label: string }) {
  const { runs, trend, yLabel, unit, text, label } = props;
  const { data, options } = useMemo(() => {
    const bytes = bytesAxis(yLabel);
    // Bytes get round ticks in one IEC unit; the rest uPlot's decimal ones.
    const axis = unit === "bytes" ? bytes : unit === "bytes_per_s" ? { ...bytes, values: (_u: uPlot, splits: number[]) => byteTickLabels(splits).map((t) => `${t}/s`) } : msAxis(yLabel);
    const options: Omit<uPlot.Options, "width" | "height"> = {
      scales: { x: { time: false }, y: { range: (_u, _min, max) => [0, max * 1.1 || 1] } },
      axes: [{ label: "Seconds since the run's first record", values: (_u, splits, _i, _s, incr) => formatTicks(splits, incr) }, axis],
      series: [{}, ...runs.map((r) => ({ label: r.name, stroke: r.color, width: 2, spanGaps: true, points: { show: false } }))],
      cursor: { drag: { x: true, y: false } },
    };
    return { data: [trend.xs, ...trend.ys] as uPlot.AlignedData, options };
  }, [runs, trend, yLabel, unit]);
  if (trend.xs.length === 0) return <p class="muted">No samples over time in these runs.</p>;
  return (
    <UPlotChart
      options={options}
      data={data}
      height={220}
      label={label}
      tooltip={(i) => (
        <div>
          <div class="name">t = {trend.xs[i]?.toFixed(2)} s</div>
          {runs.map((r, k) => (
            <div key={r.name}>
              <span class="k" style={{ background: r.color }} />
              {r.name}: {text(trend.ys[k]?.[i] ?? null)}
            </div>
          ))}
        </div>
      )}
    />
  );
}
