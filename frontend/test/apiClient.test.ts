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
  it("asks again with a growing delay, never longer than MAX_RETRY_DELAY_MS", async () => {
    const { MAX_RETRY_DELAY_MS } = await import("../src/api");
    const waits: number[] = [];
    const realSetTimeout = globalThis.setTimeout;
    globalThis.setTimeout = ((fn: () => void, ms?: number) => {
      waits.push(ms ?? 0);
      return realSetTimeout(fn, 0);
    }) as typeof setTimeout;
    try {
      let asked = 0;
      const loading = JSON.stringify({ error: "run 'a' is still loading", status: 409 });
      const client = new ApiClient({
        fetch: () => Promise.resolve(++asked < 8 ? new Response(loading, { status: 409 }) : new Response("{}", { status: 200 })),
      });
      await client.runs();
      expect(asked).toBe(8);
    } finally {
      globalThis.setTimeout = realSetTimeout;
    }
    expect(waits).toEqual([250, 500, 500, 500, 500, 500, 500]);
    expect(Math.max(...waits)).toBe(MAX_RETRY_DELAY_MS);
  });
});
