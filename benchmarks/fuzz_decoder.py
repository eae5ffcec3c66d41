"""Decoder fuzz: mutated real traces must load or fail clearly.

    .venv/bin/python benchmarks/fuzz_decoder.py --cases 10000

Every case is a trace file made from a real one (../shared/traces, and a
trace recorded on the spot with samples/record_samples.py) by one mutation:
byte-level damage (truncation, flipped / inserted / deleted / duplicated
bytes, invalid UTF-8, splices of two traces), gzip damage (cut, corrupt,
garbage after it, concatenated members, bombs), structural damage (dropped
and wrongly typed fields, NaN / Infinity, huge numbers, deep values, huge
strings, cycles and duplicates in Python ids, flow ids and correlations),
events drawn by hypothesis, or a degenerate but valid trace
(benchmarks/degenerate.py: a million events at one instant, long same-name
chains, 100,000 threads or names, 20,000-deep module and operator chains,
flows fanning out to every event) at a random fraction of its full size,
sometimes with its events shuffled. A pool of worker processes loads each case the
way the plugin does (`TraceProcessor.load`), then computes and encodes every
view and the diff of the trace against itself (every case loads; every 2nd
computes the views, every 8th the diff views; see VIEWS_EVERY).

A case must end `loaded` (warnings allowed) or `failed` with a clear reason
(a `ValueError` with a message). Anything else counts against the run:
`unexpected` (another exception), `hang` (over `--timeout-s` of CPU time,
or ten times that of wall time; the worker is killed), `memory` (MemoryError under the worker's address-space limit, or
peak RSS growth over the case's bound, `_views.memory_bound_bytes` of its
file size: 100x a file of a few MB, 3x a large one), `crash` (the worker
died). `worst_memory_ratio` is the largest growth over its bound. Exit
status 0 only when all four are 0. Failing cases are kept in `--keep-dir`.
"""
from __future__ import annotations

import argparse
import copy
import gzip
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
from _views import memory_bound_bytes  # noqa: E402
SHARED = REPO.parent / "shared" / "traces"
MAX_SEED_EVENTS = 600
# The views cost more than the decode: every case loads, every 2nd computes
# the per-run views, every 8th the diff views too; cases with id cycles,
# deep values or hypothesis draws always get both.
VIEWS_EVERY, DIFF_EVERY = 2, 8
# Every 3rd case is also decoded by the fast paths and the reference path,
# which must agree exactly (`fast_paths_mismatch`).
FAST_PATHS_EVERY = 3
ALWAYS_VIEWS = ("s_id_cycles", "s_deep", "hypothesis", "d_")
DEGENERATE_SHARE = 0.1  # of the cases
GZIP_MAGIC = b"\x1f\x8b"
BAD_OUTCOMES = ("unexpected", "hang", "memory", "crash")


# ---- seeds ----------------------------------------------------------------------


def _load_doc(path: Path) -> dict:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc = json.loads(raw)
    return {"traceEvents": doc} if isinstance(doc, list) else doc


def load_seeds(recorded: list[Path]) -> list[dict]:
    """Real traces, each cut to its first MAX_SEED_EVENTS events (metadata kept)."""
    paths = sorted(SHARED.rglob("*.json.gz")) + sorted(SHARED.rglob("*.json")) + recorded
    seeds = []
    for p in paths:
        doc = _load_doc(p)
        events = doc.get("traceEvents") or []
        doc["traceEvents"] = events[:MAX_SEED_EVENTS]
        seeds.append(doc)
    if not seeds:
        sys.exit(f"no seed traces under {SHARED}")
    return seeds


def record_seed(out: Path) -> list[Path]:
    sys.path.insert(0, str(REPO / "samples"))
    import record_samples

    record_samples.record_run(str(out / "recorded"), layers=3, active_steps=2)
    return sorted((out / "recorded").glob("*.pt.trace.json*"))


