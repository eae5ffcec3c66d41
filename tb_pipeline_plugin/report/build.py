"""A `Report` (report/model.py) from a comparison: the routes' answers for
the pair (through compare.py's Comparison, which calls the same impls as
the routes), cut to the first `top` rows, and each gate's outcome.

Nothing here computes a number of its own: every value is the answer's, so
each format shows what TensorBoard shows for the same pair
(tests/report/test_report.py checks it against the real app); a
contributor's Δ %, which the explanation does not give, is diff/delta.py's
of its own figures.
"""
from __future__ import annotations

import math

import msgspec
import numpy as np

from ..compare import Comparison
from ..diff.delta import delta_pct, pct_name
from ..diff.table_view import KERNEL_PRIMARY
from .gates import Gate, exit_status, judge
from .model import REPORT_VERSION, Report


def build(c: Comparison, sources: tuple[str, str], top: int, gates: list[Gate] = (),
          require_significance: bool = False) -> Report:
    ex = c.explanation
    step = ex["step"]
    sig = step["significance"]
    overview = c.overview_answer
    gate_results = judge(list(gates), {r["metric"]: r for r in overview["rows"]}, require_significance)
    report = {
        "report_version": REPORT_VERSION,
        "top": top,
        "baseline": _side(sources[0], sig, "baseline"),
        "experimental": _side(sources[1], sig, "experimental"),
        "device_present": ex["device_present"],
        "clock": ex["clock"],
        "sentence": ex["sentence"],
        "step": {**{k: step[k] for k in ("baseline_us", "experimental_us", "delta_us", "delta_pct", "significance",
                                         "source", "unit", "per_step", "baseline_per_s", "experimental_per_s",
                                         "basis", "rest_delta_us", "rest_share_pct")},
                 "direction": direction(step["delta_us"])},
        "noise": {**ex["noise"], "between_run_pct": ex["between_run_pct"]},
        "conclusive": ex["conclusive"],
        "note": ex["note"],
        "contributors": [{**{k: c_[k] for k in ("kind", "key", "name", "status", "baseline_us", "experimental_us",
                                                "delta_us", "share_pct", "significance")},
                          "delta_pct": delta_pct(c_["baseline_us"], c_["delta_us"])}
                         for c_ in ex["contributors"][:top]],
        "contributors_total": len(ex["contributors"]),
        "waterfall": [{k: b[k] for k in ("label", "kind", "start_us", "end_us", "verdict", "verdict_label")}
                      for b in ex["waterfall"]],
        "overview": [_metric(r["metric"], r["label"], r["unit"], r["baseline"], r["experimental"], r["delta"],
                             r["delta_pct"], r.get("significance")) for r in overview["rows"]],
        "overview_note": overview["note"],
        "pipeline": pipeline(ex["pipeline"]),
        "operators": _table(c.operator_page(top), c.operator_primary),
        "kernels": _table(c.kernel_page(top), KERNEL_PRIMARY),
        "memory": _memory(c.memory, top),
        "step_times": _step_times(*c.step_times),
        "gates": gate_results,
        "exit_status": exit_status(gate_results),
        "units": overview["units"],
        "comparability": overview["comparability"],
    }
    return msgspec.convert(report, Report)


def direction(delta: float) -> str:
    """The word a delta's sign means: + slower, − faster."""
    return "slower" if delta > 0 else "faster" if delta < 0 else "unchanged"


def _side(source: str, sig: dict, side: str) -> dict:
    return {"source": source, "steps": sig[f"{side}_steps"], "recordings": sig[f"{side}_recordings"]}


def _metric(name, label, unit, baseline, experimental, delta, delta_pct, significance=None) -> dict:
    return {"name": name, "label": label, "unit": unit, "baseline": _plain(baseline),
            "experimental": _plain(experimental), "delta": _plain(delta), "delta_pct": _plain(delta_pct),
            "significance": significance}


