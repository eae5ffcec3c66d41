/**
 * How each diff table is presented, keyed by the `table` id its answer
 * carries (DiffTableResponse["table"]). DiffTableView reads everything
 * table-specific from here, so a new diff table is a new entry (and its
 * contract Struct and tab), not a change to the view.
 */
import type { DiffTableKind } from "../api";

export interface DiffTablePresentation {
  /** Tab label. */
  tab: string;
  /** What is loading or failed to load ("the operator table"). */
  title: string;
  /** Plural of one row ("operators"). */
  noun: string;
  /** Accessible name of the table. */
  label: string;
  /** The route accepts `group_by=name_and_shape` (rows then carry `input_shape`). */
  canGroupByShape: boolean;
  /** Why a table is empty: inside the module-diff piece `pieceName`, or in the whole traces. */
  emptyText: (pieceName: string | null) => string;
}

export const DIFF_TABLES: Readonly<Record<DiffTableKind, DiffTablePresentation>> = {
  operators: {
    tab: "Operators",
    title: "the operator table",
    noun: "operators",
    label: "Operator comparison, baseline versus experimental",
    canGroupByShape: true,
    emptyText: (piece) => (piece ? `Neither run has operators inside “${piece}”.` : "Neither trace records any operators."),
  },
  kernels: {
    tab: "Kernels",
    title: "the kernel table",
    noun: "kernels",
    label: "Kernel comparison, baseline versus experimental",
    canGroupByShape: false,
    emptyText: (piece) =>
      `${piece ? `Neither run has kernels inside “${piece}”.` : "Neither trace records any kernels."} Kernels come from GPU activity; a CPU-only trace has none.`,
  },
};

export const DIFF_TABLE_KINDS = Object.keys(DIFF_TABLES) as DiffTableKind[];

/**
 * The group-by to ask for: by shape only where the table can and the user
 * asked; nothing for a table that cannot (its route rejects the parameter).
 */
export function groupByParam(table: DiffTableKind, byShape: boolean): "name" | "name_and_shape" | undefined {
  if (!DIFF_TABLES[table].canGroupByShape) return undefined;
  return byShape ? "name_and_shape" : "name";
}

/** File name of a CSV export: `<table>_<baseline>_vs_<experimental>.csv`, safe characters only. */
export function csvFileName(table: DiffTableKind, baseline: string, experimental: string): string {
  return `${table}_${baseline}_vs_${experimental}.csv`.replace(/[^\w.-]+/g, "_");
}
