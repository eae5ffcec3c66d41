/**
 * Where the URL state lives. Our iframe's own hash is reset whenever
 * TensorBoard recreates the iframe (page reload, tab switch), so the state
 * is mirrored into TensorBoard's hash as `p.tb_pipeline.<key>=...` — the
 * keys TensorBoard's plugin API hands back to a plugin
 * ("experimental.GetURLPluginData"). Reading prefers our own hash (set by
 * this session), then TensorBoard's.
 */
import type { HostIpc } from "./hostIpc";
import { MSG_GET_URL_DATA } from "./hostIpc";
import { mergeHostHash, parseHash, parseState, readHostHash, serializeState, type UrlState } from "./model/urlState";

/** The parent's Location when same-origin (TensorBoard's iframe is), else null. */
function parentLocation(): Location | null {
  try {
    if (window.parent === window) return null;
    const loc = window.parent.location;
    void loc.hash; // throws on a cross-origin parent
    return loc;
  } catch {
    return null;
  }
}

export async function readInitialState(ipc: HostIpc): Promise<UrlState> {
  if (window.location.hash.length > 1) return parseHash(window.location.hash);
  const loc = parentLocation();
  if (loc) {
    const keys = readHostHash(loc.hash);
    if (Object.keys(keys).length > 0) return parseState(keys);
  }
  const data = await ipc.request(MSG_GET_URL_DATA, null, 1500, {});
  if (data && typeof data === "object") {
    const rec: Record<string, string> = {};
    for (const [k, v] of Object.entries(data as Record<string, unknown>)) if (typeof v === "string") rec[k] = v;
    return parseState(rec);
  }
  return parseState({});
}

/** Writes the state to both hashes with replaceState (no history entry per click, no hashchange storms). */
export function writeState(s: UrlState): void {
  const own = serializeState(s);
  const url = new URL(window.location.href);
  url.hash = own;
  if (url.href !== window.location.href) history.replaceState(history.state, "", url.href);
  const loc = parentLocation();
  if (!loc) return;
  try {
    const merged = mergeHostHash(loc.hash, s);
    if (merged !== loc.hash && merged !== "#" + loc.hash.replace(/^#/, "")) {
      const parentUrl = new URL(loc.href);
      parentUrl.hash = merged;
      window.parent.history.replaceState(window.parent.history.state, "", parentUrl.href);
    }
  } catch {
    // The host refused (sandboxed differently): the iframe hash still holds the state.
  }
}
