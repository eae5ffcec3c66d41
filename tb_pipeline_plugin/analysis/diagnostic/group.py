"""A group of recordings' diagnostic results seen as one run: the
recordings' sweeps pooled level by level into one list of records, which
`analysis.diagnostic.report` and `diff.diagnostic` read as one run's.

Per level (stage, executor, concurrency) measured by several recordings:

* QPS: the geometric mean of the recordings' QPS (the spreads and every
  comparison are of log QPS); CPU %, latencies: the mean; items, errors and
  the measured window add up; peak memory: the largest; the slices of every
  recording pooled (the CPU % interval reads them);
* the spread (`qps_log_sd`, read by spread.level_spread instead of
  the slices' spread plus the assumed between-recordings term): measured.
  The recordings of a level scatter by the machine's state as much as by
  their slices; one recording's deviation from its level's mean log QPS is
  pooled over every level the group measured more than once (the machine
  scatters all levels alike, which is what the assumed
  `BETWEEN_RECORDINGS_PCT` said; a handful of recordings per level alone
  would give two degrees of freedom), so a level's mean of R recordings has
  a standard deviation of s / sqrt(R), never less than its slices' own
  standard error. Since every interval is drawn at the normal quantile,
  the spread is widened by t(df) / z so that those intervals are Student t
  intervals on the pooled degrees of freedom;
* a level only one recording measured keeps that recording's slices, and
  its interval as a single recording's.

The GIL-held share of a stage: the mean over the recordings that sampled
it, with a spread measured the same way (pooled over stages, t-widened);
its top holders are the recordings' samples added up. Stage summaries and
the environment are the first recording's; the sweep ended (`complete`)
only when every recording's did.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..t_quantile import t_quantile
from .report import as_dicts
from .spread import CONFIDENCE, MIN_SLICES, Z

_TOP_HOLDERS = 10
_Q = 0.5 + CONFIDENCE / 2


@dataclass
class DiagnosticGroup:
    """Reads as a `readers.diagnostic.DiagnosticRun` (path, records,
    warnings, complete, cut_short), pooled over `recording_names`."""

    path: Path
    records: list[dict]
    recording_names: list[str]
    warnings: list[str] = field(default_factory=list)
    complete: bool = False
    cut_short: bool = False
    torn_tail: bool = False
    # The measured spread: one recording's log-QPS standard deviation (pooled over levels) and its
    # degrees of freedom; None where no level was measured twice.
    qps_log_sd: float | None = None
    qps_df: int = 0

    @property
    def group(self) -> dict:
        """The `group` part of its report (analysis.diagnostic.report)."""
        return group_part(self)


def _widen(df: int) -> float:
    """t(df) / z at the intervals' confidence: a normal-quantile interval on
    the widened spread is the Student t interval."""
    return float(t_quantile(_Q, df)) / Z


def _slices_rel_se(point: dict) -> float:
    values = np.asarray(point.get("slice_qps") or (), dtype=float)
    qps = float(point["qps"])
    if len(values) < MIN_SLICES or not qps > 0:
        return 0.0
    return float(values.std(ddof=1)) / (qps * math.sqrt(len(values)))


def _pooled_sd(groups: list[np.ndarray]) -> tuple[float | None, int]:
    """The pooled standard deviation of values around their own group's
    mean, and its degrees of freedom (groups of one add none)."""
    df = sum(len(g) - 1 for g in groups if len(g) > 1)
    if df == 0:
        return None, 0
    ss = sum(float(((g - g.mean()) ** 2).sum()) for g in groups if len(g) > 1)
    return math.sqrt(ss / df), df


def _pool_sweeps(points_by_level: dict[tuple, list[dict]]) -> tuple[list[dict], float | None, int]:
    logs = [np.log([float(p["qps"]) for p in pts]) for pts in points_by_level.values()
            if all(float(p["qps"]) > 0 for p in pts)]
    sd, df = _pooled_sd(logs)
    out = []
    for (stage, executor, concurrency), pts in points_by_level.items():
        if len(pts) == 1:
            out.append(dict(pts[0]))
            continue
        qps = [float(p["qps"]) for p in pts]
        pooled = {
            "type": "sweep", "stage": stage, "executor": executor, "concurrency": concurrency,
            "qps": float(np.exp(np.mean(np.log(qps)))) if all(q > 0 for q in qps) else float(np.mean(qps)),
            "items": int(sum(p["items"] for p in pts)), "errors": int(sum(p.get("errors", 0) for p in pts)),
            "duration_s": float(sum(p["duration_s"] for p in pts)),
            "cut_short": any(p.get("cut_short", False) for p in pts),
            "first_error": next((p["first_error"] for p in pts if p.get("first_error")), ""),
            "peak_memory_bytes": int(max(p["peak_memory_bytes"] for p in pts)),
            **{k: float(np.mean([float(p.get(k, 0.0)) for p in pts]))
               for k in ("p50_latency_s", "p90_latency_s", "cpu_pct", "machine_cpu_pct", "caller_cpu_pct")},
            "intra_op_threads": int(max(int(p.get("intra_op_threads", 0)) for p in pts)),
            "cut_reason": next((p["cut_reason"] for p in pts if p.get("cut_reason")), ""),
            **{k: [v for p in pts for v in (p.get(k) or ())]
               for k in ("slice_qps", "slice_cpu_pct", "slice_machine_cpu_pct")},
            "recordings": len(pts),
        }
        if sd is not None and all(q > 0 for q in qps):
            slices = math.sqrt(np.mean([_slices_rel_se(p) ** 2 for p in pts]) / len(pts))
            pooled["qps_log_sd"] = max(sd / math.sqrt(len(pts)), slices) * _widen(df)
        out.append(pooled)
    return out, sd, df


def _pool_gil(records: list[dict]) -> list[dict]:
    """One `gil` record per stage: the sampled recordings' shares (module docstring)."""
    by_stage: dict[str, list[dict]] = {}
    for r in records:
        by_stage.setdefault(r["stage"], []).append(r)
    sampled = {s: [r for r in rs if not r.get("skipped")] for s, rs in by_stage.items()}
    sd, df = _pooled_sd([np.array([float(r.get("held_share", 0.0)) for r in rs]) for rs in sampled.values()])
    out = []
    for stage, rs in by_stage.items():
        used = sampled[stage]
        if len(used) <= 1:
            out.append(dict(used[0] if used else rs[0]))
            continue
        holders: dict[tuple, int] = {}
        for r in used:
            for f in r.get("top") or ():
                key = (f["function"], f["file"], f["line"])
                holders[key] = holders.get(key, 0) + int(f["samples"])
        total = sum(holders.values()) or 1
        top = sorted(holders.items(), key=lambda kv: -kv[1])[:_TOP_HOLDERS]
        share = float(np.mean([float(r.get("held_share", 0.0)) for r in used]))
        taken = sum(_samples_taken(r) for r in used)
        binomial = math.sqrt(share * (1.0 - share) / taken) if taken >= 1 else 0.5
        pooled = {
            "type": "gil", "stage": stage, "concurrency": used[0]["concurrency"],
            "sampler": used[0].get("sampler", ""), "held_share": share,
            "total_samples": int(sum(int(r.get("total_samples", 0)) for r in used)),
            "rate_hz": used[0].get("rate_hz", 0), "duration_s": float(sum(float(r.get("duration_s", 0.0)) for r in used)),
            "top": [{"function": k[0], "file": k[1], "line": k[2], "samples": n, "share": n / total} for k, n in top],
            "skipped": "", "recordings": len(used),
        }
        # `sd` exists: this stage was sampled more than once. Never below the pooled samples' own spread.
        pooled["share_sd"] = max(sd / math.sqrt(len(used)), binomial) * _widen(df)
        out.append(pooled)
    return out