def kineto_bytes(doc: dict) -> bytes:
    """Kineto's layout: metadata first, one event per line."""
    meta = {k: v for k, v in doc.items() if k != "traceEvents"}
    head = json.dumps(meta)[:-1] + (", " if meta else "") + '"traceEvents": [\n'
    return (head + ",\n".join(json.dumps(e) for e in doc["traceEvents"]) + "\n]}").encode()


# ---- mutations ------------------------------------------------------------------


def _pos(rng, data):
    return rng.randrange(max(len(data), 1))


def m_truncate(rng, data, seeds):
    return data[: _pos(rng, data)]


def m_flip(rng, data, seeds):
    b = bytearray(data)
    for _ in range(rng.choice((1, 2, 5, 20))):
        b[_pos(rng, b)] = rng.randrange(256)
    return bytes(b)


def m_insert(rng, data, seeds):
    at = _pos(rng, data)
    junk = rng.choice((b"{", b"}", b"[", b"]", b",", b'"', b"\\", b"\x00", b"NaN", b"-Infinity", b"1e999",
                       bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))))
    return data[:at] + junk + data[at:]


def m_delete(rng, data, seeds):
    a = _pos(rng, data)
    return data[:a] + data[a + rng.randrange(1, 4096):]


def m_duplicate(rng, data, seeds):
    a = _pos(rng, data)
    return data[:a] + data[a: a + rng.randrange(1, 65536)] + data[a:]


