/**
 * Overview: both runs' headline figures with delta and delta %
 * (diff/overview), a stacked step-time breakdown per run and the per-step
 * times of both runs as lines (overview of each run).
 */
import { ComparisonHead } from "../components/ComparisonHead";
import { Fragment } from "preact";
import { useMemo } from "preact/hooks";
import type uPlot from "uplot";
import type { ApiClient, DiffOverviewResponse, DiffOverviewRow, DiffSelection, OverviewResponse, StepInfo } from "../api";
import { DeltaText } from "../components/Delta";
import { Explanation, SignificanceMark } from "../components/Explanation";
import { Loading } from "../components/Loading";
import { ErrorMessage, Message } from "../components/Message";
import { NoteText } from "../components/NoteText";
import { Legend, UPlotChart } from "../components/UPlotChart";
import { CATEGORY_COLORS, CATEGORY_LABELS, categorySharePct, integerTickLabels, presentCategories, stackedSeries, stepLabel } from "../model/charts";
import { EM_DASH, formatMsWithUnit, formatPct } from "../model/format";
import {
  breakdownRowLabel,
  breakdownYMax,
  comparabilityTitle,
  type Difference,
  effectWord,
  overviewDeltaText,
  overviewValueText,
  rowPolarity,
  stepLineSeries,
  WORK_ROWS,
} from "../model/overview";
import { useRequest } from "../useRequest";
import { BASELINE_COLOR, barsPath, EXPERIMENTAL_COLOR, msAxis } from "../components/chartKit";

interface Props {
  client: ApiClient;
  sel: DiffSelection;
  reloadToken: number;
}

interface OverviewData {
  diff: DiffOverviewResponse;
  baseline: OverviewResponse;
  experimental: OverviewResponse;
}

export function OverviewView({ client, sel, reloadToken }: Props) {
  const req = useRequest<OverviewData>(
    async (opts) => {
      const [diff, baseline, experimental] = await Promise.all([
        client.diffOverview(sel, opts),
        client.overview({ run: sel.baseline, worker: sel.bWorker, span: sel.bSpan }, opts),
        client.overview({ run: sel.experimental, worker: sel.eWorker, span: sel.eSpan }, opts),
      ]);
      return { diff, baseline, experimental };
    },
    [client, sel.baseline, sel.bWorker, sel.bSpan, sel.experimental, sel.eWorker, sel.eSpan, sel.bSamples, sel.eSamples, sel.bTokens, sel.eTokens, reloadToken],
  );
  if (req.state === "loading" || req.state === "idle") return <Loading what="the overview" waitingFor={req.state === "loading" ? req.waitingFor : null} />;
  if (req.state === "error") return <ErrorMessage error={req.error} what="the overview" />;
  const { diff, baseline, experimental } = req.data;
  const warnings = [...baseline.warnings.map((w) => `Baseline: ${w}`), ...experimental.warnings.map((w) => `Experimental: ${w}`)];
  // Same run name on both sides (two workers / spans of one run): say which.
  const sameRun = baseline.run === experimental.run;
  const traceName = (ov: OverviewResponse) =>
    !sameRun ? ov.run : baseline.worker !== experimental.worker ? `${ov.run} · ${ov.worker}` : `${ov.run} · ${ov.worker} · span ${ov.span}`;
  return (
    <div data-view="overview">
      <Explanation client={client} sel={sel} reloadToken={reloadToken} />
      {warnings.length > 0 && (
        <Message kind="warn" title="Parts of a trace could not be read">
          <ul>
            {warnings.map((w, i) => (
              <li key={i}>{w}</li>
            ))}
          </ul>
        </Message>
      )}
      {diff.comparability.length > 0 && <Comparability items={diff.comparability} />}
      {diff.note ? (
        <div data-testid="overview-note">
          <Message kind="info" title="How these runs are compared">
            <NoteText text={diff.note} />
          </Message>
        </div>
      ) : null}
      <div class="grid2 wide-left">
        <section class="card" aria-labelledby="ov-cmp">
          <h2 id="ov-cmp">Comparison</h2>
          <ComparisonTable rows={diff.rows} devicePresent={diff.device_present} />
        </section>
        <section class="card" aria-labelledby="ov-steps">
          <h2 id="ov-steps">Step time per step</h2>
          <StepLines baseline={baseline.steps} experimental={experimental.steps} />
        </section>
      </div>
      <section aria-labelledby="ov-bd">
        <h2 id="ov-bd">Step-time breakdown</h2>
        <BreakdownCharts baseline={baseline} experimental={experimental} traceName={traceName} />
      </section>
    </div>
  );
}

