/** `value`, once it has stayed the same for `ms` (typing in a filter box must not send a request per key). */
import { useEffect, useState } from "preact/hooks";

export function useDebounced<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    if (Object.is(value, settled)) return;
    const t = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return settled;
}
