"""Independent oracles: numbers computed straight from the trace JSON with the
standard library, sharing no code with the plugin's decoder."""
from __future__ import annotations

import collections
import gzip
import json
import re


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


DEVICE_WORK_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset")
# As analysis/labels.py names it (spelled here too: the oracle imports nothing of the code under test).
BEFORE_WINDOW_NAME = "work launched before the profiled window"


def launched_before_window(events: list[dict]) -> set[int]:
    """id() of each device event launched before the profiled window: no
    launch event has its correlation, which is below every recorded
    launch's, and it started before the first launched work did."""
    launches = launches_by_correlation(events)
    device = [e for e in events if e.get("ph") == "X" and category(e) in DEVICE_WORK_CATEGORIES]
    linked = [e for e in device if (e.get("args") or {}).get("correlation") in launches]
    if not linked or not launches:
        return set()
    first_corr, first_ts = min(launches), min(e["ts"] for e in linked)
    out = set()
    for e in device:
        corr = (e.get("args") or {}).get("correlation")
        if corr is not None and corr not in launches and corr < first_corr and e["ts"] < first_ts:
            out.add(id(e))
    return out


def kernels_by_name(events: list[dict]) -> tuple[collections.Counter, dict[str, float]]:
    """Calls and µs per kernel name, the kernels launched before the window
    under one name of their own."""
    before = launched_before_window(events)
    calls: collections.Counter = collections.Counter()
    us: dict[str, float] = collections.defaultdict(float)
    for e in events:
        if e.get("ph") == "X" and category(e) == "kernel":
            name = BEFORE_WINDOW_NAME if id(e) in before else e["name"]
            calls[name] += 1
            us[name] += float(e.get("dur", 0))
    return calls, dict(us)


def device_step_intervals(path) -> list[dict]:
    """Per ProfilerStep annotation, in start order: its device work's count,
    first start, last end, summed duration, and the device step time (from
    the later of its first start and the previous steps' last end, to its
    last end)."""
    _, events = load_events(path)
    steps = sorted((e for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")
                    and category(e) in ("user_annotation", "cpu_op", "operator")), key=lambda e: e["ts"])
    launches = launches_by_correlation(events)
    out = [{"name": s["name"], "count": 0, "first": float("inf"), "last": float("-inf"), "work": 0.0} for s in steps]
    for e in events:
        if e.get("ph") != "X" or category(e) not in DEVICE_WORK_CATEGORIES:
            continue
        launch = launches.get((e.get("args") or {}).get("correlation"))
        if launch is None:
            continue  # launched before the profiled window: no step's
        for s, o in zip(steps, out):
            if s["ts"] <= launch["ts"] < s["ts"] + s["dur"]:
                o["count"] += 1
                o["first"] = min(o["first"], e["ts"])
                o["last"] = max(o["last"], e["ts"] + e["dur"])
                o["work"] += e["dur"]
    before = float("-inf")
    for o in out:
        o["step_us"] = o["last"] - max(o["first"], before) if o["count"] else None
        before = max(before, o["last"]) if o["count"] else before
    return out


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
    it; a step starts no earlier than the previous one ended. The first step
    starts no earlier than the end of device activity launched before it
    (a launch before its annotation, or none in the trace: launched before
    the profiler's window, when it started before the step's own first
    device activity), but no later than its own first device activity."""
    steps = sorted(
        (e for e in events if e.get("ph") == "X" and category(e) in ("user_annotation", "cpu_op", "operator")
         and str(e.get("name", "")).startswith("ProfilerStep#")),
        key=lambda e: e["ts"],
    )
    launches = launches_by_correlation(events)
    ends = [s["ts"] + s["dur"] for s in steps]
    before_first = float("-inf")
    first_own = float("inf")
    unlaunched, any_launched = [], False
    for e in events:
        if e.get("ph") == "X" and category(e) in ("kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"):
            launch = launches.get((e.get("args") or {}).get("correlation"))
            if not steps:
                continue
            if launch is None:
                unlaunched.append(e)
                continue
            any_launched = True
            if launch["ts"] < steps[0]["ts"]:
                before_first = max(before_first, e["ts"] + e["dur"])
            for i, s in enumerate(steps):
                if s["ts"] <= launch["ts"] <= s["ts"] + s["dur"]:
                    ends[i] = max(ends[i], e["ts"] + e["dur"])
                    if i == 0:
                        first_own = min(first_own, e["ts"])
    if any_launched:
        # Only a trace with launches tells work launched before the window from work it cannot link.
        own_from = first_own if first_own < float("inf") else steps[0]["ts"] + steps[0]["dur"]
        for e in unlaunched:
            if e["ts"] < own_from:
                before_first = max(before_first, e["ts"] + e["dur"])
    out = []
    previous_end = min(before_first, first_own)
    for s, end in zip(steps, ends):
        start = max(s["ts"], previous_end)
        end = max(end, start)
        out.append((s["name"], start, end))
        previous_end = max(previous_end, end)
    return out


_DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "memcpy", "gpu_memset", "memset", "gpu_user_annotation", "trace")
_OPERATOR_CATEGORIES = ("cpu_op", "operator")


def _is_host(e: dict) -> bool:
    return e.get("ph") == "X" and category(e) not in _DEVICE_CATEGORIES


class _Node:
    __slots__ = ("e", "parent", "children", "device_us")

    def __init__(self, e):
        self.e, self.parent, self.children, self.device_us = e, None, [], 0.0


def operator_key_averages(events: list[dict]) -> dict[str, dict]:
    """Per operator name, what torch's `key_averages()` reports, computed the
    way torch does it: host events nested per thread with a stack; kernels
    (and memcpy / memset) given to the operator their launch's External id
    names, else to the innermost operator around the launch; then
    `EventList._remove_dup_nodes` run literally (an operator whose parent has
    its name and no other child is dropped, the parent takes its children and
    kernels), repeated until nothing changes."""
    def device_total(n) -> float:
        return n.device_us + sum(device_total(c) for c in n.children)

    out: dict[str, dict] = {}
    for n in _torch_operator_nodes(events):
        row = out.setdefault(n.e["name"], {"calls": 0, "host_total_us": 0.0, "host_self_us": 0.0,
                                           "device_self_us": 0.0, "device_total_us": 0.0})
        row["calls"] += 1
        row["host_total_us"] += n.e["dur"]
        row["host_self_us"] += n.e["dur"] - sum(c.e["dur"] for c in n.children)
        row["device_self_us"] += n.device_us
        row["device_total_us"] += device_total(n)
    return out


def torch_operator_events(events: list[dict]) -> list[dict]:
    """The operator events torch's key_averages() counts (same-name folding done)."""
    return [n.e for n in _torch_operator_nodes(events)]


