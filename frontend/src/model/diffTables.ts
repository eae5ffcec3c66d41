/**
 * How each diff table is presented, keyed by the `table` id its answer
 * carries (DiffTableResponse["table"]). DiffTableView reads everything
 * table-specific from here, so a new diff table is a new entry (and its
 * contract Struct and tab), not a change to the view.
 */
import type { DiffTableGroupBy, DiffTableKind } from "../api";

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
export function groupByParam(table: DiffTableKind, byShape: boolean, launch: KernelGrouping = ""): DiffTableGroupBy | undefined {
  if (table === "kernels") return launch || undefined;
  if (!DIFF_TABLES[table].canGroupByShape) return undefined;
  return byShape ? "name_and_shape" : "name";
}

/** Kernels grouped by what launched them ("" = by kernel name). */
export type KernelGrouping = "" | "operator" | "module";

export const KERNEL_GROUPINGS: readonly { value: KernelGrouping; label: string; title: string }[] = [
  { value: "", label: "kernel name", title: "Kernels of both runs joined by name" },
  {
    value: "operator",
    label: "launching operator",
    title: "Device time by the operator that launched it and its module: the fp32 and bf16 GEMMs of one aten::addmm side by side",
  },
  {
    value: "module",
    label: "module",
    title: "Device time by module (a compiled module meets the other run's modules inside it)",
  },
];

/** Text columns a kernel table grouped by launch shows beside the name. */
export function launchColumns(groupBy: string): { key: string; label: string; title: string; wide: boolean; sortable?: boolean; display?: string }[] {
  // Made here from each row's kernel lists: not a field the route sorts by.
  const kernels = [
    { key: "baseline_kernel", label: "Baseline kernel", title: "The baseline run's largest kernel of the row", wide: true, sortable: false, display: "baseline_kernel_short" },
    { key: "experimental_kernel", label: "Experimental kernel", title: "The experimental run's largest kernel of the row", wide: true, sortable: false, display: "experimental_kernel_short" },
  ];
  return groupBy === "operator" ? [{ key: "module", label: "Module", title: "The operator's module path", wide: false }, ...kernels] : kernels;
}

type Listed = { name: string; short_name?: string }[] | null;

/**
 * A launch row's largest kernel on each side ("none" where a run ran none for it), as text cells: the full
 * name (tooltip, CSV) and the short name the cell shows.
 */
export function kernelCells(row: { baseline_kernels: Listed; experimental_kernels: Listed }): {
  baseline_kernel: string;
  experimental_kernel: string;
  baseline_kernel_short: string;
  experimental_kernel_short: string;
} {
  const first = (list: Listed) => (list && list.length ? list[0]!.name : "none");
  const short = (list: Listed) => (list && list.length ? (list[0]!.short_name ?? list[0]!.name) : "none");
  return {
    baseline_kernel: first(row.baseline_kernels),
    experimental_kernel: first(row.experimental_kernels),
    baseline_kernel_short: short(row.baseline_kernels),
    experimental_kernel_short: short(row.experimental_kernels),
  };
}

/** File name of a CSV export: `<table>_<baseline>_vs_<experimental>.csv`, safe characters only. */
export function csvFileName(table: DiffTableKind, baseline: string, experimental: string): string {
  return `${table}_${baseline}_vs_${experimental}.csv`.replace(/[^\w.-]+/g, "_");
}
