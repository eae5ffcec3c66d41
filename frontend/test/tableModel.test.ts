import { describe, expect, it } from "vitest";
import type { DiffOperatorRow, DiffTableRow } from "../src/api";
import {
  buildColumns,
  cellText,
  csvDataUrl,
  defaultSort,
  field,
  filteredTable,
  filterRows,
  informativeMetrics,
  inputShape,
  needsServerFilter,
  nextSort,
  pctKey,
  sortRows,
  toCsv,
  viewRows,
} from "../src/model/tableModel";
import { kernelRow, opRow } from "./fixtures";

const METRICS = ["calls", "host_self_us"];

function row(name: string, bCalls: number, eCalls: number, bSelf: number, eSelf: number, shape: string | null = null): DiffOperatorRow {
  return opRow(name, { calls: [bCalls, eCalls], host_self_us: [bSelf, eSelf] }, shape);
}

function sample(): DiffOperatorRow[] {
  return (
    [
      row("aten::linear", 10, 10, 100, 150, "[[32, 64]]"), // +50
      row("aten::relu", 10, 12, 300, 200), //               -100 (largest |delta|)
      row("aten::add_", 5, 5, 40, 40), //                      0
      row("aten::new_op", 0, 3, 0, 30), //                   +30, pct null (baseline 0)
      row("aten::gone", 4, 0, 70, 0), //                      -70, -100 %
    ]
  );
}

const names = (rows: readonly DiffTableRow[]) => rows.map((r) => r.name);

describe("server deltas", () => {
  it("shows the server's delta % as sent, never a recomputed one", () => {
    // A percentage no client-side formula would give from these sides.
    const r = { ...row("aten::odd", 10, 10, 100, 150), delta_host_self_pct: 7 };
    const col = buildColumns(METRICS, false).find((c) => c.key === "delta_host_self_pct")!;
    expect(cellText(r, col)).toBe("+7.0 %");
    const sorted = sortRows([r, row("aten::b", 1, 1, 100, 120)], { key: "delta_host_self_pct", dir: "desc" });
    expect(names(sorted)).toEqual(["aten::b", "aten::odd"]); // 20 % > 7 %
  });
  it("reads kernel rows, which have no input shape", () => {
    const k = kernelRow("gemm", [2, 3], [100, 90]);
    expect(inputShape(k)).toBeNull();
    expect(field(k, "delta_total_pct")).toBeCloseTo(-10, 9);
    expect(names(filterRows([k], "GEMM"))).toEqual(["gemm"]);
  });
  it("names a metric's delta % as the server does", () => {
    expect(pctKey("host_self_us")).toBe("delta_host_self_pct");
    expect(pctKey("calls")).toBe("delta_calls_pct");
    expect(pctKey("per_step_s")).toBe("delta_per_step_pct");
    expect(pctKey("qps")).toBe("delta_qps_pct");
    expect(pctKey("busy_pct")).toBe("delta_busy_rel_pct");
  });
});

describe("default order", () => {
  it("puts the largest absolute delta of the primary duration first", () => {
    const sorted = sortRows(sample(), defaultSort("host_self_us"));
    expect(names(sorted)).toEqual(["aten::relu", "aten::gone", "aten::linear", "aten::new_op", "aten::add_"]);
    expect(defaultSort("device_self_us")).toEqual({ key: "delta_device_self_us", dir: "desc" });
  });
  it("reverses to the smallest magnitude first when ascending", () => {
    const sorted = sortRows(sample(), { key: "delta_host_self_us", dir: "asc" });
    expect(names(sorted)[0]).toBe("aten::add_");
    expect(names(sorted)[4]).toBe("aten::relu");
  });
});