def _samples_taken(record: dict) -> float:
    """py-spy samples taken (held or not), as spread.gil_share_sd counts them."""
    share, held = float(record.get("held_share", 0.0)), int(record.get("total_samples", 0))
    return held / share if share > 0 and held else float(record.get("rate_hz", 0)) * float(record.get("duration_s", 0))


def pool_diagnostic(runs: list, names: list[str]) -> DiagnosticGroup:
    """The recordings' results (`readers.diagnostic.DiagnosticRun`, one per
    name) as one run (module docstring)."""
    if not runs or len(runs) != len(names):
        raise ValueError("a group needs one name per recording, and at least one recording")
    every = [as_dicts(r.records) for r in runs]
    first = every[0]
    points: dict[tuple, list[dict]] = {}
    gil, stages = [], {}
    for records in every:
        for r in records:
            kind = r.get("type")
            if kind == "sweep":
                points.setdefault((r["stage"], r["executor"], int(r["concurrency"])), []).append(r)
            elif kind == "gil":
                gil.append(r)
            elif kind == "stage":
                stages.setdefault(r["stage"], r)  # the first recording's summary of each stage
    environment = [r for r in first if r.get("type") == "environment"][:1]
    ends = [next((r for r in reversed(records) if r.get("type") == "end"), None) for records in every]
    sweeps, sd, df = _pool_sweeps(points)
    pooled = [*environment, *stages.values(), *sweeps, *_pool_gil(gil)]
    if all(e is not None for e in ends):
        pooled.append({"type": "end", "wall_time_s": max(float(e["wall_time_s"]) for e in ends),
                       "elapsed_s": float(sum(float(e["elapsed_s"]) for e in ends)),
                       "cut_short": any(e.get("cut_short", False) for e in ends),
                       "reason": next((e["reason"] for e in ends if e.get("reason")), "")})
    warnings = [f"{name}: {w}" for name, r in zip(names, runs) for w in r.warnings]
    return DiagnosticGroup(path=Path(runs[0].path).parent, records=pooled, recording_names=list(names),
                           warnings=warnings, complete=all(r.complete for r in runs),
                           cut_short=any(r.cut_short for r in runs), qps_log_sd=sd, qps_df=df)


def group_part(run: DiagnosticGroup) -> dict:
    """The recordings of a pooled run and its measured spread, in words."""
    names = run.recording_names
    sd = run.qps_log_sd
    if sd is None:
        note = (f"Pooled across {len(names)} recordings; no level was measured by two of them, so each level's "
                "interval is one recording's (its slices and the assumed spread between recordings).")
        pct = None
    else:
        pct = 100.0 * math.expm1(sd)
        note = (f"Pooled across {len(names)} recordings: each level's QPS is the geometric mean of the recordings' "
                f"QPS, its interval measured from their spread ({pct:.1f} % one standard deviation between "
                f"recordings, over {run.qps_df} degrees of freedom).")
    return {"recordings": list(names), "between_recordings_pct": pct, "degrees_of_freedom": run.qps_df,
            "note": note}
