/**
 * A request whose answer can be partial (`distributed` while ranks load:
 * the ranks ready and how many are left): shown at once, then asked again
 * until `complete(answer)`, each newer answer replacing the last without a
 * "Loading" flash in between. Errors and 409s behave as in useRequest.
 */
import { useEffect, useState } from "preact/hooks";
import type { RequestOpts } from "./api";
import type { RequestState } from "./useRequest";

/** Seconds between asks while the answer is partial: soon at first, then less often. */
export const POLL_DELAYS_MS = [300, 600, 1000, 2000] as const;

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
    const ask = () => {
      fn({ signal: ctrl.signal, onWait: (m) => !ctrl.signal.aborted && setSt({ state: "loading", waitingFor: m }) }).then(
        (data) => {
          if (ctrl.signal.aborted) return;
          setSt({ state: "ok", data });
          if (!complete(data)) timer = setTimeout(ask, POLL_DELAYS_MS[Math.min(asks++, POLL_DELAYS_MS.length - 1)]);
        },
        (error: unknown) => !ctrl.signal.aborted && setSt({ state: "error", error }),
      );
    };
    setSt({ state: "loading", waitingFor: null });
    ask();
    return () => {
      ctrl.abort();
      if (timer !== undefined) clearTimeout(timer);
    };
  }, deps);
  return st;
}