describe("sort", () => {
  it("sorts plain values by value both ways", () => {
    const desc = sortRows(sample(), { key: "baseline_host_self_us", dir: "desc" });
    expect(names(desc)).toEqual(["aten::relu", "aten::linear", "aten::gone", "aten::add_", "aten::new_op"]);
    const asc = sortRows(sample(), { key: "baseline_host_self_us", dir: "asc" });
    expect(names(asc)).toEqual([...names(desc)].reverse());
  });
  it("sorts names as text", () => {
    expect(names(sortRows(sample(), { key: "name", dir: "asc" }))).toEqual([
      "aten::add_",
      "aten::gone",
      "aten::linear",
      "aten::new_op",
      "aten::relu",
    ]);
  });
  it("puts null percentages last in both directions", () => {
    for (const dir of ["asc", "desc"] as const) {
      const sorted = sortRows(sample(), { key: "delta_host_self_pct", dir });
      expect(sorted[sorted.length - 1]!.name).toBe("aten::new_op");
    }
    const desc = sortRows(sample(), { key: "delta_host_self_pct", dir: "desc" });
    expect(desc[0]!.name).toBe("aten::linear"); // +50 %
  });
  it("breaks ties by name so the order is stable", () => {
    const rows = [row("b", 1, 1, 5, 5), row("a", 1, 1, 5, 5), row("c", 1, 1, 5, 5)];
    expect(names(sortRows(rows, { key: "delta_host_self_us", dir: "desc" }))).toEqual(["a", "b", "c"]);
  });
  it("does not mutate its input", () => {
    const rows = sample();
    const before = names(rows);
    sortRows(rows, { key: "name", dir: "desc" });
    expect(names(rows)).toEqual(before);
  });
  it("toggles the same column and starts a new one descending (ascending for text)", () => {
    const s = { key: "delta_calls", dir: "desc" as const };
    expect(nextSort(s, "delta_calls")).toEqual({ key: "delta_calls", dir: "asc" });
    expect(nextSort({ key: "delta_calls", dir: "asc" }, "delta_calls")).toEqual({ key: "delta_calls", dir: "desc" });
    expect(nextSort(s, "baseline_calls")).toEqual({ key: "baseline_calls", dir: "desc" });
    expect(nextSort(s, "name")).toEqual({ key: "name", dir: "asc" });
  });
  it("sorts 10,000 rows quickly", () => {
    const rows: DiffOperatorRow[] = [];
    for (let i = 0; i < 10_000; i++) rows.push(row(`op_${i}`, i % 7, (i * 3) % 11, (i * 37) % 1000, (i * 91) % 1000));
    const t0 = performance.now();
    const sorted = sortRows(rows, defaultSort("host_self_us"));
    expect(performance.now() - t0).toBeLessThan(200);
    for (let i = 1; i < sorted.length; i++) {
      expect(Math.abs(field(sorted[i - 1]!, "delta_host_self_us") as number)).toBeGreaterThanOrEqual(Math.abs(field(sorted[i]!, "delta_host_self_us") as number));
    }
  });
});

describe("filter", () => {
  it("is a case-insensitive substring, not a regex", () => {
    expect(names(filterRows(sample(), "LINEAR"))).toEqual(["aten::linear"]);
    expect(filterRows(sample(), ".*")).toEqual([]);
    expect(names(filterRows(sample(), "aten::"))).toHaveLength(5);
  });
  it("matches the input shape too and ignores surrounding blanks", () => {
    expect(names(filterRows(sample(), " [[32 "))).toEqual(["aten::linear"]);
  });
  it("returns everything for an empty filter", () => {
    expect(filterRows(sample(), "")).toHaveLength(5);
  });
  it("combines with sorting", () => {
    expect(names(viewRows(sample(), "o", defaultSort("host_self_us")))).toEqual(["aten::gone", "aten::new_op"]);
  });
});

