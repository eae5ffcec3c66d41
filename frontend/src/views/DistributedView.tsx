/**
 * Distributed: every trace file of a run as one rank. Each run's
 * distributedInfo, straggler and slowest ranks in words; up to 64 ranks the
 * average step of every rank split into computation / communication / idle
 * as stacked bars (both runs side by side, one y range), beyond that the
 * distribution: the rank at each percentile of step time with its split, a
 * histogram of both runs, each part's spread and the two runs percentile by
 * percentile; then the ranks of the two runs matched by rank number with
 * deltas, largest change first, in a virtualised table (`distributed`).
 * While ranks load the answer holds those ready and says how many are
 * left: shown at once, asked again until complete. Rendering only: the data
 * comes shaped from model/distributed.ts.
 */
import { useMemo } from "preact/hooks";
import type uPlot from "uplot";
import type { ApiClient, DiffSelection, DistributedResponse, RankRow, RunInfo } from "../api";
import { DeltaText } from "../components/Delta";
import { Loading } from "../components/Loading";
import { ErrorMessage, Message } from "../components/Message";
import { SortedTable } from "../components/SortedTable";
import { Legend, UPlotChart } from "../components/UPlotChart";
import { sharedYMaxMs } from "../model/charts";
import {
  answerComplete,
  answerSides,
  BAR_RANKS_MAX,
  coverageNotes,
  distributedPlan,
  namedPercentileRows,
  percentileBands,
  percentileDeltaColumns,
  percentileLabel,
  rankChartKind,
  rankHistogram,
  rankProgress,
  slowestRanks,
  spreadRows,
  SPREAD_SHOWN,
  namedRankDeltaRows,
  namedRankRows,
  rankBars,
  rankCoverageNote,
  rankDeltaColumns,
  rankLabel,
  rankOrder,
  rankTableSort,
  runFacts,
  runNotes,
  runRankColumns,
  SPLIT_PARTS,
  stragglerText,
  unmatchedRanks,
  type DistributedPlan,
  type Side,
  type NamedRanks,
} from "../model/distributed";
import { formatInt, formatMsWithUnit } from "../model/format";
import { usePolledRequest } from "../usePolledRequest";
import { BASELINE_COLOR, barsPath, countAxis, EXPERIMENTAL_COLOR, indexAxis, msAxis, msXAxis } from "./chartKit";

interface Props {
  client: ApiClient;
  runs: RunInfo[];
  sel: DiffSelection;
  reloadToken: number;
}

const SIDE_TITLE: Record<Side, string> = { baseline: "Baseline", experimental: "Experimental" };

export function DistributedView({ client, runs, sel, reloadToken }: Props) {
  const plan = distributedPlan(runs, sel.baseline, sel.experimental);
  const [first, second] = plan.kind === "pair" ? [plan.baseline, plan.experimental] : plan.kind === "single" ? [plan.run, null] : ["", null];
  // Partial while ranks load: shown at once, asked again until complete.
  const req = usePolledRequest<DistributedResponse>(
    plan.kind === "none" ? null : (opts) => client.distributed(first, second, opts),
    answerComplete,
    [client, plan.kind, first, second, reloadToken],
  );
  if (plan.kind === "none")
    return (
      <Message kind="info" title={`No trace files in ${plan.picked.map((r) => `“${r}”`).join(" or ")}`}>
        The Distributed tab takes every trace file of a run as one rank. Pick runs recorded with torch.profiler.
      </Message>
    );
  if (req.state === "loading" || req.state === "idle") return <Loading what="every rank of the runs" waitingFor={req.state === "loading" ? req.waitingFor : null} />;
  if (req.state === "error") return <ErrorMessage error={req.error} what="every rank of the runs" />;
  return <Loaded d={req.data} plan={plan} />;
}

