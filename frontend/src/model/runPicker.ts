/**
 * What the run picker shows for a run: its label and whether a worker and a
 * span can be chosen. A group of recordings (`tb-pipeline record --repeat`)
 * is picked by its name as a whole; its members stay runs of their own.
 */
import type { RunInfo, SpanInfo, WorkerInfo } from "../api";

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

/** "2021-06-08 09:03:43" in `timeZone` (the browser's when undefined). */
export function localTime(unixS: number, timeZone?: string): string {
  const parts = new Intl.DateTimeFormat("en-CA", {
    timeZone,
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    hourCycle: "h23",
  }).formatToParts(new Date(unixS * 1000));
  const get = (type: string) => parts.find((p) => p.type === type)?.value ?? "";
  return `${get("year")}-${get("month")}-${get("day")} ${get("hour")}:${get("minute")}:${get("second")}`;
}

/** "steps 6–8", "step 6", "5 steps, 6–20" (some numbers missing); "" before the span is read. */
export function stepsText(steps: SpanInfo["steps"]): string {
  if (!steps) return "";
  if (steps.count === 1) return `step ${steps.first}`;
  const range = `${steps.first}–${steps.last}`;
  return steps.count === steps.last - steps.first + 1 ? `steps ${range}` : `${steps.count} steps, ${range}`;
}

/**
 * A span as the picker lists it: its place among the worker's spans, its steps, and when it started
 * (or, before its trace is read, when its file was saved): "2 of 3 · steps 16–21 · started 2021-06-08 09:11:53".
 * The id (the trace file's number) is in the tooltip and the URL.
 */
export function spanLabel(info: SpanInfo, count: number, timeZone?: string): string {
  const when =
    info.start_unix_s !== null ? `started ${localTime(info.start_unix_s, timeZone)}` : info.written_unix_s !== null ? `saved ${localTime(info.written_unix_s, timeZone)}` : "";
  const parts = [count > 1 ? `${info.order} of ${count}` : "", stepsText(info.steps), when].filter((p) => p);
  return parts.length ? parts.join(" · ") : `span ${info.order}`;
}

/** The tooltip of a span: its id, and where the label's figures come from. */
export function spanTitle(info: SpanInfo, timeZone?: string): string {
  const saved = info.written_unix_s !== null ? `; file saved ${localTime(info.written_unix_s, timeZone)}` : "";
  const unread = info.steps === null && info.start_unix_s === null ? "; its steps show once the trace is read" : "";
  return `Span ${info.span} (the number in the trace file's name)${saved}${unread}`;
}

/** The labels of a worker's spans, in the order of `spans` (an id the server did not describe is shown as it is). */
export function spanOptions(worker: WorkerInfo | undefined, timeZone?: string): { span: string; label: string; title: string }[] {
  if (!worker) return [];
  const byId = new Map(worker.span_info.map((s) => [s.span, s]));
  return worker.spans.map((span) => {
    const info = byId.get(span);
    return info ? { span, label: spanLabel(info, worker.spans.length, timeZone), title: spanTitle(info, timeZone) } : { span, label: span, title: `Span ${span}` };
  });
}
