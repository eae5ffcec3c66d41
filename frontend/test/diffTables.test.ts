import { describe, expect, it } from "vitest";
import type { DiffTableKind } from "../src/api";
import { csvFileName, DIFF_TABLE_KINDS, DIFF_TABLES, groupByParam } from "../src/model/diffTables";
import { VIEWS } from "../src/model/urlState";

describe("diff table registry", () => {
  it("has an entry per table id of the contract, each a tab", () => {
    const ids: DiffTableKind[] = ["operators", "kernels"];
    expect([...DIFF_TABLE_KINDS].sort()).toEqual([...ids].sort());
    for (const id of ids) expect(VIEWS).toContain(id);
  });
  it("asks for a group-by only where the route takes one", () => {
    expect(groupByParam("operators", true)).toBe("name_and_shape");
    expect(groupByParam("operators", false)).toBe("name");
    expect(groupByParam("kernels", true)).toBeUndefined();
  });
  it("explains an empty table, inside a piece or not", () => {
    expect(DIFF_TABLES.operators.emptyText("nn.Module: Net_0")).toBe("Neither run has operators inside “nn.Module: Net_0”.");
    expect(DIFF_TABLES.kernels.emptyText(null)).toMatch(/^Neither trace records any kernels\. .*CPU-only/);
  });
  it("names CSV files safely", () => {
    expect(csvFileName("kernels", "runs/a b", "c")).toBe("kernels_runs_a_b_vs_c.csv");
  });
});

describe("kernels grouped by what launched them", () => {
  it("asks for the grouping, shows the module and each run's largest kernel beside the operator", async () => {
    const { groupByParam, kernelCells, launchColumns } = await import("../src/model/diffTables");
    expect(groupByParam("kernels", false, "")).toBeUndefined();
    expect(groupByParam("kernels", true, "operator")).toBe("operator");
    expect(groupByParam("operators", true, "operator")).toBe("name_and_shape");
    expect(launchColumns("operator").map((c) => c.key)).toEqual(["module", "baseline_kernel", "experimental_kernel"]);
    expect(launchColumns("module").map((c) => c.key)).toEqual(["baseline_kernel", "experimental_kernel"]);
    const full = "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x256_8x4_nn_align1>(cutlass_80_simt_sgemm_128x256_8x4_nn_align1::Params)";
    const row = {
      baseline_kernels: [{ name: full, short_name: "cutlass::Kernel2<sgemm_128x256_8x4_nn>" }],
      experimental_kernels: [{ name: "nvjet_sm90_tst" }, { name: "x" }],
    };
    expect(kernelCells(row)).toEqual({
      baseline_kernel: full,
      experimental_kernel: "nvjet_sm90_tst",
      baseline_kernel_short: "cutlass::Kernel2<sgemm_128x256_8x4_nn>",
      experimental_kernel_short: "nvjet_sm90_tst",
    });
    expect(kernelCells({ baseline_kernels: [], experimental_kernels: null })).toEqual({
      baseline_kernel: "none",
      experimental_kernel: "none",
      baseline_kernel_short: "none",
      experimental_kernel_short: "none",
    });
  });

  it("shows a kernel's short name, its full name in the tooltip and the CSV", async () => {
    const { buildColumns, cellText, cellFullText, toCsv } = await import("../src/model/tableModel");
    const cols = buildColumns(["total_us"], false, "total_us");
    const full = "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x256_8x4_nn_align1>(cutlass_80_simt_sgemm_128x256_8x4_nn_align1::Params)";
    const row = { name: full, short_name: "cutlass::Kernel2<sgemm_128x256_8x4_nn>", baseline_total_us: 1, experimental_total_us: 2, delta_total_us: 1, delta_total_pct: 100 };
    const name = cols[0]!;
    expect(cellText(row as never, name)).toBe("cutlass::Kernel2<sgemm_128x256_8x4_nn>");
    expect(cellFullText(row as never, name)).toBe(full);
    expect(toCsv([row as never], cols).split("\r\n")[1]!.startsWith(`"${full}"`) || toCsv([row as never], cols).includes(full)).toBe(true);
    const operator = { name: "aten::mm", short_name: null, baseline_total_us: 1, experimental_total_us: 1, delta_total_us: 0, delta_total_pct: 0 };
    expect(cellText(operator as never, name)).toBe("aten::mm");
  });
});
