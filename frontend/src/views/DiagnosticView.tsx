/**
 * Diagnostic mode: per pipeline stage, QPS, CPU % and peak memory against
 * concurrency for threads and processes, the verdict in words, the best
 * concurrency and the GIL holders; two runs side by side when both have
 * results (`diff/diagnostic`), else the one that has them (`diagnostic`).
 * Rendering only: the data comes shaped from model/diagnostic.ts.
 */
import { useMemo } from "preact/hooks";
import type uPlot from "uplot";
import type { ApiClient, DiagnosticResponse, DiagnosticStage, DiffDiagnosticResponse, DiffSelection, RunInfo } from "../api";
import { Loading } from "../components/Loading";
import { ErrorMessage, Message } from "../components/Message";
import { Legend, UPlotChart } from "../components/UPlotChart";
import {
  bestLevelChangeText,
  bestText,
  CHANGE_LABELS,
  crowdedText,
  curveSeries,
  diagnosticPlan,
  environmentText,
  EXECUTOR_LABELS,
  EXECUTORS,
  formatCpu,
  formatQps,
  formatRatioInterval,
  gilRows,
  gilSummary,
  levelRange,
  levels,
  levelTick,
  metricMax,
  pairStages,
  pointRows,
  skippedLevelLines,
  statusText,
  pairReports,
  type NamedReport,
  verdictTone,
  type Metric,
} from "../model/diagnostic";
import { formatBytes, formatInt } from "../model/format";
import { confidenceText } from "../model/explain";
import { useRequest as useRequestState } from "../useRequest";
import { BASELINE_COLOR, EXPERIMENTAL_COLOR, bytesAxis, msAxis } from "../components/chartKit";

interface Props {
  client: ApiClient;
  runs: RunInfo[];
  sel: DiffSelection;
  reloadToken: number;
}

type Side = "baseline" | "experimental";
type Loaded = { kind: "pair"; diff: DiffDiagnosticResponse } | { kind: "single"; one: DiagnosticResponse };

export function DiagnosticView({ client, runs, sel, reloadToken }: Props) {
  const plan = diagnosticPlan(runs, sel.baseline, sel.experimental);
  const [first, second] = plan.kind === "pair" ? [plan.baseline, plan.experimental] : plan.kind === "single" ? [plan.run, ""] : ["", ""];
  const req = useRequest(client, plan.kind, first, second, reloadToken);
  if (plan.kind === "none")
    return (
      <Message kind="info" title={`No diagnostic results in ${plan.picked.map((r) => `“${r}”`).join(" or ")}`}>
        Diagnostic mode runs each data-loading stage of your script alone at rising concurrency, with threads and with processes, and
        says which one limits loading and why. Record it with{" "}
        <code>TB_PIPELINE_DIAGNOSTIC_MODE=1 tb-pipeline record --logdir runs --run baseline -- python train.py</code>: the script's
        data pipeline is measured instead of trained (a minute or two; it then exits with status 1), and the run gets its results. Then
        pick that run above.
      </Message>
    );
  if (req.state === "loading" || req.state === "idle") return <Loading what="the diagnostic results" waitingFor={req.state === "loading" ? req.waitingFor : null} />;
  if (req.state === "error") return <ErrorMessage error={req.error} what="the diagnostic results" />;
  const data = req.data;
  return (
    <div data-view="diagnostic">
      {plan.kind === "single" && plan.missing && (
        <Message kind="info" title={`Run “${plan.missing}” has no diagnostic results`}>
          Showing “{plan.run}” alone. Pick two runs with diagnostic results to compare them side by side.
        </Message>
      )}
      {data.kind === "pair" ? <PairView diff={data.diff} /> : <SingleView one={data.one} side={plan.kind === "single" ? plan.side : "baseline"} />}
    </div>
  );
}

function useRequest(client: ApiClient, kind: string, first: string, second: string, reloadToken: number) {
  return useRequestState<Loaded>(
    kind === "none"
      ? null
      : async (opts) =>
          kind === "pair" ? { kind: "pair", diff: await client.diffDiagnostic(first, second, opts) } : { kind: "single", one: await client.diagnostic(first, opts) },
    [client, kind, first, second, reloadToken],
  );
}

