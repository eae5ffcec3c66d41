/**
 * Overview: both runs' headline figures with delta and delta %
 * (diff/overview), a stacked step-time breakdown per run and the per-step
 * times of both runs as lines (overview of each run).
 */
import { useMemo } from "preact/hooks";
import type uPlot from "uplot";
import type { ApiClient, DiffOverviewResponse, DiffOverviewRow, DiffSelection, OverviewResponse, StepInfo } from "../api";
import { DeltaText } from "../components/Delta";
import { Loading } from "../components/Loading";
import { ErrorMessage, Message } from "../components/Message";
import { Legend, UPlotChart } from "../components/UPlotChart";
import { CATEGORY_COLORS, CATEGORY_LABELS, presentCategories, stackedSeries } from "../model/charts";
import { formatBytes, formatInt, formatMsWithUnit, formatPct, formatSignedInt, formatSignedMs } from "../model/format";
import { useRequest } from "../useRequest";
import { BASELINE_COLOR, barsPath, EXPERIMENTAL_COLOR, msAxis } from "./chartKit";

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
    [client, sel.baseline, sel.bWorker, sel.bSpan, sel.experimental, sel.eWorker, sel.eSpan, reloadToken],
  );
  if (req.state === "loading" || req.state === "idle") return <Loading what="the overview" waitingFor={req.state === "loading" ? req.waitingFor : null} />;
  if (req.state === "error") return <ErrorMessage error={req.error} what="the overview" />;
  const { diff, baseline, experimental } = req.data;
  const warnings = [...baseline.warnings.map((w) => `Baseline: ${w}`), ...experimental.warnings.map((w) => `Experimental: ${w}`)];
  return (
    <div data-view="overview">
      {warnings.length > 0 && (
        <Message kind="warn" title="Parts of a trace could not be read">
          <ul>
            {warnings.map((w, i) => (
              <li key={i}>{w}</li>
            ))}
          </ul>
        </Message>
      )}
      <div class="grid2 wide-left">
        <section class="card" aria-labelledby="ov-cmp">
          <h2 id="ov-cmp">Comparison</h2>
          <ComparisonTable rows={diff.rows} />
        </section>
        <section class="card" aria-labelledby="ov-steps">
          <h2 id="ov-steps">Step time per step</h2>
          <StepLines baseline={baseline.steps} experimental={experimental.steps} />
        </section>
      </div>
      <section aria-labelledby="ov-bd">
        <h2 id="ov-bd">Step-time breakdown</h2>
        <BreakdownCharts baseline={baseline} experimental={experimental} />
      </section>
    </div>
  );
}

function valueText(row: DiffOverviewRow, v: number | string | null): string {
  if (v === null) return "—";
  if (typeof v === "string") return v;
  switch (row.unit) {
    case "us":
      return formatMsWithUnit(v);
    case "bytes":
      return formatBytes(v);
    case "pct":
      return formatPct(v, false);
    default:
      return formatInt(v);
  }
}

function deltaText(row: DiffOverviewRow): string {
  const d = row.delta;
  if (d === null) return "—";
  switch (row.unit) {
    case "us":
      return `${formatSignedMs(d)} ms`;
    case "bytes":
      return formatBytes(d, true);
    case "pct":
      // A difference of two percentages is in percentage points.
      return `${d > 0 ? "+" : d < 0 ? "−" : ""}${Math.abs(d).toFixed(1)} pp`;
    default:
      return formatSignedInt(d);
  }
}

/** Higher is better for these; everything else (time, memory) is better lower. */
const HIGHER_IS_BETTER = new Set(["gpu_utilization_pct"]);
/** Facts about the setup, not performance: no good/bad colour. */
const NEUTRAL = new Set(["device", "device_count", "device_memory_bytes", "steps"]);

