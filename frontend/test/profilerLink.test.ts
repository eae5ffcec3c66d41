import { describe, expect, it } from "vitest";
import {
  isViewerReady,
  profilerListed,
  profilerRunState,
  profilerTraceUrl,
  readProfilerQuery,
  sidesOf,
  profilerHref,
  profilerLinkUrl,
  viewerMessage,
} from "../src/model/profilerLink";

describe("trace viewer links", () => {
  it("detects torch-tb-profiler by presence in the plugin listing, enabled or not", () => {
    expect(profilerListed({ tb_pipeline: { enabled: true }, pytorch_profiler: { enabled: false } })).toBe(true);
    expect(profilerListed({ tb_pipeline: { enabled: true } })).toBe(false);
    expect(profilerListed(null)).toBe(false);
    expect(profilerListed("pytorch_profiler")).toBe(false);
  });

  it("round-trips a selection through the page URL, names with odd characters included", () => {
    const sel = { run: "a b/c&d=e", worker: "w#1", span: "1700000000000" };
    const href = profilerHref(sel, "aten::add_ & co");
    expect(href.startsWith("profiler.html?")).toBe(true);
    expect(readProfilerQuery(href.slice(href.indexOf("?")))).toEqual({ sel, find: "aten::add_ & co" });
  });

  it("leaves empty worker and span out, for the server's defaults", () => {
    expect(profilerHref({ run: "r", worker: "", span: "" })).toBe("profiler.html?run=r");
    expect(profilerLinkUrl({ run: "r", worker: "", span: "" })).toBe("profiler_link?run=r");
    expect(readProfilerQuery("?run=r")).toEqual({ sel: { run: "r", worker: "", span: "" }, find: "" });
    expect(readProfilerQuery("?worker=w")).toBeNull();
  });

  it("asks torch-tb-profiler with its own names", () => {
    expect(profilerTraceUrl({ run: "logdir", worker: "w", span: "default" })).toBe("../pytorch_profiler/trace?run=logdir&worker=w&span=default");
  });

  it("reads torch-tb-profiler's runs answer", () => {
    expect(profilerRunState({ runs: ["a", "b"], loading: true }, "b")).toBe("listed");
    expect(profilerRunState({ runs: ["a"], loading: true }, "b")).toBe("loading");
    expect(profilerRunState({ runs: [], loading: false }, "b")).toBe("absent");
    expect(profilerRunState(null, "b")).toBe("absent");
  });

  it("speaks trace_embedding.html's messages", () => {
    expect(isViewerReady({ msg: "ready" })).toBe(true);
    expect(isViewerReady({ msg: "data" })).toBe(false);
    expect(isViewerReady("ready")).toBe(false);
    expect(viewerMessage("r · w", "{}")).toEqual({ msg: "data", name: "r · w", data: "{}" });
  });

  it("splits a diff selection into its two traces", () => {
    expect(sidesOf({ baseline: "b", experimental: "e", bWorker: "w", eSpan: "2" })).toEqual({
      baseline: { run: "b", worker: "w", span: "" },
      experimental: { run: "e", worker: "", span: "2" },
    });
  });
});
