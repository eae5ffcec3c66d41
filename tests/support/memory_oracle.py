"""An independent replay of a trace's `[memory]` events, straight from the JSON.

Nothing of tb_pipeline_plugin is imported: the file is read with `json`,
events are replayed one by one with a dict keyed by (device, address), the
way the allocator itself keeps them, and each allocation is placed in the
innermost `cpu_op` around it by a linear scan. The analysis does the same
with sorts and parent pointers; the tests compare the two.
"""
from __future__ import annotations

import gzip
import json
from collections import defaultdict


def load(path: str) -> dict:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def _device(args: dict) -> str:
    return "CPU" if args.get("Device Type") == 0 else f"GPU {max(args.get('Device Id', 0), 0)}"


def memory_events(doc: dict) -> list[dict]:
    return [e for e in doc["traceEvents"] if e.get("name") == "[memory]" and e.get("ph") in ("i", "I")
            and isinstance(e.get("args"), dict) and "Device Type" in e["args"]]


def replay(doc: dict) -> dict:
    """Per device: peak allocated bytes, the bytes of the blocks alive at the
    peak that the trace saw allocated (`live_bytes`), those blocks
    (`live`: list of (event, bytes)), and whether addresses were recorded."""
    by_device: dict[str, list[dict]] = defaultdict(list)
    for e in memory_events(doc):
        by_device[_device(e["args"])].append(e)
    out = {}
    for device, events in by_device.items():
        events.sort(key=lambda e: e["ts"])  # stable: file order among equal times
        has_totals = all("Total Allocated" in e["args"] for e in events)
        if has_totals:
            levels = [e["args"]["Total Allocated"] for e in events]
        else:
            running, levels = 0, []
            for e in events:
                running += e["args"]["Bytes"]
                levels.append(running)
            before = max(0, -min(levels))
            levels = [v + before for v in levels]
        peak_at = max(range(len(levels)), key=lambda i: (levels[i], -i))
        has_addr = all("Addr" in e["args"] for e in events)
        live: dict = {}
        live_at_peak = None
        if has_addr:
            for i, e in enumerate(events):
                a, b = e["args"]["Addr"], e["args"]["Bytes"]
                if b > 0:
                    live[a] = (e, b)
                elif b < 0:
                    live.pop(a, None)  # a block from before the window: not ours to track
                if i == peak_at:
                    live_at_peak = list(live.values())
        steps = [e for e in doc["traceEvents"] if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")
                 and e["ts"] <= events[peak_at]["ts"]]
        step_ts = max((e["ts"] for e in steps), default=None)
        first = next((i for i, e in enumerate(events) if step_ts is not None and e["ts"] >= step_ts), 0)
        out[device] = {
            # The level when the peak's step began (the last one before its first event).
            "held_at_step_start": levels[first - 1] if first > 0 else levels[0] - events[0]["args"]["Bytes"],
            "peak_bytes": levels[peak_at],
            "peak_ts": events[peak_at]["ts"],
            "has_addr": has_addr,
            "live": live_at_peak or [],
            "live_bytes": sum(b for _, b in (live_at_peak or [])),
        }
    return out


def innermost_op(doc: dict, event: dict) -> str:
    """Name of the shortest `cpu_op` on the event's thread holding its instant."""
    best = None
    for e in doc["traceEvents"]:
        if e.get("ph") != "X" or e.get("cat") != "cpu_op" or str(e.get("tid")) != str(event["tid"]):
            continue
        if e["ts"] <= event["ts"] <= e["ts"] + e["dur"] and (best is None or e["dur"] < best["dur"]):
            best = e
    return best["name"] if best else "(outside operators)"