def _torch_operator_nodes(events: list[dict]) -> list[_Node]:
    """Operator nodes left after torch's folding, with their children and device µs."""
    nodes = [_Node(e) for e in events if _is_host(e)]
    by_thread: dict = collections.defaultdict(list)
    for n in nodes:
        by_thread[(n.e.get("pid"), str(n.e.get("tid")))].append(n)
    # Relative times: µs since the epoch as float64 keep only ~0.25 µs, so
    # start + duration would round sequential events into each other.
    base = min((n.e["ts"] for n in nodes), default=0.0)
    start = {id(n): n.e["ts"] - base for n in nodes}
    end = {id(n): start[id(n)] + n.e["dur"] for n in nodes}
    for thread_nodes in by_thread.values():
        thread_nodes.sort(key=lambda n: (start[id(n)], -end[id(n)]))
        stack: list = []
        for n in thread_nodes:
            # torch's _populate_cpu_children: a child lies in [start, end) of its parent.
            while stack and (start[id(n)] >= end[id(stack[-1])] or end[id(n)] > end[id(stack[-1])]):
                stack.pop()
            if stack:
                n.parent = stack[-1]
                stack[-1].children.append(n)
            stack.append(n)
    is_op = lambda n: category(n.e) in _OPERATOR_CATEGORIES  # noqa: E731
    op_by_ext = {}
    for n in nodes:
        ext = (n.e.get("args") or {}).get("External id")
        if is_op(n) and ext is not None:
            op_by_ext.setdefault(ext, []).append(n)
    launch_node = {}
    for n in nodes:
        corr = (n.e.get("args") or {}).get("correlation")
        if corr is not None:
            launch_node[corr] = n
    for e in events:
        if e.get("ph") != "X" or category(e) not in ("kernel", "gpu_memcpy", "memcpy", "gpu_memset", "memset"):
            continue
        launch = launch_node.get((e.get("args") or {}).get("correlation"))
        if launch is None:
            continue
        args = launch.e.get("args") or {}
        named = op_by_ext.get(args.get("External id", args.get("external id")), [])
        owner = named[0] if len(named) == 1 else None
        if owner is None:
            owner = launch.parent
            while owner is not None and not is_op(owner):
                owner = owner.parent
        if owner is not None:
            owner.device_us += float(e["dur"])
    alive = list(nodes)
    while True:
        dropped = set()
        for n in alive:
            p = n.parent
            if p is not None and p.e["name"] == n.e["name"] and len(p.children) == 1:
                p.children = n.children
                p.device_us = n.device_us  # torch: "lift kernels up"
                for c in n.children:
                    c.parent = p
                dropped.add(id(n))
        if not dropped:
            break
        alive = [n for n in alive if id(n) not in dropped]
    return [n for n in alive if is_op(n)]


