"""Independent oracles: numbers computed straight from the trace JSON with the
standard library, sharing no code with the plugin's decoder."""
from __future__ import annotations

import collections
import gzip
import json


def load_events(path) -> tuple[dict, list[dict]]:
    path = str(path)
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    if isinstance(doc, list):
        return {}, doc
    return doc, doc["traceEvents"]


def category(e: dict) -> str:
    return (e.get("cat") or "").lower()


def counts_by_name(events: list[dict], cats: tuple[str, ...]) -> collections.Counter:
    return collections.Counter(e["name"] for e in events if e.get("ph") == "X" and category(e) in cats)


def duration_by_name(events: list[dict], cats: tuple[str, ...]) -> dict[str, float]:
    out: dict[str, float] = collections.defaultdict(float)
    for e in events:
        if e.get("ph") == "X" and category(e) in cats:
            out[e["name"]] += float(e.get("dur", 0))
    return dict(out)


def launches_by_correlation(events: list[dict]) -> dict:
    """Runtime / driver calls that launch device work, by `correlation`."""
    launches = {}
    for e in events:
        if e.get("ph") == "X" and category(e) in ("cuda_runtime", "runtime", "cuda_driver"):
            corr = (e.get("args") or {}).get("correlation")
            if corr is not None:
                launches[corr] = e
    return launches


def device_self_by_op_external_id(events: list[dict]) -> dict[str, float]:
    """Device time per operator name, linking kernel -> launch by
    `correlation` and launch -> operator by `External id` (Kineto's own link)."""
    ops = {}
    for e in events:
        if e.get("ph") == "X" and category(e) in ("cpu_op", "operator"):
            ext = (e.get("args") or {}).get("External id")
            if ext is not None:
                ops[ext] = e
    launches = launches_by_correlation(events)
    out: dict[str, float] = collections.defaultdict(float)
    for e in events:
        if e.get("ph") == "X" and category(e) in ("kernel", "gpu_memcpy", "gpu_memset"):
            launch = launches.get((e.get("args") or {}).get("correlation"))
            if launch is None:
                continue
            op = ops.get((launch.get("args") or {}).get("External id"))
            if op is None or op.get("tid") != launch.get("tid"):
                continue
            if not (op["ts"] <= launch["ts"] <= op["ts"] + op["dur"]):
                continue
            out[op["name"]] += float(e["dur"])
    return dict(out)


def step_windows(events: list[dict]) -> list[tuple[str, float, float]]:
    """(name, start, end) per ProfilerStep: from the annotation's start to the
    later of its end and the end of the last device activity launched inside
    it; a step starts no earlier than the previous one ended."""
    steps = sorted(
        (e for e in events if e.get("ph") == "X" and category(e) in ("user_annotation", "cpu_op", "operator")
         and str(e.get("name", "")).startswith("ProfilerStep#")),
        key=lambda e: e["ts"],
    )
    launches = launches_by_correlation(events)
    ends = [s["ts"] + s["dur"] for s in steps]
    for e in events:
        if e.get("ph") == "X" and category(e) in ("kernel", "gpu_memcpy", "gpu_memset"):
            launch = launches.get((e.get("args") or {}).get("correlation"))
            if launch is None:
                continue
            for i, s in enumerate(steps):
                if s["ts"] <= launch["ts"] <= s["ts"] + s["dur"]:
                    ends[i] = max(ends[i], e["ts"] + e["dur"])
    out = []
    previous_end = float("-inf")
    for s, end in zip(steps, ends):
        start = max(s["ts"], previous_end)
        end = max(end, start)
        out.append((s["name"], start, end))
        previous_end = max(previous_end, end)
    return out
