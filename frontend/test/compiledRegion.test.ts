import { describe, expect, it } from "vitest";
import { familyLabel, familyRows, pieceTitle, regionTitle, type CompiledRegion } from "../src/model/compiledRegion";

// The H200 compile pair's LM_0 region, as diff/modules answers it (tests/diff/test_compiled_region.py).
const REGION: CompiledRegion = {
  module: "LM_0",
  side: "experimental",
  graphs: ["## Call CompiledFxGraph fzobrf5ywqngz3425murwwbkwmuwqx2dgtwyfvxhywdw7xzaep3w ##"],
  graph_ids: ["fzobrf5ywqngz3425murwwbkwmuwqx2dgtwyfvxhywdw7xzaep3w"],
  eager_pieces: ["Embedding_0", "Sequential_0", "Linear_16"],
  kernel_families: [
    { family: "gemm", baseline_us: 43744.249, experimental_us: 43587.65, delta_us: -156.599, baseline_kernels: 33, experimental_kernels: 33 },
    { family: "triton_poi", baseline_us: 0, experimental_us: 1462.08, delta_us: 1462.08, baseline_kernels: 0, experimental_kernels: 49 },
    { family: "pointwise", baseline_us: 1540.352, experimental_us: 0, delta_us: -1540.352, baseline_kernels: 32, experimental_kernels: 0 },
  ],
};

describe("compiled region", () => {
  it("names the graph by its module, its hash in the tooltip", () => {
    const title = regionTitle(REGION);
    expect(title).toContain("fzobrf5ywqngz3425murwwbkwmuwqx2dgtwyfvxhywdw7xzaep3w");
    expect(title).toContain("Embedding_0, Sequential_0, Linear_16");
    const piece = { name: "LM_0 (compiled graph)", baseline_name: "LM_0 (eager: Embedding_0, Sequential_0, Linear_16)", experimental_name: "LM_0 (compiled graph)", compiled_region: REGION };
    expect(pieceTitle(piece, "x")).toBe(title);
    // A graph call inside the region: its own name (the hash) on hover.
    const graph = { name: "LM_0 (compiled graph)", baseline_name: null, experimental_name: REGION.graphs[0]!, compiled_region: null };
    expect(pieceTitle(graph, "x")).toBe(REGION.graphs[0]);
    const plain = { name: "Linear_0", baseline_name: "Linear_0", experimental_name: "Linear_0", compiled_region: null };
    expect(pieceTitle(plain, "Linear_0")).toBe("Linear_0");
  });

  it("lists its kernels by fused-op family, largest first", () => {
    const rows = familyRows(REGION);
    expect(rows.map((r) => r.family)).toEqual(["gemm", "pointwise", "triton_poi"]);
    expect(rows[2]!.label).toBe("triton_poi (fused pointwise)");
    expect(rows[2]!.kernels).toBe("0 → 49");
    expect(familyLabel("triton_per")).toContain("persistent reduction");
    expect(familyLabel("something_new")).toBe("something_new");
  });
});
