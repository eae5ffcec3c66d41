/**
 * Fetch state for a view: loading (with the server's "still parsing" note
 * while a 409 is being polled), done, or failed. Aborts the previous request
 * when its inputs change so a slow answer never overwrites a newer one.
 *
 * `usePolledRequest`: for an answer that can be partial (`distributed`
 * while ranks load: the ranks ready and how many are left), shown at once,
 * then asked again until `complete(answer)`, each newer answer replacing
 * the last without a "Loading" flash in between.
 */
import { useEffect, useState } from "preact/hooks";
import type { RequestOpts } from "./api";

export type RequestState<T> =
  | { state: "idle" }
  | { state: "loading"; waitingFor: string | null }
  | { state: "ok"; data: T }
  | { state: "error"; error: unknown };

/** Milliseconds between asks while an answer is partial: soon at first, then less often. */
export const POLL_DELAYS_MS = [300, 600, 1000, 2000] as const;

const ALWAYS_COMPLETE = () => true;

export function useRequest<T>(fn: ((opts: RequestOpts) => Promise<T>) | null, deps: readonly unknown[]): RequestState<T> {
  return usePolledRequest(fn, ALWAYS_COMPLETE, deps);
}

export function usePolledRequest<T>(
  fn: ((opts: RequestOpts) => Promise<T>) | null,
  complete: (answer: T) => boolean,
  deps: readonly unknown[],
): RequestState<T> {
  const [st, setSt] = useState<RequestState<T>>(fn ? { state: "loading", waitingFor: null } : { state: "idle" });
  useEffect(() => {
    if (!fn) {
      setSt({ state: "idle" });
      return;
    }
    const ctrl = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    let asks = 0;
    const ask = () =>
      fn({ signal: ctrl.signal, onWait: (m) => !ctrl.signal.aborted && setSt({ state: "loading", waitingFor: m }) }).then(
        (data) => {
          if (ctrl.signal.aborted) return;
          setSt({ state: "ok", data });
          if (!complete(data)) timer = setTimeout(ask, POLL_DELAYS_MS[Math.min(asks++, POLL_DELAYS_MS.length - 1)]);
        },
        (error: unknown) => !ctrl.signal.aborted && setSt({ state: "error", error }),
      );
    setSt({ state: "loading", waitingFor: null });
    void ask();
    return () => {
      ctrl.abort();
      if (timer !== undefined) clearTimeout(timer);
    };
  }, deps);
  return st;
}