def trailing_steps_without_device_work(events: list[dict]) -> int:
    """How many of the last ProfilerSteps launched no device activity while
    an earlier step did (0 when no step launched any)."""
    steps = sorted(
        (e for e in events if e.get("ph") == "X" and category(e) in ("user_annotation", "cpu_op", "operator")
         and str(e.get("name", "")).startswith("ProfilerStep#")),
        key=lambda e: e["ts"],
    )
    launches = launches_by_correlation(events)
    launched = [0] * len(steps)
    for e in events:
        if e.get("ph") == "X" and category(e) in ("kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"):
            launch = launches.get((e.get("args") or {}).get("correlation"))
            for i, s in enumerate(steps if launch is not None else ()):
                if s["ts"] <= launch["ts"] <= s["ts"] + s["dur"]:
                    launched[i] += 1
    if not any(launched):
        return 0
    return len(steps) - 1 - max(i for i, n in enumerate(launched) if n)


def composer_steps(path) -> list[dict]:
    """Steps of one Composer trace file (JSONTraceHandler, B/E pairs per name
    and thread): each from its `event/dataloader` begin to the next one's, the
    last to the end of its `event/batch`; `wait_us` its dataloader span."""
    _, events = load_events(path)
    open_spans: dict = collections.defaultdict(list)
    spans: dict = collections.defaultdict(list)
    for e in sorted((e for e in events if e.get("ph") in ("B", "E")), key=lambda e: e["ts"]):
        key = (e["name"], e.get("tid"))
        if e["ph"] == "B":
            open_spans[key].append(e["ts"])
        elif open_spans[key]:
            spans[e["name"]].append((open_spans[key].pop(), e["ts"]))
    loads = sorted(spans["event/dataloader"])
    batches = sorted(spans["event/batch"])
    out = []
    for i, (begin, end) in enumerate(loads):
        if i + 1 < len(loads):
            step_end = loads[i + 1][0]
        else:
            step_end = max([e for b, e in batches if b >= begin] + [begin])
        out.append({"start_us": begin, "end_us": step_end, "wait_us": end - begin})
    return out


def bracket_depth(body: bytes) -> int:
    """Bracket nesting of a JSON text (names here hold no brackets): a tree
    too deep for Python's JSON decoder is checked on its bytes."""
    depth = deepest = 0
    for c in re.findall(rb"[][{}]", body):
        depth += 1 if c in (b"[", b"{") else -1
        deepest = max(deepest, depth)
    return deepest


def settled_steps(steps: list[dict], warmup_factor: float = 1.5, warmup_max: int = 3,
                  epilogue_factor: float = 3.0, profiler_starts: tuple = ()) -> list[dict]:
    """Step records (one recording) without warm-up and the loop's
    epilogue, by docs/pipeline_format.md's rule: the leading steps (at most
    `warmup_max`) slower than `warmup_factor` times the usual step (the
    median past them, the last step left out), and the first step starting
    at or after each of `profiler_starts` (the launcher's profiler records'
    `wall_time_s`) when it is slower than that too."""
    ordered = sorted(steps, key=lambda s: s["wall_start_s"])
    if len(ordered) < 4:
        return ordered
    durations = [s["duration_s"] for s in ordered]
    rest = durations[warmup_max:-1] if len(ordered) > warmup_max + 2 else durations[1:-1]
    usual = sorted(rest)[len(rest) // 2] if len(rest) % 2 else sum(sorted(rest)[len(rest) // 2 - 1:len(rest) // 2 + 1]) / 2
    start = 0
    while start < min(warmup_max, len(ordered) - 1) and durations[start] > warmup_factor * usual:
        start += 1
    dropped = set(range(start))
    for t in profiler_starts:
        first = next((i for i, s in enumerate(ordered) if s["wall_start_s"] >= t), None)
        if first is not None and durations[first] > warmup_factor * usual:
            dropped.add(first)
    return [s for i, s in enumerate(ordered) if i not in dropped]
