/**
 * The Distributed tab's charts: up to 64 ranks a stacked bar per rank
 * (`RankBarsSection`); beyond, the distribution (`DistributionSection`): at
 * each percentile of step time the rank there with its split, both runs'
 * histogram on shared bins, each part's spread over the ranks. Rendering
 * only: series and words from model/distributed.ts.
 */
import { useMemo } from "preact/hooks";
import type uPlot from "uplot";
import type { RankRow } from "../api";
import { sharedYMaxMs } from "../model/charts";
import {
  percentileBands,
  percentileLabel,
  rankBars,
  rankHistogram,
  rankLabel,
  SPLIT_PARTS,
  SPREAD_SHOWN,
  spreadRows,
  type NamedRanks,
  type Side,
} from "../model/distributed";
import { formatInt, formatMsWithUnit } from "../model/format";
import { BASELINE_COLOR, barsPath, countAxis, EXPERIMENTAL_COLOR, indexAxis, msAxis, msXAxis } from "./chartKit";
import { Legend, UPlotChart } from "./UPlotChart";

export const SIDE_TITLE: Record<Side, string> = { baseline: "Baseline", experimental: "Experimental" };

export type SideRanks = { side: Side; ranks: NamedRanks };

export function RankBarsSection({ sides }: { sides: SideRanks[] }) {
  // One y range for every chart, so the bars of both runs compare by eye.
  const yMax = sharedYMaxMs(sides.flatMap((s) => s.ranks.ranks.map((r) => r.step_time_us)));
  return (
    <section aria-labelledby="dist-split">
      <h2 id="dist-split">Where each rank's step goes (average per step)</h2>
      <Legend items={SPLIT_PARTS.map((p) => ({ label: p.label, color: p.color, kind: "bar" as const }))} />
      <div class={sides.length > 1 ? "grid2" : undefined}>
        {sides.map((s) => (
          <div class="card" key={s.side} data-chart={`ranks-${s.side}`}>
            <ChartTitle s={s} />
            <RankChart ranks={s.ranks.ranks} slowest={s.ranks.slowest?.rank ?? null} yMax={yMax} title={SIDE_TITLE[s.side]} />
          </div>
        ))}
      </div>
    </section>
  );
}

function ChartTitle({ s }: { s: SideRanks }) {
  return (
    <div class="chart-title">
      <h3>
        <span class={`swatch ${s.side}`} /> {SIDE_TITLE[s.side]}: {s.ranks.run}
      </h3>
      {s.ranks.median_step_time_us !== null && <span class="chart-note">median rank {formatMsWithUnit(s.ranks.median_step_time_us)}</span>}
    </div>
  );
}

/** Thousands of ranks: the rank at each percentile of step time (stacked split), a histogram, each part's spread. */
export function DistributionSection({ sides }: { sides: SideRanks[] }) {
  const yMax = sharedYMaxMs(sides.flatMap((s) => s.ranks.percentiles.map((p) => p.step_time_us)));
  return (
    <section aria-labelledby="dist-bands">
      <h2 id="dist-bands">How the ranks' steps are spread (average per step)</h2>
      <p class="muted">
        Ranks sorted by step time: at each percentile, the rank there and where its step goes. The histogram counts the ranks
        per band of step time.
      </p>
      <Legend items={SPLIT_PARTS.map((p) => ({ label: p.label, color: p.color, kind: "bar" as const }))} />
      <div class={sides.length > 1 ? "grid2" : undefined}>
        {sides.map((s) => (
          <div class="card" key={s.side} data-chart={`bands-${s.side}`}>
            <ChartTitle s={s} />
            <PercentileChart r={s.ranks} yMax={yMax} title={SIDE_TITLE[s.side]} />
          </div>
        ))}
      </div>
      <div class="grid2">
        <div class="card" data-chart="histogram">
          <div class="chart-title">
            <h3>Ranks by step time</h3>
          </div>
          <HistogramChart sides={sides} />
        </div>
        <div class="card" data-testid="rank-spread">
          <div class="chart-title">
            <h3>Across ranks</h3>
          </div>
          <SpreadTable sides={sides} />
        </div>
      </div>
    </section>
  );
}

