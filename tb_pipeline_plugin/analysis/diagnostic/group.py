"""A group of recordings' diagnostic results seen as one run: the
recordings' sweeps pooled level by level into one list of records, which
`analysis.diagnostic.report` and `diff.diagnostic` read as one run's.

Per level (stage, executor, concurrency) measured by several recordings:

* QPS: the geometric mean of the recordings' QPS (the spreads and every
  comparison are of log QPS); CPU %, latencies: the mean; items, errors and
  the measured window add up; peak memory: the largest; the slices of every
  recording pooled (the CPU % interval reads them);
* the spread: measured on the level's own recordings, the unit of a
  group. One recording's log QPS scatters around its level's mean by the
  machine's state far more than its slices show, and by how much depends
  on the stage and the level: on the shared 2-core box, 24 recordings of
  samples/diagnostic_sample.py scattered by 0.7-1.7 % (one standard
  deviation) at the sleeping `fetch`'s levels but 17-19 % at the Python
  loop `decode`'s thread levels and 34 % at its 2 processes
  (docs/diagnostic_format.md, "A group of recordings"). One spread pooled over every level (what this
  module did before) gave `decode` at 2 processes about half its
  interval, so that two groups of the same code read apart. So a level
  of R recordings has a standard error of s / sqrt(R), s their own
  standard deviation (never below `BETWEEN_RECORDINGS_PCT`, the floor
  measured between recordings of one configuration: three recordings can
  agree by chance), on R - 1 degrees of freedom, and never less than its
  slices' own standard error: `qps_log_se` and `qps_df`, which a
  comparison of two groups joins into one Student t interval
  (spread.ratio_interval, Welch-Satterthwaite). `qps_log_sd`, the
  spread the level's own interval is drawn with at the normal quantile,
  is `qps_log_se` widened by t(R - 1) / z, so that it is the Student t
  interval of that level alone;
* the group's summary spread (`group.between_recordings_pct`): one
  recording's deviation from its level's mean, pooled over every level
  measured more than once, and the range of the levels' own spreads: a
  description of the group, no interval rests on it;
* a level only one recording measured keeps that recording's slices, and
  its interval as a single recording's.

The GIL-held share of a stage: the mean over the recordings that sampled
it, its standard error measured the same way, on the stage's own
recordings (`share_sd`, `share_df` = R - 1; their standard deviation
never below `GIL_BETWEEN_RECORDINGS`, the mean's never below the binomial
spread of their samples pooled): pooled over stages, the sleeping `fetch`'s
shares (0.006 one standard deviation over those 24 recordings, against
0.027-0.030 at `decode` and `augment`) narrowed the others' and made
augment read changed between two groups of the same code;
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
from .spread import BETWEEN_RECORDINGS_PCT, CONFIDENCE, GIL_BETWEEN_RECORDINGS, MIN_SLICES, Z

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
    # The summary spread: one recording's log-QPS standard deviation (pooled over levels) and its
    # degrees of freedom; None where no level was measured twice. Each level's interval rests on its own
    # recordings' spread instead (module docstring); `level_sd_range`: the smallest and largest of those.
    qps_log_sd: float | None = None
    qps_df: int = 0
    level_sd_range: tuple[float, float] | None = None

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


def _pool_sweeps(points_by_level: dict[tuple, list[dict]]) -> tuple[list[dict], float | None, int,
                                                                       tuple[float, float] | None]:
    logs = [np.log([float(p["qps"]) for p in pts]) for pts in points_by_level.values()
            if all(float(p["qps"]) > 0 for p in pts)]
    sd, df = _pooled_sd(logs)
    own_sds = [float(g.std(ddof=1)) for g in logs if len(g) > 1]
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
        if all(q > 0 for q in qps):
            # The level's own recordings (module docstring): their spread, never below the floor measured
            # between recordings of one configuration, nor the mean below its slices' standard error.
            own = max(float(np.std(np.log(qps), ddof=1)), BETWEEN_RECORDINGS_PCT / 100.0)
            slices = math.sqrt(np.mean([_slices_rel_se(p) ** 2 for p in pts]) / len(pts))
            se = max(own / math.sqrt(len(pts)), slices)
            pooled["qps_log_se"], pooled["qps_df"] = se, len(pts) - 1
            pooled["qps_log_sd"] = se * _widen(len(pts) - 1)
        out.append(pooled)
    return out, sd, df, ((min(own_sds), max(own_sds)) if own_sds else None)


def _pool_gil(records: list[dict]) -> list[dict]:
    """One `gil` record per stage: the sampled recordings' shares (module docstring)."""
    by_stage: dict[str, list[dict]] = {}
    for r in records:
        by_stage.setdefault(r["stage"], []).append(r)
    sampled = {s: [r for r in rs if not r.get("skipped")] for s, rs in by_stage.items()}
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
        # The stage's own recordings, as a level's QPS (module docstring): never below the floor between
        # recordings, nor below the pooled samples' own (binomial) spread. `share_sd`: the standard error,
        # `share_df`: its degrees of freedom.
        shares = [float(r.get("held_share", 0.0)) for r in used]
        own = max(float(np.std(shares, ddof=1)), GIL_BETWEEN_RECORDINGS)
        pooled["share_sd"], pooled["share_df"] = max(own / math.sqrt(len(used)), binomial), len(used) - 1
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
    sweeps, sd, df, level_range = _pool_sweeps(points)
    pooled = [*environment, *stages.values(), *sweeps, *_pool_gil(gil)]
    if all(e is not None for e in ends):
        pooled.append({"type": "end", "wall_time_s": max(float(e["wall_time_s"]) for e in ends),
                       "elapsed_s": float(sum(float(e["elapsed_s"]) for e in ends)),
                       "cut_short": any(e.get("cut_short", False) for e in ends),
                       "reason": next((e["reason"] for e in ends if e.get("reason")), "")})
    warnings = [f"{name}: {w}" for name, r in zip(names, runs) for w in r.warnings]
    return DiagnosticGroup(path=Path(runs[0].path).parent, records=pooled, recording_names=list(names),
                           warnings=warnings, complete=all(r.complete for r in runs),
                           cut_short=any(r.cut_short for r in runs), qps_log_sd=sd, qps_df=df,
                           level_sd_range=level_range)


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
        low, high = (100.0 * math.expm1(v) for v in run.level_sd_range or (sd, sd))
        note = (f"Pooled across {len(names)} recordings: each level's QPS is the geometric mean of the recordings' "
                f"QPS, its interval measured from those recordings' own spread (a Student t interval on one "
                f"degree of freedom fewer than the recordings); one standard deviation between recordings "
                f"was {low:.1f} % to {high:.1f} % by level ({pct:.1f} % pooled over {run.qps_df} degrees of "
                f"freedom).")
    return {"recordings": list(names), "between_recordings_pct": pct, "degrees_of_freedom": run.qps_df,
            "note": note}