function Loaded({ d, plan }: { d: DistributedResponse; plan: DistributedPlan }) {
  const sides = answerSides(d, plan);
  const paired = d.experimental !== null;
  const kind = rankChartKind(Math.max(...sides.map((s) => s.ranks.ranks.length)));
  const unmatched = d.complete ? unmatchedRanks(d) : [];
  return (
    <div data-view="distributed" data-complete={d.complete ? "true" : "false"} data-chart-kind={kind}>
      {plan.kind === "single" && plan.missing && (
        <Message kind="info" title={`Run “${plan.missing}” has no trace files`}>
          Showing the ranks of “{plan.run}” alone. Pick two runs with trace files to compare them rank by rank.
        </Message>
      )}
      {sides.map((s) => {
        const p = rankProgress(s.ranks);
        return p ? (
          <div key={`p-${s.side}`} class="card" data-testid="rank-progress" data-side={s.side} data-ready={p.ready} data-total={p.total} role="status">
            <progress max={p.total} value={p.ready} aria-label={`Ranks of ${s.ranks.run} read`} /> {p.text}
          </div>
        ) : null;
      })}
      {sides.flatMap((s) =>
        coverageNotes(s.ranks).map((n) => (
          <div key={`c-${s.side}-${n.kind}`} data-testid={`rank-${n.kind}`} data-side={s.side}>
            <Message kind={n.kind === "failed" ? "error" : "info"} title={`${SIDE_TITLE[s.side]}: ${n.title}`}>
              {n.body}
            </Message>
          </div>
        )),
      )}
      {sides.map((s) => {
        const note = d.complete ? rankCoverageNote(s.ranks) : null;
        return note ? (
          <div key={`n-${s.side}`} data-testid="rank-coverage" data-side={s.side}>
            <Message kind="info" title={`${SIDE_TITLE[s.side]}: ${note.title}`}>
              {note.body}
            </Message>
          </div>
        ) : null;
      })}
      <div class={sides.length > 1 ? "grid2" : undefined}>
        {sides.map((s) => (
          <RunCard key={s.side} side={s.side} r={s.ranks} />
        ))}
      </div>
      {kind === "bars" ? <RankBarsSection sides={sides} /> : <DistributionSection sides={sides} />}
      {paired && kind === "distribution" && (
        <SortedTable
          key="pct"
          title="Percentile by percentile"
          label="Each quantity's value at each percentile over the ranks, baseline versus experimental"
          testId="percentile-table"
          rows={namedPercentileRows(d.by_percentile)}
          columns={percentileDeltaColumns()}
          initialSort={{ key: "name", dir: "asc" }}
          nameOrder={rankOrder}
          empty="A run has no ranks read yet."
        />
      )}
      {/* Keyed: each table starts from its own default order, not the other's sort column. */}
      {paired ? (
        <SortedTable
          key="pair"
          title="Rank by rank"
          label="Ranks matched by rank number, baseline versus experimental, largest change in step time first"
          testId="rank-table"
          rows={namedRankDeltaRows(d.rows)}
          columns={rankDeltaColumns()}
          initialSort={rankTableSort(true)}
          nameOrder={rankOrder}
          empty="The two runs have no rank number in common."
        />
      ) : (
        <SortedTable
          key="one"
          title={`Ranks of “${d.baseline.run}”`}
          label="Every rank of the run, slowest first"
          testId="rank-table"
          rows={namedRankRows(d.baseline_ranks.ranks)}
          columns={runRankColumns()}
          initialSort={rankTableSort(false)}
          nameOrder={rankOrder}
          empty="The run has no ranks."
        />
      )}
      {unmatched.length > 0 && (
        <section class="card" aria-labelledby="dist-unmatched" data-testid="unmatched-ranks">
          <h2 id="dist-unmatched">Ranks only one run has</h2>
          <ul>
            {unmatched.map((u) => (
              <li key={u.rank} data-rank={u.rank} data-only={u.only}>
                {rankLabel(u.rank)}: only in the {u.only} run “{u.run}”
              </li>
            ))}
          </ul>
        </section>
      )}
    </div>
  );
}

type SideRanks = { side: Side; ranks: NamedRanks };