def m_invalid_utf8(rng, data, seeds):
    b = bytearray(data)
    for _ in range(rng.choice((1, 3, 50))):
        at = b.find(b'"name": "', _pos(rng, b))
        at = at + 9 if at >= 0 else _pos(rng, b)
        b[at:at] = rng.choice((b"\xfe", b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\x80"))
    return bytes(b)


def m_splice(rng, data, seeds):
    other = kineto_bytes(rng.choice(seeds))
    return data[: _pos(rng, data)] + other[_pos(rng, other):]


def m_not_json(rng, data, seeds):
    return rng.choice((b"", b"   ", b"null", b"[]", b"{}", b'{"traceEvents": 5}', b'{"traceEvents": {}}', b"[1,2,3]",
                       b'{"traceEvents": [1, "x", null, [], {}]}', bytes(rng.randrange(256) for _ in range(512))))


def _events(rng, seeds):
    doc = json.loads(json.dumps(rng.choice(seeds)))  # deep copy
    return doc, doc["traceEvents"]


def _some(rng, events, k=None):
    if not events:
        return []
    k = k or rng.choice((1, 3, 30, len(events)))
    return [rng.choice(events) for _ in range(min(k, len(events)))]


_FIELDS = ("ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "args", "bp")
_ARGS = ("External id", "correlation", "Python id", "Python parent id", "Input Dims", "device", "Bytes",
         "Total Allocated", "registers per thread", "grid", "name")
_ODD = (None, True, "", "12.5us", "NaN", [], {}, [1, [2]], {"a": 1}, -1, 0, 2 ** 64, -(2 ** 63) - 1, 1.5e308, "\u0000",
        "<script>", 10 ** 30)


def s_drop_fields(rng, seeds):
    doc, ev = _events(rng, seeds)
    for e in _some(rng, ev):
        for f in rng.sample(_FIELDS, rng.randrange(1, 4)):
            e.pop(f, None)
    return kineto_bytes(doc)


def s_wrong_types(rng, seeds):
    doc, ev = _events(rng, seeds)
    for e in _some(rng, ev):
        if rng.random() < 0.5:
            e[rng.choice(_FIELDS)] = copy.deepcopy(rng.choice(_ODD))
        else:
            e.setdefault("args", {})
            if isinstance(e["args"], dict):
                e["args"][rng.choice(_ARGS)] = copy.deepcopy(rng.choice(_ODD))
    if rng.random() < 0.2:
        doc[rng.choice(("deviceProperties", "distributedInfo", "baseTimeNanoseconds", "schemaVersion"))] = copy.deepcopy(rng.choice(_ODD))
    return kineto_bytes(doc)


def s_nan_inf(rng, seeds):
    doc, ev = _events(rng, seeds)
    token = rng.choice(("NaN", "Infinity", "-Infinity"))
    for e in _some(rng, ev):
        e[rng.choice(("ts", "dur", "pid"))] = "__TOKEN__"
    return kineto_bytes(doc).replace(b'"__TOKEN__"', token.encode())


def s_huge_numbers(rng, seeds):
    doc, ev = _events(rng, seeds)
    lit = rng.choice(("1" + "0" * 400, "-1" + "0" * 400, "1e400", "-1e400", "1e-400", "18446744073709551616",
                      "9" * 5000))
    for e in _some(rng, ev):
        target = e.setdefault("args", {}) if rng.random() < 0.5 and isinstance(e.get("args", {}), dict) else e
        target[rng.choice(("ts", "dur", "pid", "tid", "id", "Python id", "correlation", "Bytes", "zz"))] = "__BIG__"
    return kineto_bytes(doc).replace(b'"__BIG__"', lit.encode())


def s_deep(rng, seeds):
    doc, ev = _events(rng, seeds)
    depth = rng.choice((100, 1000, 10_000, 100_000))
    opener, closer = rng.choice((("[", "]"), ('{"a":', "}")))
    deep = opener * depth + "1" + closer * depth if opener != "[" else opener * depth + closer * depth
    where = rng.choice(("args", "unknown", "ts", "name", "header"))
    if where == "header":
        doc["zz"] = "__DEEP__"
    for e in _some(rng, ev, rng.choice((1, 3))):
        if where == "args" and isinstance(e.get("args"), dict):
            e["args"]["Input Dims"] = "__DEEP__"
        else:
            e[{"unknown": "zz", "ts": "ts", "name": "name"}.get(where, "zz")] = "__DEEP__"
    return kineto_bytes(doc).replace(b'"__DEEP__"', deep.encode())


def s_huge_strings(rng, seeds):
    doc, ev = _events(rng, seeds)
    for e in _some(rng, ev, 2):
        e[rng.choice(("name", "cat"))] = "x" * rng.choice((10_000, 1_000_000))
    return kineto_bytes(doc)


def s_id_cycles(rng, seeds):
    doc, ev = _events(rng, seeds)
    kind = rng.choice(("self", "cycle", "dup", "flow", "corr", "modules"))
    if kind == "modules" or not ev:
        n = rng.choice((1, 2, 50, 2000))
        ev[:] = [{"ph": "X", "cat": "python_function", "name": f"nn.Module: M_{i}", "pid": 1, "tid": 1,
                  "ts": rng.random() * 100, "dur": rng.random() * 100,
                  "args": {"Python id": rng.randrange(n), "Python parent id": rng.randrange(n)}} for i in range(n)]
    elif kind in ("self", "cycle", "dup"):
        pys = [e for e in ev if isinstance(e.get("args"), dict) and "Python id" in e["args"]] or ev
        for e in _some(rng, pys):
            a = e.setdefault("args", {}) if isinstance(e.get("args"), dict) else {}
            pid = a.get("Python id", 1)
            a["Python parent id"] = pid if kind == "self" else (pid + 1 if kind == "cycle" else a.get("Python parent id"))
            if kind == "dup":
                a["Python id"] = rng.choice((0, 1, 2))
    elif kind == "flow":
        for e in _some(rng, ev):
            e["ph"], e["id"], e["cat"] = rng.choice("stf"), rng.choice((1, 2)), rng.choice(("ac2g", "fwdbwd"))
            e.setdefault("bp", "e")
    else:
        for e in _some(rng, ev):
            e.setdefault("args", {})
            if isinstance(e["args"], dict):
                e["args"]["correlation"] = rng.choice((1, 2))
                e["args"]["External id"] = rng.choice((1, 2))
    return kineto_bytes(doc)


def s_shuffle(rng, seeds):
    doc, ev = _events(rng, seeds)
    rng.shuffle(ev)
    return kineto_bytes(doc)


DEGENERATE_SCALES = (0.001, 0.005, 0.02, 0.05)
DEGENERATE_FULL_EVERY = 100  # one degenerate case in this many is full size


def degenerate_case(rng, family: str) -> bytes:
    from degenerate import trace_bytes

    scale = 1.0 if rng.randrange(DEGENERATE_FULL_EVERY) == 0 else rng.choice(DEGENERATE_SCALES)
    data = trace_bytes(family, scale)
    if rng.random() < 0.3:  # any event order is valid
        head, _, body = data.partition(b"[\n")
        lines = body[: -len(b"\n]}")].split(b",\n")
        rng.shuffle(lines)
        data = head + b"[\n" + b",\n".join(lines) + b"\n]}"
    return data


def _gzip(data):
    return gzip.compress(data, compresslevel=1)


def g_good(rng, data, seeds):
    return _gzip(m_flip(rng, data, seeds) if rng.random() < 0.5 else data)


def g_cut(rng, data, seeds):
    gz = _gzip(data)
    return gz[: _pos(rng, gz)]


def g_corrupt(rng, data, seeds):
    gz = bytearray(_gzip(data))
    for _ in range(rng.choice((1, 3))):
        at = rng.choice((_pos(rng, gz), len(gz) - 1 - rng.randrange(min(len(gz), 16)), len(gz) - 2000 if len(gz) > 2000 else 0))
        gz[at] ^= 1 << rng.randrange(8)
    return bytes(gz)


def g_garbage(rng, data, seeds):
    return _gzip(data) + rng.choice((b"\x00" * 100, b"garbage", b"\x1f\x8b\x08junk", _gzip(b"]}"), b"\x1f"))


def g_members(rng, data, seeds):
    cut = _pos(rng, data)
    return _gzip(data[:cut]) + _gzip(data[cut:])


def g_bomb(rng, data, seeds):
    member = gzip.compress(rng.choice((b" ", b"\x00", b"[")) * (1 << 20), compresslevel=9)
    return member * rng.choice((80, 400, 2000))


BYTE_MUTATIONS = [m_truncate, m_flip, m_insert, m_delete, m_duplicate, m_invalid_utf8, m_splice, m_not_json,
                  g_good, g_cut, g_corrupt, g_garbage, g_members, g_bomb]
STRUCT_MUTATIONS = [s_drop_fields, s_wrong_types, s_nan_inf, s_huge_numbers, s_deep, s_huge_strings, s_id_cycles,
                    s_shuffle]


def hypothesis_cases(count: int, seed: int) -> list[bytes]:
    """Whole traces drawn by hypothesis: events with plausible and odd values."""
    from hypothesis import HealthCheck, given, settings, strategies as st

    json_leaf = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20)
    json_value = st.recursive(json_leaf, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)
    number = st.integers(min_value=-(2 ** 70), max_value=2 ** 70) | st.floats(allow_nan=False, allow_infinity=False) | json_value
    args = st.fixed_dictionaries({}, optional={k: number for k in _ARGS}) | json_value
    event = st.fixed_dictionaries({}, optional={
        "ph": st.sampled_from(["X", "B", "E", "i", "C", "M", "s", "t", "f", "q"]) | json_value,
        "cat": st.sampled_from(["cpu_op", "kernel", "cuda_runtime", "python_function", "user_annotation", "ac2g",
                                "fwdbwd", "gpu_memcpy", "Operator"]) | json_value,
        "name": st.sampled_from(["ProfilerStep#1", "nn.Module: A", "aten::mm", "[memory]", "process_name"]) | st.text(max_size=30),
        "pid": number, "tid": number, "ts": number, "dur": number, "id": number, "args": args,
    })
    docs = st.builds(lambda evs, meta: {**meta, "traceEvents": evs}, st.lists(event, max_size=60),
                     st.fixed_dictionaries({}, optional={"deviceProperties": json_value, "schemaVersion": json_value}))
    out: list[bytes] = []

    @settings(max_examples=count, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(docs)
    def collect(doc):
        if len(out) < count:
            out.append(json.dumps(doc).encode())

    collect()
    rng = random.Random(seed)
    while out and len(out) < count:  # hypothesis may stop early once its space is explored
        out.append(out[rng.randrange(len(out))])
    return out


def make_case(i: int, seed: int, seeds: list[dict], drawn: list[bytes]) -> tuple[str, bytes]:
    from degenerate import FAMILIES

    rng = random.Random(seed * 1_000_003 + i)
    r = rng.random()
    if drawn and r < 0.1:
        return "hypothesis", drawn[i % len(drawn)]
    if r < 0.1 + DEGENERATE_SHARE:
        family = rng.choice(FAMILIES)
        return f"d_{family}", degenerate_case(rng, family)
    if r < 0.5:
        fn = rng.choice(STRUCT_MUTATIONS)
        return fn.__name__, fn(rng, seeds)
    fn = rng.choice(BYTE_MUTATIONS)
    return fn.__name__, fn(rng, kineto_bytes(rng.choice(seeds)), seeds)


# ---- worker -----------------------------------------------------------------------


def _hwm() -> int:
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith("VmHWM")).split()[1]) * 1024


def _rss() -> int:
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith("VmRSS")).split()[1]) * 1024


