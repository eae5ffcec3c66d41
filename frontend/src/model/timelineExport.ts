/**
 * The two pieces of a `diff/timeline` answer as one Chrome trace (the JSON
 * object format chrome://tracing and Perfetto open): the baseline and the
 * experimental run as two processes, each lane a thread, both starting at
 * 0 so the pieces line up. Matched events carry their match id and delta
 * in `args`; merged aggregates (when the answer has them) are events named
 * by what they merged. Pure.
 */
import type { DiffTimelineResponse, TimelineSide } from "../api";

export interface ChromeEvent {
  name: string;
  ph: "X" | "M";
  pid: number;
  tid: number;
  ts?: number;
  dur?: number;
  cat?: string;
  args?: Record<string, unknown>;
}

export const PROCESS_IDS = { baseline: 1, experimental: 2 } as const;

function sideEvents(side: TimelineSide, pid: number, processName: string, kinds: readonly string[]): ChromeEvent[] {
  const out: ChromeEvent[] = [
    { name: "process_name", ph: "M", pid, tid: 0, args: { name: processName } },
    { name: "process_sort_index", ph: "M", pid, tid: 0, args: { sort_index: pid } },
  ];
  side.lanes.forEach((lane, i) => {
    out.push({ name: "thread_name", ph: "M", pid, tid: i + 1, args: { name: lane.label } });
    out.push({ name: "thread_sort_index", ph: "M", pid, tid: i + 1, args: { sort_index: i } });
  });
  const ev = side.events;
  for (let i = 0; i < ev.ts_us.length; i++) {
    const args: Record<string, unknown> = { kind: kinds[ev.kind[i]!] };
    const match = ev.match[i];
    if (match !== null && match !== undefined) {
      args.match = match;
      args.delta_us = ev.delta_us[i];
    }
    out.push({ name: side.names[ev.name[i]!] ?? "", cat: kinds[ev.kind[i]!], ph: "X", pid, tid: ev.lane[i]! + 1, ts: ev.ts_us[i]!, dur: ev.dur_us[i]!, args });
  }
  const m = side.merged;
  for (let i = 0; i < m.ts_us.length; i++) {
    out.push({
      name: `${m.count[i]} events merged`,
      cat: "merged",
      ph: "X",
      pid,
      tid: m.lane[i]! + 1,
      ts: m.ts_us[i]!,
      dur: m.dur_us[i]!,
      args: { count: m.count[i], merged_us: m.merged_us[i] },
    });
  }
  return out;
}

export function toChromeTrace(resp: DiffTimelineResponse): { traceEvents: ChromeEvent[]; displayTimeUnit: "ms"; otherData: Record<string, string> } {
  const events: ChromeEvent[] = [];
  const sides = [
    ["baseline", resp.baseline_side, resp.baseline.run],
    ["experimental", resp.experimental_side, resp.experimental.run],
  ] as const;
  for (const [which, side, run] of sides) {
    if (side) events.push(...sideEvents(side, PROCESS_IDS[which], `${which}: ${run} — ${side.piece_name}`, resp.kinds));
  }
  return {
    traceEvents: events,
    displayTimeUnit: "ms",
    otherData: { piece: resp.name, path: resp.path, baseline: resp.baseline.run, experimental: resp.experimental.run },
  };
}

/** A file name for the export. */
export function exportFileName(resp: DiffTimelineResponse): string {
  const safe = (s: string) => s.replace(/[^A-Za-z0-9._-]+/g, "_").slice(0, 40);
  return `timeline_${safe(resp.baseline.run)}_vs_${safe(resp.experimental.run)}_${safe(resp.name)}.json`;
}