function RankBarsSection({ sides }: { sides: SideRanks[] }) {
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
function DistributionSection({ sides }: { sides: SideRanks[] }) {
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
    const color = (part: string) => SPLIT_PARTS.find((p) => p.part === part)?.color ?? "#999";
    const options: Omit<uPlot.Options, "width" | "height"> = {
      scales: { x: { time: false, range: [-0.6, 100.6] }, y: { range: [0, yMax] } },
      axes: [indexAxis("Ranks by step time (percentile)", (x) => percentileLabel(x), 0, [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]), msAxis("Step time (ms)")],
      series: [
        {},
        ...bands.stacks.map((s) => ({
          label: SPLIT_PARTS.find((p) => p.part === s.part)?.label ?? s.part,
          fill: color(s.part),
          stroke: color(s.part),
          width: 0,
          paths: barsPath({ size: [0.9, 40] }),
          points: { show: false },
        })),
      ],
      cursor: { drag: { x: false, y: false }, points: { show: false } },
    };
    return { data: [bands.xs, ...bands.stacks.map((s) => s.values)] as uPlot.AlignedData, options, bands };
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

function RunCard({ side, r }: { side: Side; r: NamedRanks }) {
  const straggler = stragglerText(r);
  return (
    <section class="card" data-testid="rank-run" data-side={side} data-run={r.run} aria-label={`${SIDE_TITLE[side]} run ${r.run}`}>
      <h2>
        <span class={`swatch ${side}`} aria-hidden="true" /> {SIDE_TITLE[side]}: {r.run}
      </h2>
      <table class="kv" aria-label={`Distributed setup of ${r.run}`}>
        <tbody>
          {runFacts(r).map((f) => (
            <tr key={f.label}>
              <th scope="row" style={{ fontWeight: 400 }}>
                {f.label}
              </th>
              <td class="text">{f.value}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {straggler && (
        <p data-testid="straggler" data-rank={straggler.delta ? r.slowest?.rank : undefined} data-vs-median-us={r.slowest?.vs_median_us}>
          <strong>{straggler.lead}</strong>
          {straggler.delta && (
            <>
              {" "}
              <DeltaText value={straggler.delta.us} text={straggler.delta.text} /> {straggler.tail}
            </>
          )}
        </p>
      )}
      {r.ranks.length > 3 && (
        <details data-testid="slowest-ranks" open={r.ranks.length > BAR_RANKS_MAX}>
          <summary>The {r.slowest_ranks.length} slowest ranks</summary>
          <ol>
            {slowestRanks(r).map((x) => (
              <li key={x.rank} data-rank={x.rank}>
                {x.text}
              </li>
            ))}
          </ol>
        </details>
      )}
      {runNotes(r).map((n, i) => (
        <p key={i} class="muted">
          {n}
        </p>
      ))}
    </section>
  );
}

function RankChart({ ranks, slowest, yMax, title }: { ranks: RankRow[]; slowest: number | null; yMax: number; title: string }) {
  const { data, options } = useMemo(() => {
    const bars = rankBars(ranks, slowest);
    const color = (part: string) => SPLIT_PARTS.find((p) => p.part === part)?.color ?? "#999";
    const options: Omit<uPlot.Options, "width" | "height"> = {
      scales: { x: { time: false, range: [0.4, ranks.length + 0.6] }, y: { range: [0, yMax] } },
      axes: [indexAxis("Rank", (x) => bars.labels[x - 1] ?? "", 0, bars.ticks), msAxis("Step time (ms)")],
      series: [
        {},
        ...bars.stacks.map((s) => ({
          label: SPLIT_PARTS.find((p) => p.part === s.part)?.label ?? s.part,
          fill: color(s.part),
          stroke: color(s.part),
          width: 0,
          paths: barsPath({ size: [0.7, 80] }),
          points: { show: false },
        })),
      ],
      cursor: { drag: { x: false, y: false }, points: { show: false } },
    };
    return { data: [bars.xs, ...bars.stacks.map((s) => s.values)] as uPlot.AlignedData, options };
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
