/** A titled card holding a delta table that sorts locally (header clicks), with its empty state in words. */
import { useMemo, useState } from "preact/hooks";
import { nextSort, sortRows, type Column, type SortSpec, type TableRow } from "../model/tableModel";
import { VirtualTable } from "./VirtualTable";

export interface SortedTableProps<R extends TableRow> {
  title: string;
  /** Accessible name of the table. */
  label: string;
  testId: string;
  rows: R[];
  columns: Column[];
  /** The order before any header click. */
  initialSort: SortSpec;
  /** Why the table is empty. */
  empty: string;
  /** How names sort when their text would sort wrong (see sortRows). */
  nameOrder?: (row: R) => string;
  /** The column whose cells carry the row's `significance` mark (see VirtualTable). */
  markKey?: string;
  /** Words under the table (what its "—" cells mean), when there is something to say. */
  note?: string | null;
}

export function SortedTable<R extends TableRow>({ title, label, testId, rows, columns, initialSort, empty, nameOrder, markKey, note }: SortedTableProps<R>) {
  const [sort, setSort] = useState<SortSpec>(initialSort);
  const sorted = useMemo(() => sortRows(rows, sort, nameOrder), [rows, sort, nameOrder]);
  return (
    <section class="card" aria-label={title} data-testid={testId}>
      <h2>{title}</h2>
      {rows.length === 0 ? (
        <p class="muted">{empty}</p>
      ) : (
        <VirtualTable columns={columns} rows={sorted} sort={sort} onSort={(k) => setSort((s) => nextSort(s, k))} label={label} height={Math.min(360, 26 * (rows.length + 3))} markKey={markKey} />
      )}
      {rows.length > 0 && note && (
        <p class="note" data-testid={`${testId}-note`}>
          {note}
        </p>
      )}
    </section>
  );
}