def pipeline(part: dict | None) -> dict | None:
    """The explanation's pipeline part as rows: the data wait (judged), its
    share of the step, the input-bound verdicts, the stage that changed most."""
    if part is None:
        return None
    w, ib, st = part["data_wait"], part["input_bound"], part["stage"]
    rows = [
        _metric("data_wait_us", "Data wait per step", "us", w["baseline_us"], w["experimental_us"], w["delta_us"],
                w["delta_pct"], w["significance"]),
        _metric("data_wait_pct", "Data wait, % of the step", "pct", ib["baseline_data_wait_pct"],
                ib["experimental_data_wait_pct"], None, None),
        _metric("input_bound", "Input-bound", None, ib["baseline"], ib["experimental"], None, None),
    ]
    if st is not None:
        stage_rows = [
            _metric("stage_task_mean_us", f"Stage {st['stage']}: mean task time", "us",
                    to_us(st["baseline_task_mean_s"]), to_us(st["experimental_task_mean_s"]), None,
                    st["delta_task_mean_pct"]),
            _metric("stage_qps", f"Stage {st['stage']}: throughput", "items_per_s", st["baseline_qps"],
                    st["experimental_qps"], None, st["delta_qps_pct"]),
        ]
        # A stage without task timings (or without a throughput) has nothing to show in that row.
        rows += [m for m in stage_rows if m["baseline"] is not None or m["experimental"] is not None]
    notes = []
    if part.get("gil") is not None:
        g = part["gil"]
        notes.append(f"GIL-bound ({g['run']}): stage {g['stage']} limits the pipeline; more threads will not help, "
                     "processes or a GIL-releasing implementation would")
    if part.get("loader") is not None:
        ld = part["loader"]
        notes.append(f"DataLoader ({ld['run']}): {ld['part']} limits loading ({ld['stage']})")
    return {"clause": part["clause"], "rows": rows, "notes": notes}


def to_us(seconds: float | None) -> float | None:
    """The stage's seconds in the report's µs."""
    return None if seconds is None else seconds * 1e6


def _table(answer: dict, measure: str) -> dict:
    rows = [{"name": r["name"], "short_name": r.get("short_name"), "input_shape": r.get("input_shape"),
             "baseline_calls": _plain(r["baseline_calls"]),
             "experimental_calls": _plain(r["experimental_calls"]), "baseline_us": _plain(r[f"baseline_{measure}"]),
             "experimental_us": _plain(r[f"experimental_{measure}"]), "delta_us": _plain(r[f"delta_{measure}"]),
             "delta_pct": _plain(r[pct_name(measure)]), "significance": r.get("significance")}
            for r in answer["rows"]]
    return {"measure": measure, "per_unit": answer["per_unit"], "total": answer["total"], "rows": rows}


def _memory(answer: dict, top: int) -> dict:
    shown = next((d for d in answer["devices"] if d["device"] == answer["device"]), None)
    out = {"sentence": answer["sentence"], "message": answer["message"], "device": answer["device"],
           "baseline_peak_bytes": None, "experimental_peak_bytes": None, "growth_bytes": None, "growth_pct": None,
           "rows": [], "snapshot_rows": _snapshot_rows(answer.get("snapshot"), top)}
    if shown is None:
        return out
    for side in ("baseline", "experimental"):
        out[f"{side}_peak_bytes"] = shown[side]["peak_bytes"] if shown[side] else None
    out["growth_bytes"], out["growth_pct"] = shown["growth_bytes"], shown["growth_pct"]
    out["rows"] = [_metric(r["key"], " · ".join(p for p in (r["key"], r["phase"], r["detail"]) if p), "bytes",
                           r["baseline_bytes"], r["experimental_bytes"], r["delta_bytes"], r["delta_pct"])
                   for r in shown["by_module"][:top]]
    return out


def _snapshot_rows(snapshot: dict | None, top: int) -> list[dict]:
    """Each device's snapshot metrics, then what was live at the peaks by
    category (largest change first, `top` of them), as metric rows."""
    if not snapshot:
        return []
    out = []
    for device in snapshot["devices"]:
        for m in device["metrics"]:
            out.append(_metric(f"snapshot.{device['device']}.{m['metric']}", f"{device['device']} · {m['metric']}",
                               "bytes", m["baseline_bytes"], m["experimental_bytes"], m["delta_bytes"], m["delta_pct"]))
        for r in device["by_category"][:top]:
            out.append(_metric(f"snapshot.{device['device']}.live.{r['key']}", f"{device['device']} · live at the peak: "
                               f"{r['key']}", "bytes", r["baseline_bytes"], r["experimental_bytes"], r["delta_bytes"],
                               r["delta_pct"]))
    return out


def _step_times(b: dict, e: dict) -> dict:
    def recording(of_step) -> list[int]:
        return [] if of_step is None else [int(i) + 1 for i in of_step]

    return {"baseline_us": [s["duration_us"] for s in b["steps"]],
            "experimental_us": [s["duration_us"] for s in e["steps"]],
            "baseline_recording": recording(b["recording_of_step"]),
            "experimental_recording": recording(e["recording_of_step"])}


def _plain(v):
    """numpy scalars as Python numbers, NaN as None (JSON has no NaN)."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v
