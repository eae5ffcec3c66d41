/**
 * What the run picker shows for a run: its label and whether a worker and a
 * span can be chosen. A group of recordings (`tb-pipeline record --repeat`)
 * is picked by its name as a whole; its members stay runs of their own.
 */
import type { RunInfo } from "../api";

export function isGroup(r: RunInfo): boolean {
  return r.kinds.includes("group");
}

/** "3 recordings", "1 recording". */
export function recordingsText(count: number): string {
  return `${count} recording${count === 1 ? "" : "s"}`;
}

/** The option text: "baseline", "baseline · 3 recordings", with the status when it is worth saying. */
export function runLabel(r: RunInfo): string {
  const name = isGroup(r) ? `${r.name} · ${recordingsText(r.recordings.length)}` : r.name;
  // An `unloaded` run loads when picked: nothing worth a label.
  if (r.status === "loading") return `${name} (loading…)`;
  if (r.status === "failed") return `${name} (failed)`;
  return name;
}

/** Worker and span belong to one recording: a group has none to choose. */
export function canPickWorker(r: RunInfo | undefined): boolean {
  return !!r && !isGroup(r) && r.workers.length > 1;
}

export function canPickSpan(r: RunInfo | undefined, spans: readonly string[] | undefined): boolean {
  return !!r && !isGroup(r) && !!spans && spans.length > 1;
}
