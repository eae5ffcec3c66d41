/**
 * Fetch state for a view: loading (with the server's "still parsing" note
 * while a 409 is being polled), done, or failed. Aborts the previous request
 * when its inputs change so a slow answer never overwrites a newer one.
 */
import { useEffect, useState } from "preact/hooks";
import type { RequestOpts } from "./api";

export type RequestState<T> =
  | { state: "idle" }
  | { state: "loading"; waitingFor: string | null }
  | { state: "ok"; data: T }
  | { state: "error"; error: unknown };

export function useRequest<T>(fn: ((opts: RequestOpts) => Promise<T>) | null, deps: readonly unknown[]): RequestState<T> {
  const [st, setSt] = useState<RequestState<T>>(fn ? { state: "loading", waitingFor: null } : { state: "idle" });
  useEffect(() => {
    if (!fn) {
      setSt({ state: "idle" });
      return;
    }
    const ctrl = new AbortController();
    setSt({ state: "loading", waitingFor: null });
    fn({ signal: ctrl.signal, onWait: (m) => !ctrl.signal.aborted && setSt({ state: "loading", waitingFor: m }) }).then(
      (data) => !ctrl.signal.aborted && setSt({ state: "ok", data }),
      (error: unknown) => !ctrl.signal.aborted && setSt({ state: "error", error }),
    );
    return () => ctrl.abort();
  }, deps);
  return st;
}
