"""Grow a real trace to a target size by replicating it in time.

Copy k of every event is shifted by k x (trace span + gap) and every id that
links events (launch <-> kernel correlation, op <-> launch External id, Python
call tree ids, flow ids, fwd/bwd sequence numbers) is offset by k x stride, so
links stay unique per copy and the result is as analysable as the original:
k times as many steps, operators and kernels. `ProfilerStep#N` numbers are
shifted too. Metadata events (`ph: M`) appear once, as in a real trace.

The output uses Kineto's indented layout (one event per block, args one per
line), so byte counts and parse cost match what the profiler writes.
"""
from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass

GAP_US = 1000.0
# Args whose values identify an event another event refers to.
LINK_ARGS = (
    "External id",
    "external id",
    "correlation",
    "Python id",
    "Python parent id",
    "Sequence number",
    "Ev Idx",
)
_STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")


@dataclass
class ReplicaStats:
    copies: int
    events: int
    bytes_written: int
    copy_bytes: int


def load_trace_json(path: str) -> dict:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = json.load(f)
    if isinstance(data, list):
        data = {"traceEvents": data}
    return data


def replicate_trace(src: str, dst: str, target_bytes: int) -> ReplicaStats:
    trace = load_trace_json(src)
    events = trace["traceEvents"]
    meta = {k: v for k, v in trace.items() if k not in ("traceEvents", "traceName")}
    timed = [e for e in events if e.get("ph") != "M" and isinstance(e.get("ts"), (int, float))]
    start_us = min(e["ts"] for e in timed)
    end_us = max(e["ts"] + (e.get("dur") or 0) for e in timed)
    shift_us = (end_us - start_us) + GAP_US
    if all(isinstance(e["ts"], int) for e in timed) and float(shift_us).is_integer():
        shift_us = int(shift_us)  # keep integer-µs traces integer
    id_stride = _max_link_id(events) + 1
    steps = [int(m.group(1)) for e in events if (m := _STEP_RE.match(str(e.get("name", ""))))]
    step_stride = (max(steps) - min(steps) + 1) if steps else 0

    first = _format_copy(events, 0, shift_us, id_stride, step_stride)
    copy_bytes = len(first.encode())
    copies = max(1, round(target_bytes / copy_bytes))
    written = 0
    n_events = 0
    with open(dst, "w", encoding="utf-8") as out:
        written += out.write(_header(meta))
        for k in range(copies):
            body = first if k == 0 else _format_copy(events, k, shift_us, id_stride, step_stride)
            if k:
                written += out.write(",\n")
            written += out.write(body)
            n_events += sum(1 for e in events if k == 0 or e.get("ph") != "M")
        trailer = "\n  ]"
        if "traceName" in trace:
            trailer += ',"traceName": ' + json.dumps(trace["traceName"])
        written += out.write(trailer + "\n}\n")
    return ReplicaStats(copies=copies, events=n_events, bytes_written=written, copy_bytes=copy_bytes)


def _max_link_id(events) -> int:
    top = 0
    for e in events:
        if isinstance(e.get("id"), int):
            top = max(top, e["id"])
        args = e.get("args")
        if args:
            for key in LINK_ARGS:
                v = args.get(key)
                if isinstance(v, int) and not isinstance(v, bool):
                    top = max(top, v)
    return top


def _header(meta: dict) -> str:
    lines = ["{"]
    for key, value in meta.items():
        lines.append(f"  {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)},")
    lines.append('  "traceEvents": [\n')
    return "\n".join(lines)


def _format_copy(events, k: int, shift_us, id_stride: int, step_stride: int) -> str:
    blocks = []
    for e in events:
        if k and e.get("ph") == "M":
            continue
        blocks.append(_format_event(_shifted(e, k, shift_us, id_stride, step_stride) if k else e))
    return ",\n".join(blocks)


def _shifted(e: dict, k: int, shift_us, id_stride: int, step_stride: int) -> dict:
    e = dict(e)
    if isinstance(e.get("ts"), (int, float)):
        ts = e["ts"] + k * shift_us
        e["ts"] = round(ts, 3) if isinstance(ts, float) else ts
    if isinstance(e.get("id"), int):
        e["id"] += k * id_stride
    m = _STEP_RE.match(str(e.get("name", "")))
    if m:
        e["name"] = f"ProfilerStep#{int(m.group(1)) + k * step_stride}"
    args = e.get("args")
    if args:
        args = dict(args)
        for key in LINK_ARGS:
            v = args.get(key)
            if isinstance(v, int) and not isinstance(v, bool):
                args[key] = v + k * id_stride
        e["args"] = args
    return e


def _dumps(v) -> str:
    return json.dumps(v, ensure_ascii=False)


def _format_event(e: dict) -> str:
    # Kineto: identity fields on one line, timing on the next, args one per line.
    head = ", ".join(f"{_dumps(k)}: {_dumps(v)}" for k, v in e.items() if k not in ("ts", "dur", "args"))
    parts = [head] if head else []
    timing = [f'"{k}": {_dumps(e[k])}' for k in ("ts", "dur") if k in e]
    if timing:
        parts.append(", ".join(timing))
    if "args" in e:
        args = e["args"]
        if isinstance(args, dict) and args:
            inner = ",\n".join(f"      {_dumps(k)}: {_dumps(v)}" for k, v in args.items())
            parts.append('"args": {\n' + inner + "\n    }")
        else:
            parts.append(f'"args": {_dumps(args)}')
    return "  {\n    " + ",\n    ".join(parts) + "\n  }"
