/**
 * Distributed: every trace file of a run as one rank. Each run's
 * distributedInfo and straggler in words, the average step of every rank
 * split into computation / communication / idle as stacked bars (both runs
 * side by side, one y range), and the ranks of the two runs matched by rank
 * number with deltas, largest change first (`distributed`). Rendering only:
 * the data comes shaped from model/distributed.ts.
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
  answerSides,
  distributedPlan,
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
import { formatMsWithUnit } from "../model/format";
import { useRequest } from "../useRequest";
import { barsPath, indexAxis, msAxis } from "./chartKit";

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
  const req = useRequest<DistributedResponse>(plan.kind === "none" ? null : (opts) => client.distributed(first, second, opts), [client, plan.kind, first, second, reloadToken]);
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
  // One y range for every chart, so the bars of both runs compare by eye.
  const yMax = sharedYMaxMs(sides.flatMap((s) => s.ranks.ranks.map((r) => r.step_time_us)));
  const unmatched = unmatchedRanks(d);
  return (
    <div data-view="distributed">
      {plan.kind === "single" && plan.missing && (
        <Message kind="info" title={`Run “${plan.missing}” has no trace files`}>
          Showing the ranks of “{plan.run}” alone. Pick two runs with trace files to compare them rank by rank.
        </Message>
      )}
      {sides.map((s) => {
        const note = rankCoverageNote(s.ranks);
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
      <section aria-labelledby="dist-split">
        <h2 id="dist-split">Where each rank's step goes (average per step)</h2>
        <Legend items={SPLIT_PARTS.map((p) => ({ label: p.label, color: p.color, kind: "bar" as const }))} />
        <div class={sides.length > 1 ? "grid2" : undefined}>
          {sides.map((s) => (
            <div class="card" key={s.side} data-chart={`ranks-${s.side}`}>
              <div class="chart-title">
                <h3>
                  <span class={`swatch ${s.side}`} /> {SIDE_TITLE[s.side]}: {s.ranks.run}
                </h3>
                {s.ranks.median_step_time_us !== null && <span class="chart-note">median rank {formatMsWithUnit(s.ranks.median_step_time_us)}</span>}
              </div>
              <RankChart ranks={s.ranks.ranks} slowest={s.ranks.slowest?.rank ?? null} yMax={yMax} title={SIDE_TITLE[s.side]} />
            </div>
          ))}
        </div>
      </section>
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
