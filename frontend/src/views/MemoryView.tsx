/**
 * Memory: where the peak went (diff/memory). The sentence, both runs'
 * allocated curves over their peak step (aligned at the step start, peaks
 * marked), and the bytes alive at each peak by module or by operator; a
 * row's click highlights its blocks' lifetimes on the curves.
 */
import { useMemo, useState } from "preact/hooks";
import type uPlot from "uplot";
import type { ApiClient, DiffSelection } from "../api";
import { DeltaText } from "../components/Delta";
import { Loading } from "../components/Loading";
import { MemorySnapshot } from "../components/MemorySnapshot";
import { ErrorMessage, Message } from "../components/Message";
import { NoteText } from "../components/NoteText";
import { Legend, UPlotChart } from "../components/UPlotChart";
import { EM_DASH, formatBytes, formatMsWithUnit, formatPct } from "../model/format";
import { alignedCurves, lifetimeSpans, rowLabel, shownDevice, type MemoryDeviceDiff, type MemoryRow } from "../model/memory";
import { useRequest } from "../useRequest";
import { BASELINE_COLOR, EXPERIMENTAL_COLOR, bytesAxis, indexAxis } from "../components/chartKit";

interface Props {
  client: ApiClient;
  sel: DiffSelection;
  reloadToken: number;
}

type By = "module" | "operator";

export function MemoryView({ client, sel, reloadToken }: Props) {
  const req = useRequest(
    (opts) => client.diffMemory(sel, opts),
    [client, sel.baseline, sel.bWorker, sel.bSpan, sel.experimental, sel.eWorker, sel.eSpan, reloadToken],
  );
  const [device, setDevice] = useState("");
  const [by, setBy] = useState<By>("module");
  const [picked, setPicked] = useState<number | null>(null);
  if (req.state === "loading" || req.state === "idle") return <Loading what="the memory comparison" waitingFor={req.state === "loading" ? req.waitingFor : null} />;
  if (req.state === "error") return <ErrorMessage error={req.error} what="the memory comparison" />;
  const data = req.data;
  const snapshot = data.snapshot ? <MemorySnapshot snapshot={data.snapshot} /> : null;
  if (data.message) {
    return (
      <div data-view="memory">
        {snapshot}
        <div data-testid="memory-message">
          <Message kind="info" title={snapshot ? "No memory events in the traces" : "No memory to compare"}>
            <NoteText text={data.message} />
          </Message>
        </div>
      </div>
    );
  }
  const d = shownDevice(data, device);
  if (!d) return <Message kind="info" title="No memory to compare" />;
  const rows = by === "module" ? d.by_module : d.by_operator;
  const row = picked !== null ? rows[picked] ?? null : null;
  return (
    <div data-view="memory">
      {snapshot}
      {d.device === data.device && data.sentence && (
        <p class="explanation-sentence" data-testid="memory-sentence">
          {data.sentence}
        </p>
      )}
      <div class="toolbar">
        {data.devices.length > 1 && (
          <label>
            Device{" "}
            <select value={d.device} onChange={(e) => (setDevice((e.target as HTMLSelectElement).value), setPicked(null))} data-testid="memory-device">
              {data.devices.map((x) => (
                <option key={x.device} value={x.device}>
                  {x.device}
                </option>
              ))}
            </select>
          </label>
        )}{" "}
        <span class="muted small">
          Peak {formatBytes(d.baseline?.peak_bytes)} → {formatBytes(d.experimental?.peak_bytes)} (
          <DeltaText value={d.growth_bytes} text={`${formatBytes(d.growth_bytes, true)}, ${formatPct(d.growth_pct)}`} />)
          {d.basis === "net" && " · these traces record no block addresses: rows are net allocations since the peak's step began"}
        </span>
      </div>
      <section class="card" aria-labelledby="mem-curve">
        <h2 id="mem-curve">Allocated memory over each run's peak step</h2>
        <MemoryCurves d={d} row={row} />
      </section>
      {d.steps.length > 1 && (
        <section class="card" aria-labelledby="mem-steps">
          <h2 id="mem-steps">Peak of each step</h2>
          <StepPeaks d={d} />
        </section>
      )}
      <section class="card" aria-labelledby="mem-table">
        <h2 id="mem-table">Alive at the peak</h2>
        <div class="toolbar" role="radiogroup" aria-label="Group by">
          {(["module", "operator"] as const).map((b) => (
            <label key={b}>
              <input type="radio" name="mem-by" checked={by === b} onChange={() => (setBy(b), setPicked(null))} data-testid={`memory-by-${b}`} /> by {b}
            </label>
          ))}
        </div>
        <AttributionTable rows={rows} by={by} picked={picked} onPick={(i) => setPicked(i === picked ? null : i)} testid="memory-rows" />
        {d.steady_differs && (
          <>
            <h2>Steady state (average allocated over the steps)</h2>
            <AttributionTable rows={by === "module" ? d.steady_by_module : d.steady_by_operator} by={by} picked={null} onPick={() => undefined} testid="memory-steady" />
          </>
        )}
      </section>
    </div>
  );
}

