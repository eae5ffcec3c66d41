import { describe, expect, it } from "vitest";
import { ApiClient, ApiError } from "../src/api";

describe("ApiClient transport failures", () => {
  it("turns no answer at all into an ApiError with status 0 and the browser's reason", async () => {
    const client = new ApiClient({ fetch: () => Promise.reject(new TypeError("Failed to fetch")) });
    const err = await client.runs().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(0);
    expect((err as ApiError).message).toBe("no answer from TensorBoard (Failed to fetch)");
  });

  it("passes an abort through unchanged: the caller cancelled, nothing failed", async () => {
    const ctrl = new AbortController();
    const client = new ApiClient({
      fetch: (_url, init) =>
        new Promise((_resolve, reject) => init?.signal?.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")))),
    });
    const pending = client.runs({ signal: ctrl.signal }).catch((e: unknown) => e);
    ctrl.abort();
    const err = await pending;
    expect(err).toBeInstanceOf(DOMException);
    expect((err as DOMException).name).toBe("AbortError");
  });

  it("still reads a server's error answer as before", async () => {
    const body = JSON.stringify({ error: "run 'x' not found", status: 404 });
    const client = new ApiClient({ fetch: () => Promise.resolve(new Response(body, { status: 404 })) });
    const err = (await client.runs().catch((e: unknown) => e)) as ApiError;
    expect(err).toBeInstanceOf(ApiError);
    expect(err.status).toBe(404);
    expect(err.message).toContain("run 'x' not found");
  });
});

describe("ApiClient while a run loads", () => {
  const loading = JSON.stringify({ error: "run 'a' is still loading", status: 409 });

  it("lets the server wait from the first ask, and pauses, growing, only while it answers without waiting", async () => {
    const { LOADING_WAIT_MS, MAX_RETRY_DELAY_MS } = await import("../src/api");
    const waits: number[] = [];
    const urls: string[] = [];
    const realSetTimeout = globalThis.setTimeout;
    globalThis.setTimeout = ((fn: () => void, ms?: number) => {
      waits.push(ms ?? 0);
      return realSetTimeout(fn, 0);
    }) as typeof setTimeout;
    try {
      const client = new ApiClient({
        fetch: (url) => {
          urls.push(url);
          return Promise.resolve(urls.length < 8 ? new Response(loading, { status: 409 }) : new Response("{}", { status: 200 }));
        },
      });
      await client.overview({ run: "a" });
    } finally {
      globalThis.setTimeout = realSetTimeout;
    }
    // The first ask waits too: a load that ends within the wait answers 200, never a 409 in the console.
    expect(urls.every((u) => u === `overview?run=a&wait_ms=${LOADING_WAIT_MS}`)).toBe(true);
    // Every 409 here came back at once: a pause before each next ask.
    expect(waits).toEqual([250, 500, 500, 500, 500, 500, 500]);
    expect(Math.max(...waits)).toBe(MAX_RETRY_DELAY_MS);
  });

  it("asks again without a pause after a 409 the server waited for", async () => {
    const { LOADING_WAIT_MS } = await import("../src/api");
    let now = 0;
    const realNow = Date.now;
    const realSetTimeout = globalThis.setTimeout;
    const waits: number[] = [];
    Date.now = () => now;
    globalThis.setTimeout = ((fn: () => void, ms?: number) => {
      waits.push(ms ?? 0);
      return realSetTimeout(fn, 0);
    }) as typeof setTimeout;
    try {
      let asked = 0;
      const client = new ApiClient({
        fetch: (url) => {
          asked += 1;
          if (url.includes("wait_ms")) now += LOADING_WAIT_MS; // the server held it until its wait ran out
          return Promise.resolve(asked < 5 ? new Response(loading, { status: 409 }) : new Response("{}", { status: 200 }));
        },
      });
      await client.runs();
      expect(asked).toBe(5);
    } finally {
      Date.now = realNow;
      globalThis.setTimeout = realSetTimeout;
    }
    expect(waits).toEqual([]);
  });
});
