/**
 * The delta table: a real <table> (screen readers, copy/paste) whose body
 * is virtualised with @tanstack/virtual-core — only the rows in view (plus
 * a few) are in the DOM, spacer rows stand in for the rest, so 10k rows
 * render and re-sort in milliseconds. Headers are focusable buttons-in-th
 * with aria-sort; Enter/Space sort like a click.
 */
import { elementScroll, observeElementOffset, observeElementRect, Virtualizer } from "@tanstack/virtual-core";
import { Fragment, type ComponentChildren, type TargetedKeyboardEvent } from "preact";
import { useLayoutEffect, useReducer, useRef } from "preact/hooks";
import { deltaArrow, deltaDirection } from "../model/format";
import { cellFullText, cellText, cellTitle, field, isDuration, metricLabel, metricPolarity, rowSignificance, type Column, type SortSpec, type TableRow } from "../model/tableModel";
import { SignificanceMark } from "./Explanation";

const ROW_H = 26;
const HEADER_H = 2 * ROW_H;
/**
 * Column widths in px. The name column takes whatever the others leave (at
 * least this much); wider tables scroll sideways, the name column staying.
 * A value holds "12,345.678" (ms, 3 decimals); Δ holds "−1,253.410 ▼ ●" (its
 * arrow, and the mark on the sorted column), Δ % "+1,135.0 % ▲": a cut Δ
 * ("−253.41…") hides the number the table is sorted by.
 */
const WIDTHS: Record<Column["role"], number> = {
  name: 220,
  shape: 190,
  wide_text: 300,
  baseline: 84,
  experimental: 84,
  delta: 112,
  delta_pct: 102,
};

// Right after the name: at the far right it would be scrolled out of view.
const EXTRA_W = 112;

export interface VirtualTableProps {
  columns: Column[];
  rows: TableRow[];
  sort: SortSpec;
  onSort: (key: string) => void;
  label: string;
  height?: number;
  /** Extra cell after each row's name (timeline links); not a column for sorting or CSV. */
  rowExtra?: (row: TableRow) => ComponentChildren;
  /** The column whose cells carry the row's `significance` mark (the primary delta). */
  markKey?: string;
}

export function VirtualTable({ columns, rows, sort, onSort, label, height = 520, rowExtra, markKey }: VirtualTableProps) {
  const scrollRef = useRef<HTMLDivElement>(null);
  const [, rerender] = useReducer((n: number) => n + 1, 0);
  const virt = useRef<Virtualizer<HTMLDivElement, HTMLTableRowElement> | null>(null);

  const options = {
    count: rows.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW_H,
    paddingStart: HEADER_H,
    overscan: 4,
    scrollToFn: elementScroll,
    observeElementRect,
    observeElementOffset,
    // Before the first layout the virtualiser does not know the viewport;
    // the fixed height lets the first paint already show a full page of rows.
    initialRect: { width: 0, height },
    onChange: () => rerender(0),
  };
  if (!virt.current) virt.current = new Virtualizer<HTMLDivElement, HTMLTableRowElement>(options);
  else virt.current.setOptions(options);
  const v = virt.current;

  useLayoutEffect(() => {
    const cleanup = v._didMount();
    v._willUpdate();
    return cleanup;
  }, []);
  useLayoutEffect(() => {
    v._willUpdate();
  });
  // A new sort or filter shows the top of the new order.
  const orderKey = `${sort.key}|${sort.dir}|${rows.length}`;
  const lastOrder = useRef(orderKey);
  useLayoutEffect(() => {
    if (lastOrder.current !== orderKey && scrollRef.current) scrollRef.current.scrollTop = 0;
    lastOrder.current = orderKey;
  }, [orderKey]);

  const items = v.getVirtualItems();
  const first = items[0];
  const last = items[items.length - 1];
  const padTop = first ? first.start - HEADER_H : 0;
  const padBottom = last ? v.getTotalSize() - last.end : 0;
  const minWidth = columns.reduce((w, c) => w + (c.width ?? WIDTHS[c.role]), 0) + (rowExtra ? EXTRA_W : 0);
  const span = columns.length + (rowExtra ? 1 : 0);

  // Group header: name/shape, then one group of 4 columns per metric.
  const groups: { label: string; span: number; cls: string }[] = [];
  for (const c of columns) {
    const g = c.metric ? (c.group ?? `${metricLabel(c.metric)}${isDuration(c.metric) ? " (ms)" : ""}`) : "";
    const prev = groups[groups.length - 1];
    if (c.metric && prev && prev.label === g) prev.span++;
    else groups.push({ label: g, span: 1, cls: c.role === "name" ? "c-name" : c.metric ? "first-of-group" : "" });
  }

  return (
    <div class="tbl-scroll" ref={scrollRef} style={{ height: `${height}px` }} tabIndex={-1}>
      <table class="vt" style={{ width: "100%", minWidth: `${minWidth}px` }} aria-label={label} aria-rowcount={rows.length + 2}>
        <colgroup>
          {columns.map((c) => (
            <Fragment key={c.key}>
              {/* No width on the name column: with a fixed layout it gets the rest of the table's width. */}
              <col style={c.role === "name" ? undefined : { width: `${WIDTHS[c.role]}px` }} />
              {rowExtra && c.role === "name" && <col style={{ width: `${EXTRA_W}px` }} />}
            </Fragment>
          ))}
        </colgroup>
        <thead>
          <tr class="groups" aria-rowindex={1}>
            {groups.map((g, i) => (
              <Fragment key={i}>
                <th colSpan={g.span} class={g.cls} scope="colgroup">
                  {g.label}
                </th>
                {rowExtra && i === 0 && <th class="c-extra" />}
              </Fragment>
            ))}
          </tr>
          <tr class="cols" aria-rowindex={2}>
            {columns.map((c, i) => (
              <Fragment key={c.key}>
                <HeaderCell col={c} sort={sort} onSort={onSort} firstOfGroup={c.role === "baseline" && i > 0} />
                {rowExtra && c.role === "name" && (
                  <th class="c-extra" scope="col" title="Open the trace in torch-tb-profiler's trace viewer: B baseline, E experimental">
                    Timeline
                  </th>
                )}
              </Fragment>
            ))}
          </tr>
        </thead>
        <tbody>
          {padTop > 0 && (
            <tr class="spacer" aria-hidden="true">
              <td colSpan={span} style={{ height: `${padTop}px` }} />
            </tr>
          )}
          {items.map((it) => {
            const row = rows[it.index];
            if (!row) return null;
            return (
              <tr key={it.key} aria-rowindex={it.index + 3}>
                {columns.map((c) => (
                  <Fragment key={c.key}>
                    <Cell row={row} col={c} mark={c.key === markKey} />
                    {rowExtra && c.role === "name" && <td class="c-extra">{rowExtra(row)}</td>}
                  </Fragment>
                ))}
              </tr>
            );
          })}
          {padBottom > 0 && (
            <tr class="spacer" aria-hidden="true">
              <td colSpan={span} style={{ height: `${padBottom}px` }} />
            </tr>
          )}
        </tbody>
      </table>
    </div>
  );
}

