/**
 * The explanation at the top of the Overview: one sentence, the waterfall
 * from the baseline's step time to the experimental's, and the leading
 * contributors with their significance marks. Fetches diff/explain itself,
 * so the Overview only places it.
 */
import { useMemo } from "preact/hooks";
import type uPlot from "uplot";
import type { ApiClient, DiffExplainResponse, DiffSelection } from "../api";
import {
  type ExplainPipeline,
  inputBoundText,
  perUnitText,
  type Significance,
  shortLabel,
  significanceMark,
  stageText,
  waterfallData,
  waterfallRange,
} from "../model/explain";
import { formatMs, formatSignedMs } from "../model/format";
import { DeltaText } from "./Delta";
import { useRequest } from "../useRequest";
import { BETTER_COLOR, BASELINE_COLOR, WORSE_COLOR, indexAxis, msAxis } from "./chartKit";
import { Loading } from "./Loading";
import { ErrorMessage } from "./Message";
import { NoteText } from "./NoteText";
import { UPlotChart } from "./UPlotChart";

const CONTRIBUTORS_SHOWN = 5;

/** A delta's significance mark: a symbol with its meaning as text (title and screen readers). */
export function SignificanceMark({ sig }: { sig: Significance | null | undefined }) {
  const mark = significanceMark(sig);
  if (!mark) return null;
  return (
    <span class={`sigmark ${mark.cls}`} title={mark.label} data-verdict={sig?.verdict}>
      <span aria-hidden="true">{mark.symbol}</span>
      <span class="sr-only">{mark.label}</span>
    </span>
  );
}