function PercentileChart({ r, yMax, title }: { r: NamedRanks; yMax: number; title: string }) {
  const { data, options, bands } = useMemo(() => {
    const bands = percentileBands(r);
    const axis = indexAxis("Ranks by step time (percentile)", (x) => percentileLabel(x), 0, [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
    return { ...splitBars(bands.xs, bands.stacks, [-0.6, 100.6], yMax, axis, [0.9, 40]), bands };
  }, [r, yMax]);
  if (r.percentiles.length === 0) return <p class="muted">No ranks read yet.</p>;
  return (
    <UPlotChart
      options={options}
      data={data}
      height={240}
      label={`${title}: the rank at each percentile of step time, its step stacked into computation, communication and idle, in milliseconds`}
      tooltip={(i) => {
        const p = r.percentiles[i];
        if (!p || bands.ranks[i] === undefined) return null;
        return (
          <div>
            <div class="name">
              {percentileLabel(p.pct)}: {rankLabel(p.rank)} ({p.worker}), {formatMsWithUnit(p.step_time_us)} per step
            </div>
            {SPLIT_PARTS.slice()
              .reverse()
              .map((s) => (
                <div key={s.part}>
                  <span class="k" style={{ background: s.color }} />
                  {s.label}: {formatMsWithUnit(p[s.part])}
                </div>
              ))}
          </div>
        );
      }}
    />
  );
}

function HistogramChart({ sides }: { sides: SideRanks[] }) {
  const h = useMemo(() => rankHistogram(sides.map((s) => ({ side: s.side, ranks: s.ranks }))), [sides]);
  const { data, options } = useMemo(() => {
    const half = h.widthMs / 2;
    const paired = h.series.length > 1;
    const options: Omit<uPlot.Options, "width" | "height"> = {
      scales: { x: { time: false, range: [(h.xs[0] ?? 0) - half, (h.xs[h.xs.length - 1] ?? 1) + half] }, y: { range: (_u, _min, max) => [0, Math.max(1, max) * 1.08] } },
      axes: [msXAxis("Step time (ms)"), countAxis("Ranks")],
      series: [
        {},
        ...h.series.map((s, i) => ({
          label: SIDE_TITLE[s.side],
          fill: s.side === "baseline" ? BASELINE_COLOR : EXPERIMENTAL_COLOR,
          stroke: s.side === "baseline" ? BASELINE_COLOR : EXPERIMENTAL_COLOR,
          width: 0,
          // Two runs: side by side within each bin.
          paths: barsPath(paired ? { size: [0.45, 60], align: i === 0 ? 1 : -1 } : { size: [0.9, 60] }),
          points: { show: false },
        })),
      ],
      cursor: { drag: { x: false, y: false }, points: { show: false } },
    };
    return { data: [h.xs, ...h.series.map((s) => s.counts)] as uPlot.AlignedData, options };
  }, [h]);
  if (h.xs.length === 0) return <p class="muted">No ranks read yet.</p>;
  return (
    <UPlotChart
      options={options}
      data={data}
      height={220}
      label="Number of ranks per band of average step time, each run"
      tooltip={(i) => (
        <div>
          <div class="name">
            {formatMsWithUnit((h.xs[i] ?? 0) * 1000 - h.widthMs * 500)} to {formatMsWithUnit((h.xs[i] ?? 0) * 1000 + h.widthMs * 500)}
          </div>
          {h.series.map((s) => (
            <div key={s.side}>
              {SIDE_TITLE[s.side]}: {formatInt(s.counts[i] ?? 0)} ranks
            </div>
          ))}
        </div>
      )}
    />
  );
}

function SpreadTable({ sides }: { sides: SideRanks[] }) {
  return (
    <table class="kv" aria-label="Each part of the step over the ranks: minimum, percentiles, maximum and mean">
      <thead>
        <tr>
          <th scope="col">ms per step</th>
          {SPREAD_SHOWN.map((p) => (
            <th key={p} scope="col">
              {percentileLabel(p)}
            </th>
          ))}
          <th scope="col">mean</th>
        </tr>
      </thead>
      <tbody>
        {sides.flatMap((s) => [
          sides.length > 1 ? (
            <tr key={`g-${s.side}`} class="group">
              <td colSpan={SPREAD_SHOWN.length + 2}>
                {SIDE_TITLE[s.side]}: {s.ranks.run}
              </td>
            </tr>
          ) : null,
          ...spreadRows(s.ranks).map((row) => (
            <tr key={`${s.side}-${row.quantity}`} data-side={s.side} data-quantity={row.quantity}>
              <th scope="row" style={{ fontWeight: 400 }}>
                {row.label}
              </th>
              {row.cells.map((c, i) => (
                <td key={i}>{c}</td>
              ))}
            </tr>
          )),
        ])}
      </tbody>
    </table>
  );
}

/** Stacked bars of the step's split (ms, top of the stack first) over `xs`: a bar per rank, or per percentile. */
function splitBars(
  xs: number[],
  stacks: { part: string; values: number[] }[],
  xRange: [number, number],
  yMax: number,
  xAxis: uPlot.Axis,
  size: [number, number],
): { data: uPlot.AlignedData; options: Omit<uPlot.Options, "width" | "height"> } {
  const part = (name: string) => SPLIT_PARTS.find((p) => p.part === name);
  return {
    data: [xs, ...stacks.map((s) => s.values)] as uPlot.AlignedData,
    options: {
      scales: { x: { time: false, range: xRange }, y: { range: [0, yMax] } },
      axes: [xAxis, msAxis("Step time (ms)")],
      series: [
        {},
        ...stacks.map((s) => ({
          label: part(s.part)?.label ?? s.part,
          fill: part(s.part)?.color ?? "#999",
          stroke: part(s.part)?.color ?? "#999",
          width: 0,
          paths: barsPath({ size }),
          points: { show: false },
        })),
      ],
      cursor: { drag: { x: false, y: false }, points: { show: false } },
    },
  };
}

function RankChart({ ranks, slowest, yMax, title }: { ranks: RankRow[]; slowest: number | null; yMax: number; title: string }) {
  const { data, options } = useMemo(() => {
    const bars = rankBars(ranks, slowest);
    const axis = indexAxis("Rank", (x) => bars.labels[x - 1] ?? "", 0, bars.ticks);
    return splitBars(bars.xs, bars.stacks, [0.4, ranks.length + 0.6], yMax, axis, [0.7, 80]);
  }, [ranks, slowest, yMax]);
  if (ranks.length === 0) return <p class="muted">No ranks in this run.</p>;
  return (
    <UPlotChart
      options={options}
      data={data}
      height={240}
      label={`${title}: average step time of each rank, stacked into computation, communication and idle, in milliseconds`}
      tooltip={(i) => {
        const r = ranks[i];
        if (!r) return null;
        return (
          <div>
            <div class="name">
              {rankLabel(r.rank)} ({r.worker}): {formatMsWithUnit(r.step_time_us)} per step
            </div>
            {SPLIT_PARTS.slice()
              .reverse()
              .map((p) => (
                <div key={p.part}>
                  <span class="k" style={{ background: p.color }} />
                  {p.label}: {formatMsWithUnit(r[p.part])}
                </div>
              ))}
          </div>
        );
      }}
    />
  );
}
