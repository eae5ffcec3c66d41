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
import type { ApiClient, DiffSelection, DistributedResponse, RunInfo } from "../api";
import { DeltaText } from "../components/Delta";
import { Loading } from "../components/Loading";
import { ErrorMessage, Message } from "../components/Message";
import { SortedTable } from "../components/SortedTable";
import { DistributionSection, RankBarsSection, SIDE_TITLE } from "../components/RankCharts";
import {
  answerComplete,
  answerSides,
  BAR_RANKS_MAX,
  coverageNotes,
  distributedPlan,
  namedPercentileRows,
  percentileDeltaColumns,
  rankChartKind,
  rankProgress,
  ranksToRead,
  slowestRanks,
  namedRankDeltaRows,
  namedRankRows,
  rankCoverageNote,
  rankDeltaColumns,
  rankLabel,
  rankOrder,
  rankTableSort,
  runFacts,
  runNotes,
  runRankColumns,
  stragglerText,
  unmatchedRanks,
  type DistributedPlan,
  type Side,
  type NamedRanks,
} from "../model/distributed";
import { usePolledRequest } from "../useRequest";

interface Props {
  client: ApiClient;
  runs: RunInfo[];
  sel: DiffSelection;
  reloadToken: number;
}

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
  const kind = rankChartKind(Math.max(...sides.map((s) => ranksToRead(s.ranks))));
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
        <details data-testid="slowest-ranks" open={ranksToRead(r) > BAR_RANKS_MAX}>
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
