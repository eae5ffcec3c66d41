"""A logdir of many ranks, cheaply, from one real trace: the file's JSON
with its `distributedInfo.rank` rewritten and, when asked, its clock
stretched (every event's offset from the trace's start and its duration
times `scale`), written as `rank{i}.pt.trace.json.gz`.

The source is a real Kineto trace (HTA's `cpu_only` sample: 30 events, one
`ProfilerStep#`, gloo `all_reduce`s on two threads, a job of 300 ranks);
each copy's oracle (`oracle`) is computed from the copy's own JSON with the
standard library: rank, world size and backend from `distributedInfo`, the
step from the `ProfilerStep#` events, communication as the union of the
gloo collectives' intervals within the step.
"""
from __future__ import annotations

import gzip
import json
import os
import re

# Relative to HTA's traces (the `shared_traces` fixture).
CPU_ONLY = "cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
_RANK_RE = re.compile(rb'("distributedInfo"\s*:\s*\{[^{}]*?"rank"\s*:\s*)(-?\d+)')


def trace_bytes(src: str) -> bytes:
    with open(src, "rb") as f:
        raw = f.read()
    return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw


def with_rank(doc: bytes, rank: int, scale: float = 1.0) -> bytes:
    """`doc` with its distributedInfo.rank set to `rank` (byte-level: the rest
    untouched) and, when `scale` is not 1, its clock stretched by `scale`."""
    out, n = _RANK_RE.subn(lambda m: m.group(1) + str(rank).encode(), doc, count=1)
    if n != 1:
        raise ValueError("the trace has no distributedInfo.rank to rewrite")
    if scale == 1.0:
        return out
    trace = json.loads(out)
    events = trace["traceEvents"]
    base = min(float(e["ts"]) for e in events if "ts" in e)
    for e in events:
        if "ts" in e:
            e["ts"] = base + (float(e["ts"]) - base) * scale
        if "dur" in e:
            e["dur"] = float(e["dur"]) * scale
    return json.dumps(trace).encode()


def write_rank(src_doc: bytes, path: str, rank: int, scale: float = 1.0) -> None:
    with open(path, "wb") as f:
        f.write(gzip.compress(with_rank(src_doc, rank, scale), compresslevel=1, mtime=0))


def write_ranks(src: str, run_dir: str, ranks, scale=lambda rank: 1.0,
                name: str = "rank{}.pt.trace.json.gz") -> list[str]:
    """One gzip file per rank of `ranks` into `run_dir` (rank r's clock
    stretched by `scale(r)`); returns their paths."""
    doc = trace_bytes(src)
    os.makedirs(run_dir, exist_ok=True)
    paths = []
    for r in ranks:
        path = os.path.join(run_dir, name.format(r))
        write_rank(doc, path, r, scale(r))
        paths.append(path)
    return paths


def _union_within(intervals: list[tuple[float, float]], lo: float, hi: float) -> float:
    clipped = sorted((max(a, lo), min(b, hi)) for a, b in intervals if min(b, hi) > max(a, lo))
    total, end = 0.0, float("-inf")
    for a, b in clipped:
        if a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def oracle(src: str, rank: int, scale: float = 1.0) -> dict:
    """What a copy's own JSON says (see the module docstring): rank, world
    size, backend, steps, the average step and its communication (µs); the
    trace has no DataLoader annotation, so idle is 0 and computation is
    the rest of the step."""
    trace = json.loads(with_rank(trace_bytes(src), rank, scale))
    info = trace["distributedInfo"]
    events = trace["traceEvents"]
    steps = [e for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")]
    collectives = [(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in events
                   if e.get("ph") == "X" and str(e.get("name", "")).startswith("gloo:")]
    step_us = sum(float(e["dur"]) for e in steps) / len(steps)
    comm_us = sum(_union_within(collectives, float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in steps) / len(steps)
    return {"rank": info["rank"], "world_size": info["world_size"], "backend": info["backend"],
            "steps": len({e["name"] for e in steps}), "step_time_us": step_us,
            "communication_us": comm_us, "idle_us": 0.0, "computation_us": step_us - comm_us}