function HeaderCell({ col, sort, onSort, firstOfGroup }: { col: Column; sort: SortSpec; onSort: (k: string) => void; firstOfGroup: boolean }) {
  const active = sort.key === col.key;
  const ariaSort = active ? (sort.dir === "asc" ? "ascending" : "descending") : "none";
  const onKey = (e: TargetedKeyboardEvent<HTMLTableCellElement>) => {
    if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      onSort(col.key);
    }
  };
  const cls = [
    col.role === "name" ? "c-name" : col.role === "shape" || col.role === "wide_text" ? "c-shape" : "",
    active ? "sorted" : "",
    firstOfGroup ? "first-of-group" : "",
  ]
    .filter(Boolean)
    .join(" ");
  const magnitude = col.role === "delta" ? " (by magnitude)" : "";
  if (col.sortable === false)
    return (
      <th class={cls} scope="col" title={col.title} data-key={col.key}>
        {col.label}
      </th>
    );
  return (
    <th
      class={cls}
      scope="col"
      aria-sort={ariaSort}
      tabIndex={0}
      title={`${col.title}${magnitude} — click or press Enter to sort`}
      data-key={col.key}
      onClick={() => onSort(col.key)}
      onKeyDown={onKey}
    >
      {col.label}
      <span class="sort-ind" aria-hidden="true">
        {active ? (sort.dir === "asc" ? "▲" : "▼") : ""}
      </span>
    </th>
  );
}

function Cell({ row, col, mark }: { row: TableRow; col: Column; mark: boolean }) {
  const text = cellText(row, col);
  if (col.role === "name" || col.role === "shape" || col.role === "wide_text") {
    // Names from traces are text nodes (never HTML); the title shows long names in full (a kernel's whole
    // signature where the cell shows its short name).
    return (
      <td class={col.role === "name" ? "c-name" : "c-shape"} title={cellFullText(row, col) || text}>
        {text}
      </td>
    );
  }
  const cls = col.role === "baseline" ? "first-of-group" : "";
  // The full value on hover (a cell can be cut by its width) with what it is.
  const title = cellTitle(row, col);
  if (col.role === "delta" || col.role === "delta_pct") {
    const v = field(row, col.key);
    const num = typeof v === "number" ? v : null;
    // More calls is not "slower": counts get arrows but no red/green; more items/s is better.
    const polarity = col.metric ? metricPolarity(col.metric) : "lower";
    const dir = polarity === "neutral" ? (num === null ? "none" : "same") : polarity === "higher" ? deltaDirection(num === null ? null : -num) : deltaDirection(num);
    const arrow = deltaArrow(num);
    return (
      <td class={`delta ${dir}`} title={title}>
        {text}
        {arrow && (
          <span class="arrow" aria-hidden="true">
            {arrow}
          </span>
        )}
        {mark && <SignificanceMark sig={rowSignificance(row)} />}
      </td>
    );
  }
  return (
    <td class={cls} title={title}>
      {text}
    </td>
  );
}