def worker_main(limit_bytes: int, work: Path, seed: int) -> None:
    sys.path.insert(0, str(REPO))
    sys.path.insert(0, str(REPO / "benchmarks"))
    seeds = json.loads((work / "seeds.json").read_text())
    drawn = [d.encode() for d in json.loads((work / "drawn.json").read_text())]
    from _views import view_calls
    from tb_pipeline_plugin.trace.reader import TraceTooLarge

    view_calls("imports")  # imports now, so the address-space limit counts only the cases

    # Address-space limit: imports done, so only the case's own memory counts.
    vm = int(next(line for line in open("/proc/self/status") if line.startswith("VmSize")).split()[1]) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (vm + limit_bytes, vm + limit_bytes))
    for line in sys.stdin:
        # Cases are made here, in parallel: making one costs about as much as loading it.
        i = int(line)
        kind, data = make_case(i, seed, seeds, drawn)
        suffix = ".gz" if data[:2] == GZIP_MAGIC else ""
        path = work / f"case-{i}.pt.trace.json{suffix}"
        path.write_bytes(data)
        del data
        # 0: load only, 1: + per-run views, 2: + diff views
        level = 2 if kind.startswith(ALWAYS_VIEWS) or i % DIFF_EVERY == 0 else 1 if i % VIEWS_EVERY == 0 else 0
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")  # resets VmHWM: peak RSS per case
        except OSError:
            pass
        base = _rss()
        t0 = time.monotonic()
        result = {"outcome": "loaded", "detail": "", "warnings": 0, "kind": kind, "path": str(path)}
        try:
            load, per_run, diff = view_calls(str(path))
            tp = load()
            if level >= 1:
                per_run(tp)
            if level >= 2:
                diff(tp)
            result["warnings"] = len(tp.warnings)
        except MemoryError:
            result = {**result, "outcome": "memory", "detail": "MemoryError"}
        except Exception as exc:  # noqa: BLE001 - classifying is the point
            clear = type(exc) in (ValueError, TraceTooLarge) and str(exc).strip()
            detail = f"{type(exc).__name__}: {exc}"[:300]
            if not clear:
                detail += "\n" + "".join(traceback.format_exc(limit=-4))[-1500:]
            result = {**result, "outcome": "failed" if clear else "unexpected", "detail": detail}
        tp = None
        # The bound is the plugin's: the check below holds two decoded tables
        # at once, which loading never does.
        result["peak_growth"] = max(_hwm() - base, 0)
        if i % FAST_PATHS_EVERY == 0 and result["outcome"] in ("loaded", "failed"):
            mismatch = fast_paths_mismatch(path)
            if mismatch:
                result = {**result, "outcome": "unexpected", "detail": mismatch}
        result["seconds"] = round(time.monotonic() - t0, 3)
        result["file_bytes"] = path.stat().st_size
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()