function MemoryCurves({ d, row }: { d: MemoryDeviceDiff; row: MemoryRow | null }) {
  const data = useMemo(() => alignedCurves(d.baseline_curve, d.experimental_curve) as uPlot.AlignedData, [d]);
  const options = useMemo((): Omit<uPlot.Options, "width" | "height"> => {
    const marks = [
      { c: d.baseline_curve, color: BASELINE_COLOR, life: row?.baseline_lifetimes ?? [] },
      { c: d.experimental_curve, color: EXPERIMENTAL_COLOR, life: row?.experimental_lifetimes ?? [] },
    ].map(({ c, color, life }) => ({
      color,
      spans: c ? lifetimeSpans(life, c.duration_us) : [],
      peak: c ? ([c.peak_us / 1000, c.peak_bytes] as const) : null,
    }));
    const draw = (u: uPlot) => {
      const ctx = u.ctx;
      ctx.save();
      marks.forEach((m, side) => {
        ctx.fillStyle = m.color + "33";
        const h = u.bbox.height / 2;
        for (const [s, e] of m.spans) {
          const x0 = u.valToPos(s, "x", true);
          const x1 = Math.max(x0 + 2, u.valToPos(e, "x", true));
          ctx.fillRect(x0, u.bbox.top + side * h, x1 - x0, h);
        }
        if (m.peak) {
          ctx.fillStyle = m.color;
          ctx.beginPath();
          ctx.arc(u.valToPos(m.peak[0], "x", true), u.valToPos(m.peak[1], "y", true), 5 * devicePixelRatio, 0, 2 * Math.PI);
          ctx.fill();
        }
      });
      ctx.restore();
    };
    return {
      scales: { x: { time: false } },
      axes: [
        { label: "ms from the step start" },
        bytesAxis("allocated"),
      ],
      series: [
        {},
        { label: "baseline", stroke: BASELINE_COLOR, width: 1.5, paths: undefined, spanGaps: false },
        { label: "experimental", stroke: EXPERIMENTAL_COLOR, width: 1.5, spanGaps: false },
      ],
      hooks: { draw: [draw] },
    };
  }, [d, row]);
  const tooltip = (i: number) => (
    <div>
      <div>{formatMsWithUnit((data[0]?.[i] ?? 0) * 1000)}</div>
      <div>baseline {formatBytes(data[1]?.[i] as number | null)}</div>
      <div>experimental {formatBytes(data[2]?.[i] as number | null)}</div>
    </div>
  );
  return (
    <div data-testid="memory-chart">
      <Legend
        items={[
          { label: `baseline (${d.baseline_curve?.step ?? EM_DASH}, peak ${formatBytes(d.baseline?.peak_bytes)})`, color: BASELINE_COLOR, kind: "line" },
          { label: `experimental (${d.experimental_curve?.step ?? EM_DASH}, peak ${formatBytes(d.experimental?.peak_bytes)})`, color: EXPERIMENTAL_COLOR, kind: "line" },
        ]}
      />
      <UPlotChart options={options} data={data} height={260} tooltip={tooltip} label="Allocated bytes of both runs over their peak step, peaks marked" />
      {row && (
        <p class="muted small" data-testid="memory-highlight">
          Shaded: the lifetimes of {rowLabel(row)}'s blocks alive at each peak (baseline top half, experimental bottom half).
        </p>
      )}
    </div>
  );
}

function StepPeaks({ d }: { d: MemoryDeviceDiff }) {
  const data = useMemo(
    () => [d.steps.map((s) => s.index + 1), d.steps.map((s) => s.baseline_peak_bytes), d.steps.map((s) => s.experimental_peak_bytes)] as uPlot.AlignedData,
    [d],
  );
  const options = useMemo(
    (): Omit<uPlot.Options, "width" | "height"> => ({
      scales: { x: { time: false } },
      axes: [
        indexAxis("profiled step", (x) => `${x}`),
        bytesAxis("peak allocated"),
      ],
      series: [{}, { label: "baseline", stroke: BASELINE_COLOR, width: 1.5 }, { label: "experimental", stroke: EXPERIMENTAL_COLOR, width: 1.5 }],
    }),
    [],
  );
  const tooltip = (i: number) => {
    const s = d.steps[i];
    return s ? (
      <div>
        <div>
          {s.baseline_step ?? EM_DASH} / {s.experimental_step ?? EM_DASH}
        </div>
        <div>baseline {formatBytes(s.baseline_peak_bytes)}</div>
        <div>experimental {formatBytes(s.experimental_peak_bytes)}</div>
      </div>
    ) : null;
  };
  return (
    <div data-testid="memory-steps">
      <UPlotChart options={options} data={data} height={180} tooltip={tooltip} label="Each profiled step's peak allocated bytes, both runs" />
    </div>
  );
}

function AttributionTable(props: { rows: MemoryRow[]; by: By; picked: number | null; onPick: (i: number) => void; testid: string }) {
  const { rows, by, picked, onPick, testid } = props;
  return (
    <table class="data" data-testid={testid} aria-label={`Bytes alive at each peak by ${by}`}>
      <thead>
        <tr>
          <th>{by === "module" ? "Module / part" : "Operator"}</th>
          <th>{by === "module" ? "Largest operator" : "Part"}</th>
          <th class="num">Baseline</th>
          <th class="num">Experimental</th>
          <th class="num">Delta</th>
          <th class="num">Median lifetime</th>
          <th>Call path</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r, i) => (
          <tr key={`${r.key}\u0000${r.phase}`} class={i === picked ? "selected" : ""} onClick={() => onPick(i)} style={{ cursor: "pointer" }} aria-selected={i === picked}>
            <td class="text clip" title={rowLabel(r)}>
              {rowLabel(r)}
            </td>
            <td class="text clip" title={r.detail}>
              {r.detail}
            </td>
            <td class="num">{formatBytes(r.baseline_bytes)}</td>
            <td class="num">{formatBytes(r.experimental_bytes)}</td>
            <td class="num">
              <DeltaText value={r.delta_bytes} text={`${formatBytes(r.delta_bytes, true)}${r.delta_pct === null ? "" : ` (${formatPct(r.delta_pct)})`}`} />
            </td>
            <td class="num">{r.median_alive_us === null ? EM_DASH : formatMsWithUnit(r.median_alive_us)}</td>
            <td class="text clip small" title={r.call_path}>
              {r.call_path}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