export function Explanation({ client, sel, reloadToken }: { client: ApiClient; sel: DiffSelection; reloadToken: number }) {
  const req = useRequest<DiffExplainResponse>(
    (opts) => client.diffExplain(sel, opts),
    [client, sel.baseline, sel.bWorker, sel.bSpan, sel.experimental, sel.eWorker, sel.eSpan, sel.bSamples, sel.eSamples, sel.bTokens, sel.eTokens, reloadToken],
  );
  if (req.state === "loading" || req.state === "idle") return <Loading what="the explanation" waitingFor={req.state === "loading" ? req.waitingFor : null} />;
  if (req.state === "error") return <ErrorMessage error={req.error} what="the explanation" />;
  const ex = req.data;
  const perUnit = perUnitText(ex.step);
  return (
    <section class="card explanation" aria-labelledby="ov-why" data-testid="explanation">
      <h2 id="ov-why">Why</h2>
      <p class="sentence" data-testid="explanation-sentence" data-unit={ex.step.unit}>
        {ex.sentence}
      </p>
      {perUnit && (
        <p class="note" data-testid="explanation-unit">
          {perUnit}
        </p>
      )}
      {ex.conclusive && (
        <p class="note" data-testid="explanation-conclusive" data-reason={ex.conclusive.reason}>
          <strong>What would settle it:</strong> {ex.conclusive.text}
        </p>
      )}
      {ex.note && (
        <p class="note">
          <NoteText text={ex.note} />
        </p>
      )}
      <p class="note" data-testid="explanation-noise" data-noise={ex.noise.source}>
        {ex.noise.source === "measured" ? (
          <>Noise bands: {ex.noise.note}.</>
        ) : (
          <>
            Noise bands: each run's step-to-step spread and level drift, and ±{ex.between_run_pct} % assumed between
            two recordings of one configuration (<code>TB_PIPELINE_BETWEEN_RUN_PCT</code>; record groups with{" "}
            <code>tb-pipeline record --repeat 3</code> to measure it).
          </>
        )}
      </p>
      <div class="grid2">
        <Waterfall ex={ex} />
        <table class="contributors" data-clock={ex.clock}>
          <caption class="sr-only">Contributors to the step-time delta, on {ex.clock} time</caption>
          <thead>
            <tr>
              <th scope="col">Contributor</th>
              <th scope="col" class="num" title={ex.clock === "device" ? "Device time per step: each kernel, memcpy and memset counts for the operator that launched it" : "Host time per step"}>
                Δ {ex.clock} time per {ex.step.unit} (ms)
              </th>
              <th scope="col" class="num">
                Share
              </th>
            </tr>
          </thead>
          <tbody>
            {ex.contributors.slice(0, CONTRIBUTORS_SHOWN).map((c) => (
              <tr key={`${c.kind}:${c.key}`} data-kind={c.kind}>
                <td title={c.key}>
                  {c.name}
                  {c.compiled && (
                    <span class="chip" title={`torch.compile ran this module in ${c.compiled === "both" ? "both runs" : `the ${c.compiled} run`}: the other run's submodules are rolled up into it`}>
                      compiled
                    </span>
                  )}
                  {c.top_operator && <TopOperatorLine op={c.top_operator} />}
                </td>
                <td class="num">
                  {formatSignedMs(c.delta_us)} <SignificanceMark sig={c.significance} />
                </td>
                <td class="num">{c.share_pct === null ? "—" : `${c.share_pct.toFixed(0)} %`}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {ex.pipeline && <PipelinePart part={ex.pipeline} />}
    </section>
  );
}

/** Inside a module contributor on device time: the operator that changed most, and its kernels before → after. */
function TopOperatorLine({ op }: { op: NonNullable<DiffExplainResponse["contributors"][number]["top_operator"]> }) {
  const kernels = (names: string[]) => (names.length ? names[0] : "none");
  return (
    <div class="muted small" data-testid="top-operator">
      mostly {op.name} ({formatSignedMs(op.delta_us)} ms):{" "}
      <span title={op.baseline_kernels.join("\n")}>{kernels(op.baseline_kernel_short_names)}</span> →{" "}
      <span title={op.experimental_kernels.join("\n")}>{kernels(op.experimental_kernel_short_names)}</span>
    </div>
  );
}

/** What both runs' recorded pipeline statistics add: data wait per step, input-bound verdicts, the stage that changed most. */
function PipelinePart({ part }: { part: ExplainPipeline }) {
  const w = part.data_wait;
  return (
    <div class="pipeline-part" data-testid="explanation-pipeline">
      <h3>Pipeline statistics</h3>
      <table class="kv">
        <tbody>
          <tr data-row="data-wait">
            <th scope="row">Data wait per step (ms)</th>
            <td>
              {formatMs(w.baseline_us)} → {formatMs(w.experimental_us)}{" "}
              <DeltaText value={w.delta_us} text={formatSignedMs(w.delta_us)} /> <SignificanceMark sig={w.significance} />
            </td>
          </tr>
          <tr data-row="input-bound">
            <th scope="row">Input-bound</th>
            <td>
              {inputBoundText(part.input_bound)}
              {part.input_bound.changed && <> <span class="badge changed">changed</span></>}
            </td>
          </tr>
          {part.stage && (
            <tr data-row="stage">
              <th scope="row">Stage that changed most</th>
              <td>{stageText(part.stage)}</td>
            </tr>
          )}
        </tbody>
      </table>
    </div>
  );
}

function Waterfall({ ex }: { ex: DiffExplainResponse }) {
  const d = useMemo(() => waterfallData(ex.waterfall), [ex]);
  const data = useMemo<uPlot.AlignedData>(() => [d.labels.map((_, i) => i), d.highs, d.lows], [d]);
  const options = useMemo<Omit<uPlot.Options, "width" | "height">>(() => {
    const colour = (i: number) => (d.kinds[i] === "total" ? BASELINE_COLOR : d.kinds[i] === "up" ? WORSE_COLOR : BETTER_COLOR);
    return {
      scales: { x: { time: false, range: [-0.5, d.labels.length - 0.5] }, y: { range: () => waterfallRange(d) } },
      axes: [indexAxis("", (i) => shortLabel(d.labels[i] ?? ""), 30, d.labels.map((_, i) => i)), msAxis("ms per step")],
      series: [{}, { label: "to", paths: () => null, points: { show: false } }, { label: "from", paths: () => null, points: { show: false } }],
      hooks: {
        draw: [
          (u: uPlot) => {
            const ctx = u.ctx;
            const w = (u.valToPos(1, "x", true) - u.valToPos(0, "x", true)) * 0.6;
            for (let i = 0; i < d.labels.length; i++) {
              const x = u.valToPos(i, "x", true) - w / 2;
              const top = u.valToPos(d.highs[i] ?? 0, "y", true);
              const bottom = u.valToPos(d.lows[i] ?? 0, "y", true);
              ctx.fillStyle = colour(i);
              // Within noise: drawn lighter, the label and tooltip say so.
              ctx.globalAlpha = d.verdicts[i] === "significant" || d.kinds[i] === "total" ? 0.9 : 0.35;
              ctx.fillRect(x, top, w, Math.max(1, bottom - top));
            }
            ctx.globalAlpha = 1;
          },
        ],
      },
    };
  }, [d]);
  return (
    <UPlotChart
      options={options}
      data={data}
      height={260}
      label="Waterfall from the baseline's mean step time through each contributor's change to the experimental's"
      tooltip={(i) => {
        const hi = d.highs[i] ?? 0;
        const lo = d.lows[i] ?? 0;
        return (
        <div>
          <strong>{d.labels[i]}</strong>
          <div>
            {d.kinds[i] === "total" ? `${hi.toFixed(2)} ms per step` : `${d.kinds[i] === "up" ? "+" : "−"}${(hi - lo).toFixed(2)} ms per step`}
          </div>
          {d.verdictLabels[i] && <div>{d.verdictLabels[i]}</div>}
        </div>
        );
      }}
    />
  );
}