describe("columns and cells", () => {
  it("has four columns per metric plus the name (and shape when grouped)", () => {
    const cols = buildColumns(METRICS, false);
    expect(cols.map((c) => c.key)).toEqual([
      "name",
      "baseline_calls",
      "experimental_calls",
      "delta_calls",
      "delta_calls_pct",
      "baseline_host_self_us",
      "experimental_host_self_us",
      "delta_host_self_us",
      "delta_host_self_pct",
    ]);
    expect(buildColumns(METRICS, true)[1]!.key).toBe("input_shape");
  });
  it("formats durations in ms and deltas with a sign", () => {
    const cols = buildColumns(METRICS, false);
    const relu = sample().find((r) => r.name === "aten::relu")!;
    const text = (key: string) => cellText(relu, cols.find((c) => c.key === key)!);
    expect(text("baseline_host_self_us")).toBe("0.300");
    expect(text("delta_host_self_us")).toBe("−0.100");
    expect(text("delta_host_self_pct")).toBe("−33.3 %");
    expect(text("delta_calls")).toBe("+2");
    expect(text("delta_calls_pct")).toBe("+20.0 %");
    const newOp = sample().find((r) => r.name === "aten::new_op")!;
    expect(cellText(newOp, cols.find((c) => c.key === "delta_host_self_pct")!)).toBe("—");
  });
});

describe("CSV", () => {
  it("has a header, raw numbers with durations in ms, and RFC 4180 quoting", () => {
    const cols = buildColumns(["calls", "host_self_us"], true);
    const rows = [row('say "hi", twice', 1, 2, 1500, 1000, "[[1, 2]]")];
    const lines = toCsv(rows, cols).trimEnd().split("\r\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toBe(
      "Name,Input shape,\"Calls, baseline\",\"Calls, experimental\",\"Calls, delta (experimental − baseline)\",\"Calls, delta %\"," +
        "\"Host self (ms), baseline\",\"Host self (ms), experimental\",\"Host self (ms), delta (experimental − baseline)\",\"Host self, delta %\"",
    );
    expect(lines[1]).toBe('"say ""hi"", twice","[[1, 2]]",1,2,1,100,1.5,1,-0.5,-33.333333333333336');
  });
  it("leaves undefined percentages empty", () => {
    const cols = buildColumns(["calls"], false);
    const rows = [row("x", 0, 3, 0, 0)];
    expect(toCsv(rows, cols).split("\r\n")[1]).toBe("x,0,3,3,");
  });
  it("keeps names that look like formulas as text", () => {
    const cols = buildColumns([], false);
    expect(toCsv([row("=1+1", 0, 0, 0, 0), row("<img src=x onerror=alert(1)>", 0, 0, 0, 0)], cols).split("\r\n").slice(1, 3)).toEqual([
      "'=1+1",
      "<img src=x onerror=alert(1)>",
    ]);
  });
  it("exports the rows in the order shown", () => {
    const cols = buildColumns(METRICS, false);
    const csv = toCsv(viewRows(sample(), "", { key: "name", dir: "desc" }), cols);
    expect(csv.split("\r\n").slice(1, 6).map((l) => l.split(",")[0])).toEqual([
      "aten::relu",
      "aten::new_op",
      "aten::linear",
      "aten::gone",
      "aten::add_",
    ]);
  });
  it("is downloadable as a data: URL", () => {
    const url = csvDataUrl("a,b\r\n1,2\r\n");
    expect(url.startsWith("data:text/csv;charset=utf-8,")).toBe(true);
    expect(decodeURIComponent(url.slice(url.indexOf(",") + 1))).toBe("a,b\r\n1,2\r\n");
  });
});

describe("column order", () => {
  it("puts the primary metric's group first so the default sort column is in view", () => {
    const cols = buildColumns(["calls", "host_self_us", "device_self_us"], false, "device_self_us");
    expect(cols.slice(1, 6).map((c) => c.key)).toEqual([
      "baseline_device_self_us",
      "experimental_device_self_us",
      "delta_device_self_us",
      "delta_device_self_pct",
      "baseline_calls",
    ]);
  });
});