def fast_paths_mismatch(path: Path) -> str | None:
    """Where decoding `path` by the fast paths (the event array guessed from
    the document's ends, ranges decoded by forked processes, chunks written
    by the compiled scanner) differs from the reference path (the whole
    structure read, one process, msgspec alone); None when the
    tables, or the refusals, are the same. Small chunks and ranges, so that
    a case of a few hundred KB splits into several."""
    import numpy as np

    from tb_pipeline_plugin.trace import decode as decode_module
    from tb_pipeline_plugin.trace.reader import TraceTooLarge, read_trace_bytes

    from tb_pipeline_plugin.trace import range_read, scan

    try:
        data, _ = read_trace_bytes(str(path))
    except (ValueError, TraceTooLarge):
        return None
    # Chunks of 4 KB, but no more than about 256 of them: a 100 MB degenerate
    # case in 4 KB chunks took 30 s of CPU here, the fuzz's own time limit.
    chunk_bytes = max(4 << 10, len(data) // 256)
    decode_module.SPLIT_MIN_BYTES = chunk_bytes
    range_read.EDGE_BYTES, range_read.WINDOW_BYTES = 8 << 10, 1 << 10
    outcomes = []
    scanner_available = scan.AVAILABLE
    for processes, guess in ((1, False), (3, True)):
        scan.AVAILABLE = scanner_available and guess
        try:
            outcomes.append(decode_module.decode_trace(data, chunk_bytes, processes=processes, guess=guess))
        except ValueError as exc:
            outcomes.append(f"ValueError: {exc}")
        finally:
            scan.AVAILABLE = scanner_available
    try:
        # The file read by the processes that decode it, each its own range
        # (or, where that path declines, the whole read): the loader's path.
        by_ranges = decode_module._load_by_ranges(str(path), 3, chunk_bytes=chunk_bytes)
    except ValueError as exc:
        return f"range reading raised ValueError: {exc}"  # it must decline, never refuse
    ref, fast = outcomes
    if by_ranges is not None and isinstance(ref, str):
        return f"range reading gave a table where the reference refused: {ref[:200]!r}"
    if isinstance(ref, str) or isinstance(fast, str):
        return None if ref == fast else f"fast paths: {str(fast)[:200]!r}, reference: {str(ref)[:200]!r}"
    for other in (fast, by_ranges):
        mismatch = _tables_differ(ref, other) if other is not None else None
        if mismatch:
            return mismatch
    return None


def _tables_differ(ref, fast) -> str | None:
    import numpy as np

    for name in ref.__dataclass_fields__:
        a, b = getattr(ref, name), getattr(fast, name)
        for sub in (a.__dataclass_fields__ if hasattr(a, "__dataclass_fields__") else [None]):
            x, y = (a, b) if sub is None else (getattr(a, sub), getattr(b, sub))
            same = (np.array_equal(x, y, equal_nan=x.dtype.kind == "f") if x.dtype != object else x.tolist() == y.tolist()) \
                if isinstance(x, np.ndarray) else x == y
            if not same:
                return f"fast paths differ from the reference decode in {name}{'.' + sub if sub else ''}"
    return None


# ---- driver ------------------------------------------------------------------------


def _case_path(work: Path, i: int) -> str | None:
    """The file of case `i` (a worker that hung or died did not report it)."""
    for suffix in (".gz", ""):
        p = work / f"case-{i}.pt.trace.json{suffix}"
        if p.exists():
            return str(p)
    return None


def _cpu_seconds(pid: int) -> float:
    """CPU time of a process and its waited-for children (the fast-path
    check forks): on a shared, oversubscribed box wall time mostly measures
    the neighbours."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


class Worker:
    def __init__(self, limit_bytes: int, work: Path, seed: int):
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", "--limit-bytes", str(limit_bytes), "--work", str(work),
             "--seed", str(seed)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1,
        )
        self.case = None
        self.started = 0.0
        self.cpu_started = 0.0

    def overdue(self, timeout_s: float) -> bool:
        """Past `timeout_s` of CPU on the case (making it included), or 10
        times that of wall time (a worker stuck without using CPU)."""
        return (_cpu_seconds(self.proc.pid) - self.cpu_started > timeout_s
                or time.monotonic() - self.started > 10 * timeout_s)

    def submit(self, case) -> None:
        self.case = case
        self.started = time.monotonic()
        self.cpu_started = _cpu_seconds(self.proc.pid)
        self.proc.stdin.write(f"{case}\n")
        self.proc.stdin.flush()

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()


def run(args) -> dict:
    import selectors

    work = Path(tempfile.mkdtemp(prefix="fuzz_decoder_"))
    keep = Path(args.keep_dir)
    try:
        recorded = [Path(p) for p in args.recorded]
        if args.record:
            recorded += record_seed(work)
        seeds = load_seeds(recorded)
        drawn = hypothesis_cases(max(args.cases // 10, 1), args.seed) if args.cases >= 10 else []
        (work / "seeds.json").write_text(json.dumps(seeds))
        (work / "drawn.json").write_text(json.dumps([d.decode() for d in drawn]))
        n_seeds = len(seeds)
        del seeds, drawn
        pending = list(range(args.first, args.first + args.cases))
        limit = args.memory_limit_mb << 20
        workers = [Worker(limit, work, args.seed) for _ in range(args.workers)]
        sel = selectors.DefaultSelector()
        for w in workers:
            sel.register(w.proc.stdout, selectors.EVENT_READ, w)
        outcomes: Counter = Counter()
        by_kind: dict[str, Counter] = {}
        bad: list[dict] = []
        peak = 0
        warned = 0
        worst = [0.0, None, None, 0, 0]  # growth / bound, case, kind, file bytes, growth
        t0 = time.monotonic()

        def next_case(w: Worker) -> None:
            if not pending:
                w.case = None
                return
            w.submit(pending.pop(0))

        def record(w: Worker, result: dict) -> None:
            nonlocal peak, warned
            i = w.case
            kind = result.get("kind") or make_case(i, args.seed, json.loads((work / "seeds.json").read_text()),
                                                   [d.encode() for d in json.loads((work / "drawn.json").read_text())])[0]
            path = result.get("path") or _case_path(work, i)
            bound = memory_bound_bytes(result.get("file_bytes", 0))
            ratio = result.get("peak_growth", 0) / bound
            if result["outcome"] in ("loaded", "failed") and ratio > 1:
                result = {**result, "outcome": "memory",
                          "detail": f"peak RSS growth {result['peak_growth'] >> 20} MB, over its bound of {bound >> 20} MB"}
            if ratio > worst[0]:
                worst[:] = [ratio, i, kind, result.get("file_bytes", 0), result.get("peak_growth", 0)]
            outcomes[result["outcome"]] += 1
            by_kind.setdefault(kind, Counter())[result["outcome"]] += 1
            peak = max(peak, result.get("peak_growth", 0))
            warned += result["outcome"] == "loaded" and result.get("warnings", 0) > 0
            if result["outcome"] in BAD_OUTCOMES:
                keep.mkdir(parents=True, exist_ok=True)
                if path and os.path.exists(path):
                    shutil.copy(path, keep / Path(path).name)
                bad.append({"case": i, **result, "kind": kind, "file": str(keep / Path(path).name) if path else None})
            if path and os.path.exists(path):
                os.unlink(path)

        def summary() -> dict:
            return {
                "cases": sum(outcomes.values()), "outcomes": dict(outcomes), "loaded_with_warnings": warned,
                "by_mutation": {k: dict(v) for k, v in sorted(by_kind.items())}, "seeds": n_seeds,
                "peak_growth_mb": round(peak / (1 << 20), 1), "seconds": round(time.monotonic() - t0, 1),
                "worst_memory_ratio": {"of_bound": round(worst[0], 3), "case": worst[1], "kind": worst[2],
                                       "file_mb": round(worst[3] / (1 << 20), 2),
                                       "growth_mb": round(worst[4] / (1 << 20), 1),
                                       "of_file": round(worst[4] / max(worst[3], 1), 1)},
                "bad": bad[:50],
            }

        reported = 0
        for w in workers:
            next_case(w)
        while any(w.case is not None for w in workers):
            for key, _ in sel.select(timeout=0.5):
                w = key.data
                line = w.proc.stdout.readline()
                if not line:  # the worker died
                    record(w, {"outcome": "crash", "detail": f"worker exited with {w.proc.wait()}"})
                    sel.unregister(w.proc.stdout)
                    fresh = Worker(limit, work, args.seed)
                    workers[workers.index(w)] = fresh
                    sel.register(fresh.proc.stdout, selectors.EVENT_READ, fresh)
                    next_case(fresh)
                    continue
                record(w, json.loads(line))
                next_case(w)
            for idx, w in enumerate(workers):
                if w.case is not None and w.overdue(args.timeout_s):
                    record(w, {"outcome": "hang", "detail": f"no answer after {args.timeout_s} s of CPU "
                                                            f"({time.monotonic() - w.started:.0f} s wall)"})
                    sel.unregister(w.proc.stdout)
                    w.kill()
                    fresh = Worker(limit, work, args.seed)
                    workers[idx] = fresh
                    sel.register(fresh.proc.stdout, selectors.EVENT_READ, fresh)
                    next_case(fresh)
            done = sum(outcomes.values())
            if args.progress and done and done % 500 == 0 and done != reported:
                reported = done
                print(f"  {done} cases, {dict(outcomes)}", file=sys.stderr, flush=True)
                if args.json:  # a run stopped early still leaves its figures
                    Path(args.json).write_text(json.dumps({**summary(), "partial": True}, indent=1))
        for w in workers:
            w.proc.stdin.close()
            w.kill()
        return summary()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", type=int, default=10_000)
    p.add_argument("--first", type=int, default=0,
                   help="number of the first case: runs over disjoint ranges split one long run")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=max(1, min(4, os.cpu_count() or 1)))
    p.add_argument("--timeout-s", type=float, default=30.0,
                   help="CPU seconds per case (or 10x that of wall time): slower counts as a hang")
    p.add_argument("--memory-limit-mb", type=int, default=3072, help="address space a worker may add (RLIMIT_AS)")
    p.add_argument("--recorded", nargs="*", default=[], help="more seed traces (recorded ones)")
    p.add_argument("--record", action=argparse.BooleanOptionalAction, default=True,
                   help="record a seed trace with samples/record_samples.py first")
    p.add_argument("--keep-dir", default=str(REPO / "benchmarks" / "out" / "fuzz"))
    p.add_argument("--json", help="write the summary here")
    p.add_argument("--progress", action="store_true")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--limit-bytes", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--work", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker_main(args.limit_bytes, Path(args.work), args.seed)
        return 0
    summary = run(args)
    text = json.dumps(summary, indent=1)
    if args.json:
        Path(args.json).write_text(text)
    print(text)
    bad = sum(summary["outcomes"].get(k, 0) for k in BAD_OUTCOMES)
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