function SingleView({ one, side }: { one: DiagnosticResponse; side: Side }) {
  return (
    <div>
      <RunHeader r={one} side={side} />
      {one.stages.length === 0 && <Message kind="info" title="No stage was measured yet" />}
      {one.stages.map((s) => (
        <section key={s.stage} aria-label={`Stage ${s.stage}`}>
          <h2>Stage “{s.stage}”</h2>
          <StageCard stage={s} side={side} xs={levels([s])} confidence={one.interval_confidence} />
        </section>
      ))}
    </div>
  );
}

function PairView({ diff }: { diff: DiffDiagnosticResponse }) {
  const pairs = pairStages(diff);
  const reports = pairReports(diff);
  return (
    <div>
      <div class="grid2">
        <RunHeader r={reports.baseline} side="baseline" />
        <RunHeader r={reports.experimental} side="experimental" />
      </div>
      <section class="card" aria-labelledby="diag-summary">
        <h2 id="diag-summary">Stages</h2>
        <table class="kv" data-testid="diagnostic-summary">
          <thead>
            <tr>
              <th scope="col">Stage</th>
              <th scope="col">
                <span class="swatch baseline" /> Baseline verdict
              </th>
              <th scope="col">
                <span class="swatch experimental" /> Experimental verdict
              </th>
              <th scope="col" class="text" title="Do the verdicts differ beyond the noise of the curves behind them?">
                Change
              </th>
              <th scope="col" title={`Best QPS with threads, experimental / baseline, ± half its ${confidenceText(diff.interval_confidence)} interval`}>Best thread QPS ratio</th>
              <th scope="col" title={`Best QPS with processes, experimental / baseline, ± half its ${confidenceText(diff.interval_confidence)} interval`}>Best process QPS ratio</th>
            </tr>
          </thead>
          <tbody>
            {pairs.map((p) => (
              <tr key={p.stage} data-stage={p.stage}>
                <th scope="row" class="text">
                  {p.stage}
                </th>
                <td class="text">{p.baseline ? <VerdictBadge stage={p.baseline} /> : "not in this run"}</td>
                <td class="text">
                  {p.experimental ? <VerdictBadge stage={p.experimental} /> : "not in this run"}
                  {p.diff.verdict_changed && <span class="muted"> (changed)</span>}
                </td>
                <td class="text diag-change" data-change={p.diff.change}>
                  <span class={`change ${p.diff.change}`}>{CHANGE_LABELS[p.diff.change]}</span>
                  <div class="muted" data-testid="change-reason">
                    {p.diff.change_reason}
                  </div>
                  {bestLevelChangeText(p.diff) && <div class="muted">{bestLevelChangeText(p.diff)}</div>}
                </td>
                <td data-raw={p.diff.best_thread_qps_ratio ?? ""} data-low={p.diff.best_thread_qps_ratio_low ?? ""} data-high={p.diff.best_thread_qps_ratio_high ?? ""}>
                  {formatRatioInterval(p.diff.best_thread_qps_ratio, p.diff.best_thread_qps_ratio_low, p.diff.best_thread_qps_ratio_high)}
                </td>
                <td data-raw={p.diff.best_process_qps_ratio ?? ""} data-low={p.diff.best_process_qps_ratio_low ?? ""} data-high={p.diff.best_process_qps_ratio_high ?? ""}>
                  {formatRatioInterval(p.diff.best_process_qps_ratio, p.diff.best_process_qps_ratio_low, p.diff.best_process_qps_ratio_high)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
      {pairs.map((p) => {
        const xs = levels([p.baseline, p.experimental]);
        // One y range per metric for both sides, so the two curves compare by eye.
        const shared = { qps: metricMax([p.baseline, p.experimental], "qps"), cpu_pct: metricMax([p.baseline, p.experimental], "cpu_pct"), peak_memory_bytes: metricMax([p.baseline, p.experimental], "peak_memory_bytes") };
        return (
          <section key={p.stage} aria-label={`Stage ${p.stage}`}>
            <h2>Stage “{p.stage}”</h2>
            <div class="grid2">
              {p.baseline ? <StageCard stage={p.baseline} side="baseline" xs={xs} yMax={shared} confidence={diff.interval_confidence} /> : <Absent side="baseline" />}
              {p.experimental ? <StageCard stage={p.experimental} side="experimental" xs={xs} yMax={shared} confidence={diff.interval_confidence} /> : <Absent side="experimental" />}
            </div>
          </section>
        );
      })}
    </div>
  );
}

function Absent({ side }: { side: Side }) {
  return (
    <div class="card" data-side={side}>
      <p class="muted">Not a stage of the {side} run.</p>
    </div>
  );
}

function RunHeader({ r, side }: { r: NamedReport; side: Side }) {
  const status = statusText(r);
  return (
    <div class="card diag-run" data-side={side} data-run={r.run}>
      <h2>
        <span class={`swatch ${side}`} aria-hidden="true" /> {r.run}
      </h2>
      <p class="muted" data-testid="diagnostic-environment">
        {environmentText(r.environment)}
      </p>
      {r.group && (
        <p class="note" data-testid="diagnostic-group" data-recordings={r.group.recordings.length}>
          {r.group.note}
        </p>
      )}
      {status && <Message kind="warn" title={status} />}
      {r.warnings.length > 0 && (
        <Message kind="warn" title="Parts of the results could not be read">
          <ul>
            {r.warnings.map((w, i) => (
              <li key={i}>{w}</li>
            ))}
          </ul>
        </Message>
      )}
    </div>
  );
}

function VerdictBadge({ stage }: { stage: DiagnosticStage }) {
  return (
    <span class={`verdict ${verdictTone(stage.verdict)}`} data-verdict={stage.verdict}>
      {stage.label}
    </span>
  );
}

const METRICS: { metric: Metric; title: string; axis: string }[] = [
  { metric: "qps", title: "Throughput", axis: "QPS (calls/s)" },
  { metric: "cpu_pct", title: "CPU (100 % = one core)", axis: "CPU %" },
  { metric: "peak_memory_bytes", title: "Peak memory (RSS of all workers)", axis: "Peak RSS" },
];

function StageCard({
  stage,
  side,
  xs,
  yMax,
  confidence,
}: {
  stage: DiagnosticStage;
  side: Side;
  xs: number[];
  yMax?: Record<Metric, number>;
  /** The level of the response's intervals. */
  confidence: number;
}) {
  const color = side === "baseline" ? BASELINE_COLOR : EXPERIMENTAL_COLOR;
  const gil = gilRows(stage);
  const swept = stage.curves.length > 0;
  const crowded = crowdedText(stage);
  return (
    <div class="card diag-stage" data-stage={stage.stage} data-side={side}>
      <p>
        <VerdictBadge stage={stage} /> <span data-testid="verdict-reason">{stage.reason}</span>
      </p>
      {swept && (
        <p data-testid="best">
          Best concurrency: <b>{bestText(stage, "thread")}</b> with threads · <b>{bestText(stage, "process")}</b> with processes
        </p>
      )}
      {crowded && <Message kind="warn" title={crowded} />}
      {stage.oversubscription && <Message kind="warn" title={`Oversubscribed: ${stage.oversubscription}`} />}
      {stage.skipped_levels.length > 0 && (
        <Message kind="info" title="Levels not run">
          <ul data-testid="skipped-levels">
            {skippedLevelLines(stage).map((line) => (
              <li key={line}>{line}</li>
            ))}
          </ul>
        </Message>
      )}
      {stage.errors > 0 && (
        <Message kind="warn" title={`${formatInt(stage.errors)} of ${formatInt(stage.items)} calls raised`}>
          {stage.first_error}
        </Message>
      )}
      {swept && (
        <>
          <Legend
            items={EXECUTORS.map((ex) => ({ label: EXECUTOR_LABELS[ex], color, kind: ex === "thread" ? ("line" as const) : ("dashed" as const) }))}
          />
          <div class="diag-charts">
            {METRICS.map((m) => (
              <LevelChart key={m.metric} stage={stage} xs={xs} color={color} yMax={yMax?.[m.metric]} {...m} />
            ))}
          </div>
        </>
      )}
      <h3>Who holds the GIL</h3>
      <p class="muted" data-testid="gil-summary">
        {gilSummary(stage)}
      </p>
      {gil.length > 0 && (
        <table class="kv" data-testid="gil-holders" aria-label={`Functions holding the GIL in stage ${stage.stage}`}>
          <thead>
            <tr>
              <th scope="col">Function</th>
              <th scope="col" class="text">
                Where
              </th>
              <th scope="col">Samples</th>
              <th scope="col">Share of GIL-held</th>
            </tr>
          </thead>
          <tbody>
            {gil.map((g) => (
              <tr key={`${g.file}:${g.function}`}>
                <td class="text">{g.function}</td>
                <td class="text" title={`${g.file}:${g.line}`}>
                  {g.where}
                </td>
                <td>{formatInt(g.samples)}</td>
                <td>{g.sharePct.toFixed(1)} %</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {swept && (
        <details>
          <summary>Every level measured</summary>
          <table class="kv" data-testid="points">
            <thead>
              <tr>
                <th scope="col">Executor</th>
                <th scope="col">Workers</th>
                <th scope="col">QPS</th>
                <th scope="col" title={`${confidenceText(confidence)} interval of the level's QPS, from the slices of its measured window`}>
                  QPS interval
                </th>
                <th scope="col">p50</th>
                <th scope="col">p90</th>
                <th scope="col">CPU</th>
                <th scope="col" title="torch intra-op threads in each worker during the level">Intra-op threads</th>
                <th scope="col" title="Cores one call kept busy per calling thread: more than 1 is the stage's own thread pool">
                  Cores a call
                </th>
                <th scope="col">Peak RSS</th>
                <th scope="col">Errors</th>
              </tr>
            </thead>
            <tbody>
              {pointRows(stage).map((r) => (
                <tr key={r.key} data-point={r.key} title={r.cutReason ? `Cut short: ${r.cutReason}` : undefined}>
                  <td>{EXECUTOR_LABELS[r.executor]}</td>
                  <td>{r.concurrency}</td>
                  <td data-raw={r.rawQps}>{r.qps}</td>
                  <td>{r.qpsInterval}</td>
                  <td>{r.p50}</td>
                  <td>{r.p90}</td>
                  <td>{r.cpu}</td>
                  <td>{r.threads}</td>
                  <td>{r.coresPerCall}</td>
                  <td>{r.memory}</td>
                  <td>{r.errors}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </details>
      )}
    </div>
  );
}

function format(metric: Metric, v: number | null | undefined): string {
  if (metric === "qps") return formatQps(v);
  if (metric === "cpu_pct") return formatCpu(v);
  return formatBytes(v);
}

function LevelChart(props: { stage: DiagnosticStage; xs: number[]; color: string; yMax: number | undefined; metric: Metric; title: string; axis: string }) {
  const { stage, xs, color, yMax, metric, title, axis } = props;
  const { data, options, series } = useMemo(() => {
    const series = curveSeries(stage, metric, xs);
    const top = yMax ?? Math.max(0, ...EXECUTORS.flatMap((ex) => series[ex].map((v) => v ?? 0)));
    const y = msAxis(axis);
    const options: Omit<uPlot.Options, "width" | "height"> = {
      scales: { x: { time: false, distr: 3, log: 2, range: levelRange(xs) }, y: { range: [0, top * 1.1 || 1] } },
      axes: [
        // Ticks at the measured levels: uPlot's own log2 splits start at the range's minimum, not at a level.
        { label: "Workers (log2 scale)", size: 36, labelSize: 16, splits: () => xs.slice(), values: (_u, splits) => splits.map(levelTick) },
        metric === "qps" || metric === "cpu_pct" ? y : bytesAxis(axis),
      ],
      series: [
        {},
        { label: "threads", stroke: color, width: 2, points: { show: true, size: 6 } },
        { label: "processes", stroke: color, width: 2, dash: [6, 4], points: { show: true, size: 6 } },
      ],
      cursor: { drag: { x: false, y: false } },
    };
    return { data: [xs, series.thread, series.process] as uPlot.AlignedData, options, series };
  }, [stage, xs, color, yMax, metric, axis]);
  return (
    <figure class="diag-chart" data-chart={metric}>
      <figcaption>{title}</figcaption>
      <UPlotChart
        options={options}
        data={data}
        height={170}
        label={`${title} of stage ${stage.stage} against the number of workers, threads and processes`}
        tooltip={(i) => (
          <div>
            <div class="name">{xs[i]} workers</div>
            {EXECUTORS.map((ex) => (
              <div key={ex}>
                {EXECUTOR_LABELS[ex]}: {format(metric, series[ex][i])}
              </div>
            ))}
          </div>
        )}
      />
    </figure>
  );
}