function ComparisonTable({ rows }: { rows: DiffOverviewRow[] }) {
  return (
    <table class="kv" aria-label="Baseline and experimental figures with their difference">
      <thead>
        <tr>
          <th scope="col">Metric</th>
          <th scope="col">
            <span class="swatch baseline" /> Baseline
          </th>
          <th scope="col">
            <span class="swatch experimental" /> Experimental
          </th>
          <th scope="col">Δ</th>
          <th scope="col">Δ %</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => {
          const neutral = NEUTRAL.has(r.metric) || r.unit === null;
          const flip = HIGHER_IS_BETTER.has(r.metric) ? -1 : 1;
          const isBreakdown = r.metric.startsWith("breakdown_us.");
          return (
            <tr key={r.metric} data-metric={r.metric}>
              <th scope="row" style={{ fontWeight: 400, paddingLeft: isBreakdown ? "20px" : undefined }}>
                {isBreakdown ? `Breakdown: ${r.label}` : r.label}
              </th>
              <td class={typeof r.baseline === "string" ? "text" : ""} data-raw={r.baseline ?? ""}>
                {valueText(r, r.baseline)}
              </td>
              <td class={typeof r.experimental === "string" ? "text" : ""} data-raw={r.experimental ?? ""}>
                {valueText(r, r.experimental)}
              </td>
              <td data-raw={r.delta ?? ""} data-col="delta">
                <DeltaText value={r.delta === null ? null : r.delta * flip} text={deltaText(r)} neutral={neutral} />
              </td>
              <td data-raw={r.delta_pct ?? ""} data-col="delta_pct">
                <DeltaText value={r.delta_pct === null ? null : r.delta_pct * flip} text={formatPct(r.delta_pct)} neutral={neutral} />
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

function StepLines({ baseline, experimental }: { baseline: StepInfo[]; experimental: StepInfo[] }) {
  const n = Math.max(baseline.length, experimental.length);
  const { data, options } = useMemo(() => {
    const xs = Array.from({ length: n }, (_, i) => i + 1);
    const b = xs.map((_, i) => (baseline[i] ? baseline[i].duration_us / 1000 : null));
    const e = xs.map((_, i) => (experimental[i] ? experimental[i].duration_us / 1000 : null));
    const options: Omit<uPlot.Options, "width" | "height"> = {
      scales: { x: { time: false, range: [0.5, n + 0.5] }, y: { range: (_u, _min, max) => [0, max * 1.1 || 1] } },
      axes: [
        { label: "Profiled step (in order)", values: (_u, splits) => splits.map((s) => (Number.isInteger(s) ? String(s) : "")), incrs: [1, 2, 5, 10, 20, 50] },
        msAxis("Step time (ms)"),
      ],
      series: [
        {},
        { label: "Baseline", stroke: BASELINE_COLOR, width: 2, points: { show: true, size: 6 } },
        { label: "Experimental", stroke: EXPERIMENTAL_COLOR, width: 2, points: { show: true, size: 6 } },
      ],
      cursor: { drag: { x: false, y: false } },
    };
    return { data: [xs, b, e] as uPlot.AlignedData, options };
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
            <div class="name">Step {i + 1}</div>
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

function BreakdownCharts({ baseline, experimental }: { baseline: OverviewResponse; experimental: OverviewResponse }) {
  const cats = useMemo(() => presentCategories(baseline.steps, experimental.steps), [baseline, experimental]);
  // One y range for both charts so their bars compare by eye.
  const yMax = Math.max(1e-3, ...baseline.steps.map((s) => s.duration_us / 1000), ...experimental.steps.map((s) => s.duration_us / 1000)) * 1.08;
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
                <span class={`swatch ${title.toLowerCase()}`} /> {title}: {ov.run}
              </h3>
              <span class="chart-note">average step {formatMsWithUnit(ov.avg_step_time_us)}</span>
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
        { label: "Profiled step", values: (_u, splits) => splits.map((s) => (Number.isInteger(s) && ov.steps[s - 1] ? String(ov.steps[s - 1]?.step) : "")), incrs: [1, 2, 5, 10, 20] },
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
                  {CATEGORY_LABELS[c]}: {formatMsWithUnit(s.breakdown_us[c])} ({formatPct(s.duration_us ? (100 * s.breakdown_us[c]) / s.duration_us : null, false)})
                </div>
              ))}
          </div>
        );
      }}
    />
  );
}

