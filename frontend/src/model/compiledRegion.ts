/**
 * A compiled region of the module diff (diff/compiled_region.py): one run's torch.compile graph compared as
 * one piece with the eager pieces the other run ran in its place. Pure: the tooltip, the badge and the
 * kernel-family rows the Modules tab draws.
 */
import type { DiffPiece } from "../api";

export type CompiledRegion = NonNullable<DiffPiece["compiled_region"]>;

/** What each kernel family is, in words (analysis/kernel_names.py:kernel_family). */
const FAMILY_WORDS: Record<string, string> = {
  gemm: "GEMM / convolution",
  attention: "attention",
  triton_poi: "triton_poi (fused pointwise)",
  triton_red: "triton_red (fused reduction)",
  triton_per: "triton_per (fused persistent reduction)",
  triton_tem: "triton_tem (Inductor template)",
  triton: "other Triton",
  pointwise: "pointwise (eager)",
  reduction: "reduction (eager)",
  normalization: "normalization (eager)",
  copy: "copy / index (eager)",
  memcpy: "memcpy",
  memset: "memset",
  communication: "communication",
  other: "other",
};

export function familyLabel(family: string): string {
  return FAMILY_WORDS[family] ?? family;
}

/** The region's tooltip: the graphs by their hashes and the eager pieces they replaced. */
export function regionTitle(r: CompiledRegion): string {
  const other = r.side === "baseline" ? "experimental" : "baseline";
  const graphs = r.graphs.join("\n");
  return `${r.module}: the ${r.side} run's compiled graph${r.graphs.length > 1 ? "s" : ""}\n${graphs}\nagainst the ${other} run's eager ${r.eager_pieces.join(", ")}`;
}

/** A piece's name tooltip: a region's graphs, a graph call's own name (its hash), else the name. */
export function pieceTitle(p: Pick<DiffPiece, "name" | "baseline_name" | "experimental_name" | "compiled_region">, fallback: string): string {
  if (p.compiled_region) return regionTitle(p.compiled_region);
  const own = p.experimental_name ?? p.baseline_name;
  return own && own !== p.name && (p.baseline_name === null || p.experimental_name === null) ? own : fallback;
}

export interface FamilyRow {
  family: string;
  label: string;
  baseline_us: number;
  experimental_us: number;
  delta_us: number;
  kernels: string;
}

/** The region's device time by kernel family (µs), largest first; kernel launches "B → E". */
export function familyRows(r: CompiledRegion): FamilyRow[] {
  return [...r.kernel_families]
    .sort((a, b) => Math.max(b.baseline_us, b.experimental_us) - Math.max(a.baseline_us, a.experimental_us))
    .map((f) => ({
      family: f.family,
      label: familyLabel(f.family),
      baseline_us: f.baseline_us,
      experimental_us: f.experimental_us,
      delta_us: f.delta_us,
      kernels: `${f.baseline_kernels} → ${f.experimental_kernels}`,
    }));
}
