import { describe, expect, it } from "vitest";
import type { DiffOperatorRow, DiffTableRow } from "../src/api";
import { ApiClient, type DiffSelection } from "../src/api";
import { launchColumns } from "../src/model/diffTables";
import {
  askedSort,
  buildColumns,
  cellText,
  csvDataUrl,
  defaultSort,
  diffTableId,
  field,
  informativeMetrics,
  inputShape,
  isCut,
  nextSort,
  pctKey,
  sortRows,
  tableAsk,
  tableKeys,
  toCsv,
  type TableRow,
} from "../src/model/tableModel";
import { TABLE_SORT_KEYS } from "../src/generated/tableRules";
import { SORT_CASES, SORT_PROBE, SORT_PROBE_KEYS } from "../src/generated/sortCases";
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
    expect(tableKeys(diffTableId("kernels", undefined))).toEqual(["name"]); // the kernel route's key: the name alone
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
    expect(nextSort(s, "module", true)).toEqual({ key: "module", dir: "asc" }); // a text column beside the name
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

describe("filter: the server's (diff/tables.py:filter_mask), never a copy here", () => {
  it("asks the route with the filter as typed, less surrounding blanks", () => {
    expect(tableAsk("  LINEAR ", null, false)).toEqual({ filter: "LINEAR" });
    expect(tableAsk(".*", null, false)).toEqual({ filter: ".*" }); // the server reads it as text, not a regex
  });
  it("asks for every row when the filter is blank", () => {
    expect(tableAsk("", null, false)).toEqual({});
    expect(tableAsk("   ", null, false)).toEqual({});
  });
  it("puts the filter, sort and order in the request's query", async () => {
    const urls: string[] = [];
    const client = new ApiClient({
      fetch: (url) => {
        urls.push(String(url));
        return Promise.resolve(new Response(JSON.stringify({ rows: [] }), { status: 200 }));
      },
    });
    const sel: DiffSelection = { baseline: "b", experimental: "e" } as DiffSelection;
    await client.diffTable("operators", sel, { limit: 10_000, ...tableAsk(" [[32 ", { key: "name", dir: "asc" }, true), groupBy: "name_and_shape" });
    const q = new URL(urls[0]!, "http://x/").searchParams;
    expect(urls[0]!.startsWith("diff/operators?")).toBe(true);
    expect([q.get("filter"), q.get("sort"), q.get("order"), q.get("limit"), q.get("group_by")]).toEqual(["[[32", "name", "asc", "10000", "name_and_shape"]);
  });
  it("combines with the server's sort only when the server sorts", () => {
    const spec = { key: "delta_calls", dir: "asc" as const };
    expect(tableAsk("o", spec, true)).toEqual({ filter: "o", sort: "delta_calls", order: "asc" });
    expect(tableAsk("o", spec, false)).toEqual({ filter: "o" }); // held whole: sorted here
    expect(tableAsk("o", null, true)).toEqual({ filter: "o" }); // the server's default order
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
    const csv = toCsv(sortRows(sample(), { key: "name", dir: "desc" }), cols);
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
  it("knows a table is cut when the server has more rows than its answer", () => {
    expect(isCut({ total: 7, rows: sample() })).toBe(true);
    expect(isCut({ total: 5, rows: sample() })).toBe(false); // held whole: sorted here
    expect(isCut({ total: 0, rows: [] })).toBe(false);
  });

  it("asks the server to sort a cut table in the order shown", () => {
    expect(tableAsk("", { key: "baseline_calls", dir: "desc" }, true)).toEqual({ sort: "baseline_calls", order: "desc" });
    expect(tableAsk("", { key: "baseline_calls", dir: "desc" }, false)).toEqual({});
  });

  it("sends only a sort key the route accepts (a stale one from the URL would be a 400)", () => {
    expect(askedSort("operators:name", "delta_host_self_us", "asc")).toEqual({ key: "delta_host_self_us", dir: "asc" });
    expect(askedSort("kernels:name", "input_shape", "asc")).toBeNull();
    expect(askedSort("kernels:name", "delta_host_self_us", "desc")).toBeNull();
    expect(askedSort("operators:name", "", "desc")).toBeNull();
  });

  it("sorts a launch table by its module only where the module is a key", () => {
    expect(askedSort("kernels:operator", "module", "asc")).toEqual({ key: "module", dir: "asc" });
    expect(askedSort("kernels:module", "module", "asc")).toBeNull();
    expect(askedSort("kernels:operator", "baseline_kernel", "asc")).toBeNull(); // made here from the row's lists
  });

  it("names a diff table by its route and grouping", () => {
    expect(diffTableId("kernels", undefined)).toBe("kernels:name");
    expect(diffTableId("kernels", "")).toBe("kernels:name");
    expect(diffTableId("operators", "name_and_shape")).toBe("operators:name_and_shape");
    expect(tableKeys("operators:name_and_shape")).toEqual(["name", "input_shape"]);
    expect(tableKeys("no such table")).toEqual(["name"]);
  });

  it("offers every column it builds as one of the route's sort keys", () => {
    const cols = buildColumns(["calls", "host_self_us", "host_total_us", "device_self_us", "device_total_us"], true, "host_self_us");
    const keys = TABLE_SORT_KEYS["operators:name_and_shape"]!;
    expect(cols.filter((c) => !keys.includes(c.key))).toEqual([]);
  });

  it("does not sort by a column made here from a row's kernel lists", () => {
    const cols = buildColumns(["calls", "total_us"], launchColumns("operator"), "total_us");
    expect(cols.filter((c) => c.sortable === false).map((c) => c.key)).toEqual(["baseline_kernel", "experimental_kernel"]);
    expect(cols.find((c) => c.key === "module")!.sortable).toBeUndefined();
  });

  it("breaks ties of the name by the next key column, as the server does", () => {
    const a = row("aten::mm", 1, 1, 1, 1, "[[2]]");
    const b = row("aten::mm", 1, 1, 1, 1, "[[1]]");
    const sorted = sortRows([a, b], { key: "delta_host_self_us", dir: "desc" }, undefined, tableKeys("operators:name_and_shape"));
    expect(sorted.map(inputShape)).toEqual(["[[1]]", "[[2]]"]);
  });
});

describe("the sort of rows held whole is the server's (sortCases.ts: diff/tables.py:sort_table's own order)", () => {
  const rows = SORT_PROBE as unknown as TableRow[];
  it.each(SORT_CASES.map((c) => [`${c.key} ${c.dir}`, c] as const))("%s", (_, c) => {
    const sorted = sortRows(rows, { key: c.key, dir: c.dir }, undefined, SORT_PROBE_KEYS);
    expect(sorted.map((r) => rows.indexOf(r))).toEqual([...c.order]);
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

describe("what a trace table's times are over", () => {
  it("says in the header that a summed time is over every profiled step, the piece, or per sample", async () => {
    const { withSummedScope } = await import("../src/model/tableModel");
    const cols = buildColumns(["calls", "total_us", "mean_us"], false, "total_us");
    const group = (c: ReturnType<typeof withSummedScope>, key: string) => c.find((x) => x.key === key)!;
    const whole = withSummedScope(cols, null, false);
    expect(group(whole, "baseline_total_us").group).toBe("Total (ms, all profiled steps)");
    expect(group(whole, "delta_total_us").title).toBe("Total (ms, all profiled steps), delta (experimental − baseline)");
    expect(group(whole, "delta_total_pct").title).toBe("Total, delta %");
    // A kernel's mean is per call, calls are a count: no sum to scope.
    expect(group(whole, "baseline_mean_us").group).toBeUndefined();
    expect(group(whole, "baseline_calls").group).toBeUndefined();
    expect(group(withSummedScope(cols, null, true), "baseline_total_us").group).toBe("Total (ms, in this piece)");
    expect(group(withSummedScope(cols, "sample", false), "baseline_total_us").group).toBe("Total (ms per sample)");
  });
});
