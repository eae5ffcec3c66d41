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
