"""Pure implementations of the per-run routes (no HTTP, no loading)."""
from __future__ import annotations

from .analysis.operators import GROUP_BY
from .errors import BadRequest
from .store import LoadState
from .trace_processor import TraceProcessor


def runs_impl(runs: dict, states: dict[str, LoadState]) -> dict:
    """`states`: load state of each run's default trace (runs without traces absent)."""
    out = []
    for name, info in runs.items():
        state = states.get(name)
        status = state.status if state else "ready"
        out.append({
            "name": name,
            "workers": info.workers(),
            "kinds": list(info.kinds),
            "status": status,
            "error": state.error if state and status == "failed" else None,
            "warnings": (list(state.warnings) if state else []) + list(getattr(info, "notes", [])),
        })
    return {"runs": out, "loading": any(r["status"] == "loading" for r in out)}


def selection(run: str, worker: str, span: str) -> dict:
    return {"run": run, "worker": worker, "span": span}


def overview_impl(tp: TraceProcessor, sel: dict) -> dict:
    return {**sel, **tp.overview()}


def parse_group_by(raw: str | None) -> str:
    group_by = raw or "name"
    if group_by not in GROUP_BY:
        raise BadRequest(f"group_by must be one of {', '.join(GROUP_BY)}, got {group_by!r}")
    return group_by


def operators_impl(tp: TraceProcessor, group_by: str | None) -> dict:
    group_by = parse_group_by(group_by)
    frame = tp.operators(group_by)
    return {
        "group_by": group_by,
        "device_present": tp.linked.has_device,
        "total": len(frame),
        "rows": frame.to_dict("records"),
    }


def kernels_impl(tp: TraceProcessor) -> dict:
    frame = tp.kernels()
    return {"total": len(frame), "rows": frame.to_dict("records")}


def modules_impl(tp: TraceProcessor) -> dict:
    return {"roots": tp.modules()}