/** Every difference between what the runs were besides the change (diff/comparability.py), before any number. */
function Comparability({ items }: { items: Difference[] }) {
  const { kind, title } = comparabilityTitle(items);
  return (
    <div data-testid="comparability">
      <Message kind={kind} title={title}>
        <table class="kv comparability" aria-label="How the runs differ">
          <thead>
            <tr>
              <th scope="col">What</th>
              <th scope="col">Baseline</th>
              <th scope="col">Experimental</th>
              <th scope="col">What it does to the numbers</th>
            </tr>
          </thead>
          <tbody>
            {items.map((d) => (
              <tr key={d.key} data-key={d.key} data-effect={d.effect}>
                <th scope="row">{d.label}</th>
                <td class="text">{d.baseline ?? EM_DASH}</td>
                <td class="text">{d.experimental ?? EM_DASH}</td>
                <td class="text wrap">
                  <span class={`chip effect-${d.effect}`}>{effectWord(d.effect)}</span> {d.text}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </Message>
    </div>
  );
}

function ComparisonTable({ rows, devicePresent }: { rows: DiffOverviewRow[]; devicePresent: boolean }) {
  const firstBreakdown = rows.findIndex((r) => r.metric.startsWith("breakdown_us."));
  const firstWork = rows.findIndex((r) => WORK_ROWS.has(r.metric));
  return (
    <table class="kv" aria-label="Baseline and experimental figures with their difference">
      <ComparisonHead />
      <tbody>
        {rows.map((r, i) => {
          const polarity = rowPolarity(r);
          const isBreakdown = r.metric.startsWith("breakdown_us.");
          // Neither trace launched work on a device: "0" devices reads like a count of something.
          const blank = !devicePresent && r.metric === "device_count";
          const cell = (v: number | string | null) => {
            const text = blank ? EM_DASH : overviewValueText(r, v);
            return (
              <td class={typeof v === "string" ? "text clip" : ""} data-raw={v ?? ""} title={text}>
                {text}
              </td>
            );
          };
          // The group heading says "average per step": no need to repeat it on every row.
          const label = isBreakdown ? breakdownRowLabel(r) : r.label;
          return (
            <Fragment key={r.metric}>
              {i === firstBreakdown && (
                <tr class="group-head" key="bd-head">
                  <th scope="rowgroup" colSpan={5}>
                    Step-time breakdown (average per profiled step)
                  </th>
                </tr>
              )}
              {i === firstWork && (
                <tr class="group-head" key="work-head">
                  <th scope="rowgroup" colSpan={5}>
                    Work per step (recorded batches)
                  </th>
                </tr>
              )}
              <tr data-metric={r.metric} class={isBreakdown ? "sub" : undefined} data-caveat={r.caveat ? "" : undefined}>
                <th scope="row" style={{ fontWeight: 400 }} title={isBreakdown ? `Step-time breakdown: ${label}` : label}>
                  {label}
                  {r.caveat && (
                    <div class="muted small caveat" data-testid="row-caveat">
                      {r.caveat}
                    </div>
                  )}
                </th>
                {cell(r.baseline)}
                {cell(r.experimental)}
                <td data-raw={r.delta ?? ""} data-col="delta">
                  <DeltaText value={blank ? null : r.delta} text={blank ? EM_DASH : overviewDeltaText(r)} polarity={polarity} />
                  {!blank && <SignificanceMark sig={r.significance} />}
                </td>
                <td data-raw={r.delta_pct ?? ""} data-col="delta_pct">
                  <DeltaText value={blank ? null : r.delta_pct} text={blank ? EM_DASH : formatPct(r.delta_pct)} polarity={polarity} />
                </td>
              </tr>
            </Fragment>
          );
        })}
      </tbody>
    </table>
  );
}

function StepLines({ baseline, experimental }: { baseline: StepInfo[]; experimental: StepInfo[] }) {
  const n = Math.max(baseline.length, experimental.length);
  const { data, options, labels } = useMemo(() => {
    const s = stepLineSeries(baseline, experimental);
    const options: Omit<uPlot.Options, "width" | "height"> = {
      scales: { x: { time: false, range: [0.5, n + 0.5] }, y: { range: (_u, _min, max) => [0, max * 1.1 || 1] } },
      axes: [
        {
          label: "Profiled step (ProfilerStep number)",
          values: (_u, splits) => integerTickLabels(splits, (x) => s.labels[x - 1] ?? ""),
          incrs: [1, 2, 5, 10, 20, 50],
        },
        msAxis("Step time (ms)"),
      ],
      series: [
        {},
        { label: "Baseline", stroke: BASELINE_COLOR, width: 2, points: { show: true, size: 6 } },
        { label: "Experimental", stroke: EXPERIMENTAL_COLOR, width: 2, points: { show: true, size: 6 } },
      ],
      cursor: { drag: { x: false, y: false } },
    };
    return { data: [s.xs, s.baselineMs, s.experimentalMs] as uPlot.AlignedData, options, labels: s.labels };
  }, [baseline, experimental, n]);
  if (n === 0) return <p class="muted">Neither trace has profiler steps.</p>;
  return (
    <div>
      <Legend
        items={[
          { label: "Baseline step time", color: BASELINE_COLOR, kind: "line" },
          { label: "Experimental step time", color: EXPERIMENTAL_COLOR, kind: "line" },
        ]}
      />
      <UPlotChart
        options={options}
        data={data}
        height={240}
        label="Duration of each profiled step, baseline and experimental, in milliseconds"
        tooltip={(i) => (
          <div>
            <div class="name">Step {labels[i]}</div>
            <div>
              <span class="k" style={{ background: BASELINE_COLOR }} />
              Baseline {baseline[i] ? `${baseline[i].name}: ${formatMsWithUnit(baseline[i].duration_us)}` : "—"}
            </div>
            <div>
              <span class="k" style={{ background: EXPERIMENTAL_COLOR }} />
              Experimental {experimental[i] ? `${experimental[i].name}: ${formatMsWithUnit(experimental[i].duration_us)}` : "—"}
            </div>
          </div>
        )}
      />
    </div>
  );
}

function BreakdownCharts({
  baseline,
  experimental,
  traceName,
}: {
  baseline: OverviewResponse;
  experimental: OverviewResponse;
  traceName: (ov: OverviewResponse) => string;
}) {
  const cats = useMemo(() => presentCategories(baseline.steps, experimental.steps), [baseline, experimental]);
  // One y range for both charts so their bars compare by eye.
  const yMax = breakdownYMax(baseline.steps, experimental.steps);
  return (
    <div>
      <Legend items={cats.map((c) => ({ label: CATEGORY_LABELS[c], color: CATEGORY_COLORS[c], kind: "bar" as const }))} />
      <div class="grid2">
        {(
          [
            ["Baseline", baseline],
            ["Experimental", experimental],
          ] as const
        ).map(([title, ov]) => (
          <div class="card" key={title} data-chart={`breakdown-${title.toLowerCase()}`}>
            <div class="chart-title">
              <h3>
                <span class={`swatch ${title.toLowerCase()}`} /> {title}: {traceName(ov)}
              </h3>
              <span class="chart-note">average profiled step {formatMsWithUnit(ov.avg_step_time_us)}</span>
            </div>
            <BreakdownChart ov={ov} cats={cats} yMax={yMax} title={title} />
          </div>
        ))}
      </div>
    </div>
  );
}

function BreakdownChart({ ov, cats, yMax, title }: { ov: OverviewResponse; cats: ReturnType<typeof presentCategories>; yMax: number; title: string }) {
  const { data, options } = useMemo(() => {
    const xs = ov.steps.map((_, i) => i + 1);
    const stacks = stackedSeries(ov.steps, cats);
    const options: Omit<uPlot.Options, "width" | "height"> = {
      scales: { x: { time: false, range: [0.4, xs.length + 0.6] }, y: { range: [0, yMax] } },
      axes: [
        {
          label: "Profiled step (ProfilerStep number)",
          values: (_u, splits) => integerTickLabels(splits, (x) => stepLabel(ov.steps[x - 1]?.name)),
          incrs: [1, 2, 5, 10, 20],
        },
        msAxis("Step time (ms)"),
      ],
      series: [
        {},
        ...stacks.map((s) => ({
          label: CATEGORY_LABELS[s.cat],
          fill: CATEGORY_COLORS[s.cat],
          stroke: CATEGORY_COLORS[s.cat],
          width: 0,
          paths: barsPath({ size: [0.6, 80] }),
          points: { show: false },
        })),
      ],
      cursor: { drag: { x: false, y: false }, points: { show: false } },
    };
    return { data: [xs, ...stacks.map((s) => s.values)] as uPlot.AlignedData, options };
  }, [ov, cats, yMax]);
  if (ov.steps.length === 0) return <p class="muted">No steps in this trace.</p>;
  return (
    <UPlotChart
      options={options}
      data={data}
      height={220}
      label={`${title} step time per step, stacked by category, in milliseconds`}
      tooltip={(i) => {
        const s = ov.steps[i];
        if (!s) return null;
        return (
          <div>
            <div class="name">
              {s.name}: {formatMsWithUnit(s.duration_us)}
            </div>
            {cats
              .slice()
              .reverse()
              .map((c) => (
                <div key={c}>
                  <span class="k" style={{ background: CATEGORY_COLORS[c] }} />
                  {CATEGORY_LABELS[c]}: {formatMsWithUnit(s.breakdown_us[c])} ({formatPct(categorySharePct(s, c), false)})
                </div>
              ))}
          </div>
        );
      }}
    />
  );
}