describe("informative metrics", () => {
  it("drops metrics that are zero on both sides everywhere, keeps calls", () => {
    const rows: DiffTableRow[] = [opRow("a", { host_self_us: [3, 0] })];
    expect(informativeMetrics(rows, ["calls", "host_self_us", "device_self_us"])).toEqual(["calls", "host_self_us"]);
  });
});

describe("tables cut at the server's row limit", () => {
  // The server has 7 rows; the client holds the 5 of `sample()` (largest change first).
  const far = [row("aten::linear_backward", 1, 1, 1, 1), row("aten::relu_", 1, 1, 2, 2)];

  it("sends the filter to the server only when the table is cut and a filter is set", () => {
    expect(needsServerFilter("relu", 7, 5)).toBe(true);
    expect(needsServerFilter("relu", 5, 5)).toBe(false); // complete: filter here
    expect(needsServerFilter("  ", 7, 5)).toBe(false);
    expect(needsServerFilter("", 7, 5)).toBe(false);
  });

  it("filters locally when the table is complete", () => {
    const t = filteredTable(sample(), 5, "RELU", { state: "none" });
    expect(names(t.rows)).toEqual(["aten::relu"]);
    expect(t.partial).toBe(false);
  });

  it("says an unfiltered cut table is partial", () => {
    const t = filteredTable(sample(), 7, "", { state: "none" });
    expect(t.rows).toHaveLength(5);
    expect(t.partial).toBe(true);
  });

  it("shows the local matches, marked partial, until the server answers or if it fails", () => {
    for (const server of [{ state: "pending" } as const, { state: "error", message: "HTTP 500" } as const]) {
      const t = filteredTable(sample(), 7, "relu", server);
      expect(names(t.rows)).toEqual(["aten::relu"]);
      expect(t.partial).toBe(true);
    }
  });

  it("merges the server's matches from outside the held rows, each row once", () => {
    const relu = sample().find((r) => r.name === "aten::relu")!;
    const server = { state: "ok" as const, rows: [{ ...relu }, far[1]!], total: 2 };
    const t = filteredTable(sample(), 7, "relu", server);
    expect(names(sortRows(t.rows, { key: "name", dir: "asc" }))).toEqual(["aten::relu", "aten::relu_"]);
    expect(t.partial).toBe(false);
  });

  it("keeps local input-shape matches the server (names only) does not return", () => {
    const t = filteredTable(sample(), 7, "[[32", { state: "ok", rows: [], total: 0 });
    expect(names(t.rows)).toEqual(["aten::linear"]);
    expect(t.partial).toBe(false);
  });

  it("is partial when the server's matches are cut too", () => {
    const t = filteredTable(sample(), 20_000, "aten", { state: "ok", rows: far, total: 15_000 });
    expect(t.rows).toHaveLength(7);
    expect(t.partial).toBe(true);
  });

  it("tells rows with the same name but another input shape apart", () => {
    const a = row("aten::mm", 1, 1, 1, 1, "[[1]]");
    const b = row("aten::mm", 1, 1, 1, 1, "[[2]]");
    const t = filteredTable([a], 3, "mm", { state: "ok", rows: [{ ...a }, b], total: 2 });
    expect(t.rows.map(inputShape)).toEqual(["[[1]]", "[[2]]"]);
  });
});

describe("rowSignificance", () => {
  it("reads the primary delta's significance of a diff-table row, null where absent", async () => {
    const { rowSignificance } = await import("../src/model/tableModel");
    const sig = { verdict: "significant" as const, delta: 5, ci_low: 2, ci_high: 8, baseline_steps: 5, experimental_steps: 5 };
    const row = { name: "aten::mm", significance: sig } as unknown as Parameters<typeof rowSignificance>[0];
    expect(rowSignificance(row)).toEqual(sig);
    const bare = { name: "stage" } as unknown as Parameters<typeof rowSignificance>[0];
    expect(rowSignificance(bare)).toBeNull();
  });
});
