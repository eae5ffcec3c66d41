"""Degenerate but valid traces: the shapes that make a per-level or
per-thread loop quadratic (issue 23).

    from degenerate import FAMILIES, trace_bytes
    data = trace_bytes("deep_modules", scale=1.0)   # full size; 0.1 = a tenth

Every family is a valid Kineto trace (the fields and categories torch
writes) with one `ProfilerStep#1` annotation around the work, so the step,
piece and module passes all run. `FULL` is each family's full size (what
issue 23 names); `scale` multiplies it (at least 2).

- `same_instant`: one operator name repeated at one timestamp, same thread,
  same duration (every event nests in the previous one: depth = count).
- `same_name_chain`: operators strictly nested, one name (torch folds the
  whole chain into its top).
- `many_threads`: one operator and one child on each of that many threads.
- `many_names`: that many distinct operator names, each launching a kernel
  of its own name.
- `deep_modules`: `nn.Module` calls nested that deep (Python ids and parent
  ids as torch writes them), an operator with a kernel in the innermost.
- `deep_operators`: distinct operators nested that deep, a launch and its
  kernel in the innermost.
- `flow_fanout`: one `fwdbwd` flow and one `ac2g` flow whose ends bind to
  every operator / every kernel.
"""
from __future__ import annotations

import json

FULL = {
    "same_instant": 1_000_000,
    "same_name_chain": 200_000,
    "many_threads": 100_000,
    "many_names": 100_000,
    "deep_modules": 20_000,
    "deep_operators": 20_000,
    "flow_fanout": 100_000,
}
PID, TID = 1, 1
GPU_PID, STREAM = 0, 7


def _op(name: str, ts: float, dur: float, tid: int = TID, **args) -> dict:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": PID, "tid": tid, "ts": ts, "dur": dur,
            "args": {"External id": args.pop("ext", 0), **args}}


def _step(ts: float, dur: float, tid: int = TID) -> dict:
    return {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": PID, "tid": tid,
            "ts": ts, "dur": dur, "args": {}}


def _launch(ts: float, corr: int, tid: int = TID, ext: int = 0) -> dict:
    return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": PID, "tid": tid, "ts": ts,
            "dur": 1, "args": {"correlation": corr, "External id": ext}}


def _kernel(name: str, ts: float, dur: float, corr: int, ext: int = 0) -> dict:
    return {"ph": "X", "cat": "kernel", "name": name, "pid": GPU_PID, "tid": STREAM, "ts": ts, "dur": dur,
            "args": {"correlation": corr, "External id": ext, "device": 0, "stream": STREAM}}


def same_instant(n: int) -> list[dict]:
    return [_step(1000, 50)] + [_op("aten::same", 1000, 10, ext=i + 1) for i in range(n)]


def same_name_chain(n: int) -> list[dict]:
    span = 4 * n + 10
    return [_step(1000, span + 2)] + [_op("aten::add", 1001 + 2 * i, span - 4 * i, ext=i + 1) for i in range(n)]


def many_threads(n: int) -> list[dict]:
    out = [_step(1000, 100)]
    for t in range(n):
        out.append(_op("aten::linear", 1010 + t % 7, 20, tid=100 + t, ext=2 * t + 1))
        out.append(_op("aten::addmm", 1012 + t % 7, 10, tid=100 + t, ext=2 * t + 2))
    return out


def many_names(n: int) -> list[dict]:
    out = [_step(1000, 30 * n + 100)]
    for i in range(n):
        ts = 1010 + 30 * i
        out.append(_op(f"aten::op_{i}", ts, 20, ext=i + 1))
        out.append(_launch(ts + 5, i + 1, ext=i + 1))
        out.append(_kernel(f"kernel_{i}", ts + 10, 15, i + 1, ext=i + 1))
    return out


def deep_modules(n: int) -> list[dict]:
    span = 4 * n + 100
    out = [_step(1000, span + 10)]
    for i in range(n):
        out.append({"ph": "X", "cat": "python_function", "name": f"nn.Module: Block_{i}", "pid": PID, "tid": TID,
                    "ts": 1001 + 2 * i, "dur": span - 4 * i,
                    "args": {"Python id": i + 1, "Python parent id": i, "Python thread": 0}})
    inner = 1001 + 2 * n
    out.append(_op("aten::mm", inner, 20, ext=1))
    out.append(_launch(inner + 5, 1, ext=1))
    out.append(_kernel("gemm_kernel", inner + 10, 30, 1, ext=1))
    return out


def deep_operators(n: int) -> list[dict]:
    span = 4 * n + 100
    out = [_step(1000, span + 10)]
    out += [_op(f"aten::op_{i % 2}_{i}", 1001 + 2 * i, span - 4 * i, ext=i + 1) for i in range(n)]
    inner = 1001 + 2 * n
    out.append(_launch(inner + 5, 1, ext=n))
    out.append(_kernel("deep_kernel", inner + 10, 30, 1, ext=n))
    return out


def flow_fanout(n: int) -> list[dict]:
    out = [_step(1000, 20 * n + 100)]
    for i in range(n):
        ts = 1010 + 20 * i
        out.append(_op("aten::mul", ts, 10, ext=i + 1))
        # The ends of one flow id at every operator and every kernel: a
        # start that fans out to everything.
        out.append({"ph": "s" if i == 0 else "f", "cat": "fwdbwd", "id": 1, "pid": PID, "tid": TID, "ts": ts,
                    "bp": "e", "name": "fwdbwd"})
        out.append(_launch(ts + 2, 0))
        out.append(_kernel("mul_kernel", ts + 5, 5, -1))
        out.append({"ph": "s" if i == 0 else "f", "cat": "ac2g", "id": 7, "pid": GPU_PID if i else PID,
                    "tid": STREAM if i else TID, "ts": ts + 5 if i else ts + 2, "bp": "e", "name": "ac2g"})
    return out


GENERATORS = {f.__name__: f for f in (same_instant, same_name_chain, many_threads, many_names, deep_modules,
                                      deep_operators, flow_fanout)}
FAMILIES = tuple(GENERATORS)


def size_of(family: str, scale: float) -> int:
    return max(2, int(FULL[family] * scale))


def trace_bytes(family: str, scale: float = 1.0) -> bytes:
    """The family's trace at `scale` of its full size, in Kineto's layout
    (metadata first, one event per line)."""
    events = GENERATORS[family](size_of(family, scale))
    head = '{"schemaVersion": 1, "deviceProperties": [], "traceEvents": [\n'
    return (head + ",\n".join(json.dumps(e, separators=(",", ":")) for e in events) + "\n]}").encode()
