/**
 * A uPlot chart that follows its container's width, plus a tooltip with
 * exact values and click-to-select. uPlot draws on canvas; the tooltip and
 * legend are DOM so names stay text and stay readable.
 */
import type { ComponentChildren } from "preact";
import { useLayoutEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";

export interface UPlotChartProps {
  /** uPlot options without size (the component measures its container). */
  options: Omit<uPlot.Options, "width" | "height">;
  data: uPlot.AlignedData;
  height: number;
  /** Content of the tooltip for the data index under the cursor. */
  tooltip?: (idx: number) => ComponentChildren;
  /** Called with the data index of a click on the plot area. */
  onPick?: (idx: number) => void;
  /** Accessible description of what the chart shows. */
  label: string;
}

interface TipState {
  idx: number;
  left: number;
  top: number;
}

export function UPlotChart({ options, data, height, tooltip, onPick, label }: UPlotChartProps) {
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const [tip, setTip] = useState<TipState | null>(null);
  // Callbacks change every render; uPlot hooks read them through a ref so
  // the chart is not rebuilt for a new closure.
  const pickRef = useRef(onPick);
  pickRef.current = onPick;

  useLayoutEffect(() => {
    const el = host.current;
    if (!el) return;
    const width = Math.max(200, el.clientWidth);
    const opts: uPlot.Options = {
      ...options,
      width,
      height,
      legend: { show: false },
      hooks: {
        ...options.hooks,
        setCursor: [
          ...(options.hooks?.setCursor ?? []),
          (u: uPlot) => {
            const idx = u.cursor.idx;
            const left = u.cursor.left ?? -1;
            const top = u.cursor.top ?? -1;
            if (idx === null || idx === undefined || left < 0) setTip(null);
            else setTip({ idx, left: left + u.over.offsetLeft, top: top + u.over.offsetTop });
          },
        ],
        ready: [
          ...(options.hooks?.ready ?? []),
          (u: uPlot) => {
            u.over.addEventListener("click", () => {
              const idx = u.cursor.idx;
              if (idx !== null && idx !== undefined) pickRef.current?.(idx);
            });
            u.over.addEventListener("mouseleave", () => setTip(null));
          },
        ],
      },
    };
    const u = new uPlot(opts, data, el);
    plot.current = u;
    const ro = new ResizeObserver(() => {
      const w = Math.max(200, el.clientWidth);
      if (w !== u.width) u.setSize({ width: w, height });
    });
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
      plot.current = null;
      setTip(null);
    };
  }, [options, data, height]);

  const hostWidth = host.current?.clientWidth ?? 0;
  const content = tip && tooltip ? tooltip(tip.idx) : null;
  return (
    <div class="chart" role="img" aria-label={label}>
      <div ref={host} style={onPick ? { cursor: "pointer" } : undefined} />
      {content !== null && tip && (
        <div
          class="tooltip"
          style={{
            top: `${Math.max(0, tip.top - 10)}px`,
            // Flip to the left half of the cursor near the right edge.
            ...(tip.left > hostWidth / 2 ? { right: `${hostWidth - tip.left + 14}px` } : { left: `${tip.left + 14}px` }),
          }}
        >
          {content}
        </div>
      )}
    </div>
  );
}

export interface LegendItem {
  label: string;
  color: string;
  kind: "bar" | "line" | "dashed";
}

export function Legend({ items }: { items: LegendItem[] }) {
  return (
    <ul class="legend" style={{ listStyle: "none", padding: 0 }}>
      {items.map((it) => (
        <li class="item" key={it.label}>
          {it.kind === "bar" ? (
            <span class="bar" style={{ background: it.color }} />
          ) : (
            <span class={`line${it.kind === "dashed" ? " dashed" : ""}`} style={{ borderTopColor: it.color }} />
          )}
          {it.label}
        </li>
      ))}
    </ul>
  );
}

export interface ChartCardProps extends UPlotChartProps {
  /** Element id of the heading (the card is labelled by it). */
  id: string;
  /** `data-chart` hook for tests. */
  chart: string;
  title: string;
  legend: LegendItem[];
  /** Extra legend content under the series legend (e.g. shaded bands). */
  bandLegend?: ComponentChildren;
}

/** A titled card holding one chart and its legend. */
export function ChartCard({ id, chart, title, legend, bandLegend, ...plot }: ChartCardProps) {
  return (
    <section class="card" aria-labelledby={id} data-chart={chart}>
      <h2 id={id}>{title}</h2>
      <Legend items={legend} />
      {bandLegend}
      <UPlotChart {...plot} />
    </section>
  );
}
