/** The snapshot view's chart and segment table: both runs' allocated and reserved bytes over each
 * history (ms from its first action), peaks and ProfilerStep marks drawn; each run's largest segments. */
import { useMemo } from "preact/hooks";
import type uPlot from "uplot";
import { EM_DASH, formatBytes, formatMs, formatPct } from "../model/format";
import { segmentRows, snapshotChart, stepMarkLabel, thinFlat, type SnapshotDeviceDiff } from "../model/memorySnapshot";
import { BASELINE_COLOR, EXPERIMENTAL_COLOR, bytesAxis, msXAxis } from "./chartKit";
import { Legend, UPlotChart } from "./UPlotChart";

const COLOR = { baseline: BASELINE_COLOR, experimental: EXPERIMENTAL_COLOR } as const;

export function SnapshotChart({ d }: { d: SnapshotDeviceDiff }) {
  const chart = useMemo(() => snapshotChart(d), [d]);
  // Reserved is dashed: its flat runs thinned (the tooltip reads chart.data, every point).
  const data = useMemo(() => {
    const [xs, ba, br, ea, er] = chart.data;
    return [xs, ba, thinFlat(br), ea, thinFlat(er)] as unknown as uPlot.AlignedData;
  }, [chart]);
  const options = useMemo((): Omit<uPlot.Options, "width" | "height"> => {
    const draw = (u: uPlot) => {
      const ctx = u.ctx;
      const dpr = devicePixelRatio;
      ctx.save();
      ctx.font = `${10 * dpr}px Roboto, "Helvetica Neue", system-ui, sans-serif`;
      ctx.setLineDash([3 * dpr, 3 * dpr]);
      ctx.lineWidth = dpr;
      const lastLabel = { baseline: -Infinity, experimental: -Infinity };
      for (const m of chart.steps) {
        const x = u.valToPos(m.t_ms, "x", true);
        if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
        ctx.strokeStyle = COLOR[m.run] + "99";
        ctx.fillStyle = COLOR[m.run];
        ctx.beginPath();
        ctx.moveTo(x, u.bbox.top);
        ctx.lineTo(x, u.bbox.top + u.bbox.height);
        ctx.stroke();
        // Baseline's labels along the top, experimental's one line lower: both runs' marks stay legible.
        // A label that would overlap the run's previous one is left out (its line stays).
        if (x - lastLabel[m.run] < 28 * dpr) continue;
        lastLabel[m.run] = x;
        ctx.fillText(stepMarkLabel(m.step), x + 2 * dpr, u.bbox.top + (m.run === "baseline" ? 10 : 22) * dpr);
      }
      ctx.setLineDash([]);
      for (const p of chart.peaks) {
        ctx.fillStyle = COLOR[p.run];
        ctx.beginPath();
        ctx.arc(u.valToPos(p.t_ms, "x", true), u.valToPos(p.bytes, "y", true), 5 * dpr, 0, 2 * Math.PI);
        ctx.fill();
      }
      ctx.restore();
    };
    const line = (label: string, color: string, dash?: number[]): uPlot.Series => ({
      label,
      stroke: color,
      width: 1.5,
      spanGaps: false,
      ...(dash ? { dash, spanGaps: true } : {}),
    });
    return {
      scales: { x: { time: false }, y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.05 : 1] } },
      axes: [msXAxis("ms from the history's first action"), bytesAxis("bytes")],
      series: [
        {},
        line("baseline allocated", BASELINE_COLOR),
        line("baseline reserved", BASELINE_COLOR, [6, 4]),
        line("experimental allocated", EXPERIMENTAL_COLOR),
        line("experimental reserved", EXPERIMENTAL_COLOR, [6, 4]),
      ],
      hooks: { draw: [draw] },
    };
  }, [chart]);
  const at = (k: number, i: number) => formatBytes(chart.data[k]?.[i] ?? null);
  const tooltip = (i: number) => (
    <div>
      <div>{formatMs((chart.data[0][i] ?? 0) * 1000)} ms</div>
      <div>baseline {at(1, i)} allocated, {at(2, i)} reserved</div>
      <div>experimental {at(3, i)} allocated, {at(4, i)} reserved</div>
    </div>
  );
  const peak = (run: "baseline" | "experimental") => {
    const s = d[run];
    return s ? `peak ${formatBytes(s.peak_allocated_bytes)}${s.peak_step ? ` in ${s.peak_step}` : ""}` : "no snapshot";
  };
  return (
    <div data-testid="snapshot-chart">
      <Legend
        items={[
          { label: `baseline allocated (${peak("baseline")})`, color: BASELINE_COLOR, kind: "line" },
          { label: `baseline reserved (peak ${formatBytes(d.baseline?.peak_reserved_bytes)})`, color: BASELINE_COLOR, kind: "dashed" },
          { label: `experimental allocated (${peak("experimental")})`, color: EXPERIMENTAL_COLOR, kind: "line" },
          { label: `experimental reserved (peak ${formatBytes(d.experimental?.peak_reserved_bytes)})`, color: EXPERIMENTAL_COLOR, kind: "dashed" },
        ]}
      />
      <UPlotChart options={options} data={data} height={280} tooltip={tooltip} label="Allocated and reserved bytes of both runs over their snapshot histories, peaks and ProfilerStep marks drawn" />
      {chart.steps.length > 0 && <p class="muted small">Dashed verticals: ProfilerStep marks (#N), in each run's colour; dots: each run's peak allocated.</p>}
    </div>
  );
}

export function SegmentTable({ d }: { d: SnapshotDeviceDiff }) {
  const rows = segmentRows(d);
  if (rows.length === 0) return null;
  return (
    <table class="data-table" data-testid="snapshot-segments">
      <caption>Each run's largest segments when its snapshot was taken</caption>
      <thead>
        <tr><th>run</th><th>segment</th><th>size</th><th>allocated</th><th>free</th><th>used</th><th>blocks</th><th>pool</th><th>stream</th></tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr>
            <td style={{ color: COLOR[r.run] }}>{r.run}</td>
            <td><code>{r.address}</code></td>
            <td class="num">{formatBytes(r.total_bytes)}</td>
            <td class="num">{formatBytes(r.allocated_bytes)}</td>
            <td class="num">{formatBytes(r.free_bytes)}</td>
            <td class="num">{r.used === null ? EM_DASH : formatPct(r.used * 100, false)}</td>
            <td class="num">{r.blocks}</td>
            <td>{r.segment_type}</td>
            <td class="num">{r.stream}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
