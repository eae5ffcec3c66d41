"""Why is one run slower: the step-time delta split into ranked contributors.

Both runs' step ledgers (analysis/ledger.py) give, per step, the time of
each part: data loading, each module (its forward operators plus the
backward operators its forward created), unattributed backward, optimizer,
communication, other annotations, operators outside any module, host time
outside operators, GPU work after the host step. Operators' stalls (calls
far above their usual time, analysis/ledger.py) leave their part and make
one `stall` contributor: waiting for the GIL inside backward is waiting,
not backward getting slower. A part's per-step samples give its delta and
significance (diff/significance/method.py); the parts of a step add up to the
step time, so the deltas add up to the step-time delta. A contributor is
a finding only from `CONTRIBUTOR_MIN_EFFECT_PCT` % of the step (the
policy and its reason: diff/significance/method.py).

Modules start at the top level (`Net_0`) and are opened while one child
holds most of the change (`CHILD_SHARE`): a slower
`Block_2` inside `Net_0` is named as `Block_2`, not as the model around it;
a change spread over several children stays with the parent. A module that
ran compiled in either run (analysis/compiled.py) is never opened: its
submodules' parts are rolled up into it, so the compiled `LM_0` meets the
eager `LM_0` subtree instead of both sides' modules reading one-sided.

The ledgers may be of host time (analysis/ledger.py) or of device time
(analysis/device_time.py: the same shape, with `device_idle` for a step's
time the device waited for the host): `diff/step_basis.py` picks device
time when a run kept the device busy most of its steps.

Shares: each contributor's share of the step-time delta the answer states,
while that delta is significant; within noise the step has not changed, and
a contributor is ranked by its own delta and verdict, with no share of a
delta that is 0. When the recorded steps give the step's verdict, that
delta is theirs, and the part of it the profiled steps' parts do not hold is
the step's `rest_delta_us` (its share with the contributors' makes 100 %;
the waterfall's last bar before the experimental step).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from ...analysis.compiled import compiled_root
from ...analysis.labels import (
    BACKWARD, BACKWARD_PHASE, COMMUNICATION, DATA_LOADING, DATA_LOADING_NAME, DEVICE, DEVICE_IDLE, DEVICE_OVERLAP,
    FORWARD, HOST, OPTIMIZER, PRE_WINDOW, PRE_WINDOW_NAME, UNATTRIBUTED_BACKWARD_NAME, UNKNOWN,
)
from ...analysis.ledger import StepLedger, spikiness
from ..delta import delta_pct
from ..significance import method as S
from ..significance.withheld import voided
from ..units import rate_per_s
from .sentence import sentence
from .waterfall import waterfall

# Open a module when one child holds this share of its delta: a block whose
# two layers both slowed down (about half each) stays the block.
CHILD_SHARE = 0.7
MAX_DEPTH = 16
# Module contributors named down to their operator and kernels (device time).
TOP_OPERATOR_CONTRIBUTORS = 8
LABELS = {
    DATA_LOADING: DATA_LOADING_NAME,
    BACKWARD: UNATTRIBUTED_BACKWARD_NAME,
    OPTIMIZER: "optimizer",
    COMMUNICATION: "communication",
    UNKNOWN: "operators outside any module",
    HOST: "host time outside operators (Python, framework, waiting for the GIL)",
    DEVICE: "GPU work after the host step",
    "stall": "operators stalled (waiting inside an operator: the GIL, a device sync, preemption)",
    DEVICE_IDLE: "device idle (waiting for the host)",
    DEVICE_OVERLAP: "device work of overlapping streams (counted once)",
    PRE_WINDOW: PRE_WINDOW_NAME,
}
STALL = "stall:stall"
OWN = " (own operators)"


def explain(b: StepLedger, e: StepLedger, compiled: dict[str, str] | None = None, clock: str = "host",
            top_operator: Callable[[str], dict | None] | None = None, recorded: dict | None = None,
            units: dict | None = None, per_step: dict | None = None, void: str | None = None, *,
            noise: S.NoisePolicy) -> dict:
    """`compiled`: module path -> which run ran it compiled ("baseline",
    "experimental" or "both"); `clock`: what the ledgers measure, "host" or
    "device" (the sentence says which); `top_operator(module key)`: the
    operator whose device time changed most inside a module contributor,
    with each run's kernels (device time only); `recorded`: the step verdict
    from every recorded step (diff/significance/pipeline.py:recorded_step),
    when both runs have pipeline statistics: it is the step's, and the
    profiled steps split the delta into parts. `units`: the unit the pair
    is compared in (diff/units.py); when it is not the step, the ledgers
    and `recorded` are per unit already, and `per_step` holds the step
    figures shown beside them. `void`: why the profiled steps' deltas of
    this clock get no verdict (diff/comparability.py), or None; `noise`:
    the policy every verdict here is judged under."""
    compiled = compiled or {}
    unit = units["unit"] if units else "step"
    b, e = _rolled_up(b, compiled), _rolled_up(e, compiled)
    b_step = b.steps["step_us"].to_numpy(np.float64)
    e_step = e.steps["step_us"].to_numpy(np.float64)
    b_mean = float(b_step.mean()) if len(b_step) else 0.0
    e_mean = float(e_step.mean()) if len(e_step) else 0.0
    recordings = (S.ledger_recordings(b), S.ledger_recordings(e))
    total = S.step_time(b_step, e_step, recordings, noise=noise)
    verdict = (recorded["significance"] if recorded else total)["verdict"]
    # Shares are of the delta the answer states: the recorded steps' when they give the verdict.
    share_of = recorded["delta_us"] if recorded else None
    contributors = _contributors(b, e, b_mean, recordings, compiled, verdict == S.SIGNIFICANT, noise, share_of)
    if void is not None:
        contributors = _voided(contributors, void)
    if top_operator is not None:
        for c in contributors[:TOP_OPERATOR_CONTRIBUTORS]:
            if c["kind"] == "module":
                c["top_operator"] = top_operator(c["key"])
    step = {
        "baseline_us": round(b_mean, 3), "experimental_us": round(e_mean, 3),
        "delta_us": round(e_mean - b_mean, 3), "delta_pct": delta_pct(b_mean, e_mean - b_mean),
        "significance": total, "source": "profiled", "profiled": None, "rest_delta_us": None, "rest_share_pct": None,
    }
    if recorded is not None:
        # The verdict from every recorded step; the profiled steps' own stays beside it.
        step = {**{k: recorded[k] for k in ("baseline_us", "experimental_us", "delta_us", "significance")},
                "delta_pct": delta_pct(recorded["baseline_us"], recorded["delta_us"]), "source": "recorded",
                "profiled": {"baseline_steps": total["baseline_steps"], "experimental_steps": total["experimental_steps"],
                             "delta_us": step["delta_us"], "significance": total},
                "rest_delta_us": None, "rest_share_pct": None}
        # The part of the recorded delta the profiled steps' parts do not hold: with the contributors'
        # shares it makes 100 %.
        rest = round(recorded["delta_us"] - (e_mean - b_mean), 3)
        step["rest_delta_us"] = rest
        if contributors and contributors[0]["share_pct"] is not None:
            step["rest_share_pct"] = round(100.0 * rest / recorded["delta_us"], 1)
        total = recorded["significance"]
    elif void is not None:
        step["significance"] = total = voided(total, void)
    step.update(unit=unit, units=units if unit != "step" else None, per_step=per_step if unit != "step" else None,
                baseline_per_s=None, experimental_per_s=None)
    if unit != "step":
        step.update(baseline_per_s=rate_per_s(step["baseline_us"]), experimental_per_s=rate_per_s(step["experimental_us"]))
    return {
        "sentence": sentence(step, contributors, clock),
        "step": step,
        "spikiness": {"baseline": spikiness(b_step), "experimental": spikiness(e_step)},
        "contributors": contributors,
        "waterfall": waterfall(step["baseline_us"] if recorded is None else recorded["baseline_us"],
                               step["experimental_us"] if recorded is None else recorded["experimental_us"],
                               contributors, step["rest_delta_us"]),
        "between_run_pct": noise.between_run_pct,
        "noise": {"source": total["noise"], "baseline_recordings": total["baseline_recordings"],
                  "experimental_recordings": total["experimental_recordings"],
                  "note": S.noise_note(total["baseline_recordings"], total["experimental_recordings"], noise)},
    }


# ------------------------------------------------------------ contributors


def _rolled_up(ledger: StepLedger, compiled: dict[str, str]) -> StepLedger:
    """Module parts below a compiled module keyed by that module (module docstring)."""
    if not compiled:
        return ledger
    roots = frozenset(compiled)
    parts = ledger.parts
    modules = parts["kind"] == "module"
    keys = parts.loc[modules, "key"].map(lambda k: compiled_root(k, roots) or k)
    if (keys == parts.loc[modules, "key"]).all():
        return ledger
    parts = parts.copy()
    parts.loc[modules, "key"] = keys
    parts = parts.groupby(["step", "kind", "key", "phase"], as_index=False, sort=False)[["us", "stall_us"]].sum()
    return StepLedger(steps=ledger.steps, parts=parts)


def _group(parts: pd.DataFrame, depth_of: dict) -> pd.Series:
    """Contributor id of each part row: `kind:key` with module paths cut to
    the depth chosen for their prefix."""
    ids = []
    for kind, key in zip(parts["kind"].tolist(), parts["key"].tolist()):
        if kind == "module":
            ids.append("module:" + _cut(key, depth_of))
        else:
            ids.append(f"{kind}:{key}")
    return pd.Series(ids, index=parts.index)


def _cut(path: str, depth_of: dict) -> str:
    parts = path.split("/")
    d = 1
    while d < len(parts) and depth_of.get("/".join(parts[:d]), False):
        d += 1
    cut = "/".join(parts[:d])
    # A module opened into its children keeps its own operators apart.
    return cut + OWN if depth_of.get(cut, False) and d == len(parts) else cut


def _matrix(ledger: StepLedger, depth_of: dict, phase: str | None = None) -> pd.DataFrame:
    """Contributor x step matrix of µs (0 where a step has none): each part's
    working time, and (all phases only) the stalls of every part as one
    `stall` contributor: a stall is waiting, whichever operator it hit."""
    parts = ledger.parts if phase is None else ledger.parts[ledger.parts["phase"] == phase]
    steps = ledger.steps["step"].to_numpy()
    if len(parts) == 0:
        return pd.DataFrame(columns=steps, dtype=np.float64)
    rows = parts.assign(cid=_group(parts, depth_of), work_us=parts["us"] - parts["stall_us"])
    m = rows.pivot_table(index="cid", columns="step", values="work_us", aggfunc="sum", fill_value=0.0)
    m = m.reindex(columns=steps, fill_value=0.0)
    if phase is None and (parts["stall_us"] > 0).any():
        m.loc[STALL] = parts.groupby("step")["stall_us"].sum().reindex(steps, fill_value=0.0).to_numpy()
    return m


def _module_deltas(b: StepLedger, e: StepLedger) -> dict[str, float]:
    """Mean per-step delta of each module path's own operators."""
    def per_path(ledger: StepLedger) -> pd.Series:
        m = ledger.parts[ledger.parts["kind"] == "module"]
        return (m["us"] - m["stall_us"]).groupby(m["key"]).sum() / max(len(ledger.steps), 1)
    bs, es = per_path(b), per_path(e)
    ids = bs.index.union(es.index)
    return (es.reindex(ids, fill_value=0.0) - bs.reindex(ids, fill_value=0.0)).to_dict()


def _open_modules(b: StepLedger, e: StepLedger, compiled: dict[str, str]) -> dict:
    """Which module paths to open (see module docstring): from the top,
    open a module while one child module holds `CHILD_SHARE` of its delta,
    with the same sign; never a compiled one."""
    own = _module_deltas(b, e)
    depth_of: dict[str, bool] = {}
    frontier = sorted({k.split("/", 1)[0] for k in own})
    for _ in range(MAX_DEPTH):
        nxt = []
        for path in frontier:
            inside = {k: v for k, v in own.items() if k == path or k.startswith(path + "/")}
            total = sum(inside.values())
            kids: dict[str, float] = {}
            for k, v in inside.items():
                if k != path:
                    child = path + "/" + k[len(path) + 1:].split("/", 1)[0]
                    kids[child] = kids.get(child, 0.0) + v
            if not kids or total == 0 or path in compiled:
                continue
            best, d = max(kids.items(), key=lambda kv: abs(kv[1]))
            if d * total > 0 and abs(d) >= CHILD_SHARE * abs(total):
                depth_of[path] = True
                nxt.append(best)
        if not nxt:
            break
        frontier = nxt
    return depth_of


def _contributors(b: StepLedger, e: StepLedger, reference_us: float, recordings: tuple, compiled: dict[str, str],
                  step_changed: bool, noise: S.NoisePolicy, share_of: float | None = None) -> list[dict]:
    depth_of = _open_modules(b, e, compiled)
    bm, em = _matrix(b, depth_of), _matrix(e, depth_of)
    ids = bm.index.union(em.index)
    bm, em = bm.reindex(ids, fill_value=0.0), em.reindex(ids, fill_value=0.0)
    sig = S.compare(bm.to_numpy(), em.to_numpy(), np.full(len(ids), reference_us),
                    min_effect_pct=S.CONTRIBUTOR_MIN_EFFECT_PCT, recordings=recordings, noise=noise)
    phases = {p: (_matrix(b, depth_of, p).reindex(ids, fill_value=0.0),
                  _matrix(e, depth_of, p).reindex(ids, fill_value=0.0)) for p in (FORWARD, BACKWARD_PHASE)}
    b_mean = bm.mean(axis=1) if bm.shape[1] else pd.Series(0.0, index=ids)
    e_mean = em.mean(axis=1) if em.shape[1] else pd.Series(0.0, index=ids)
    total_delta = float(e_mean.sum() - b_mean.sum()) if share_of is None else float(share_of)
    out = []
    for i, cid in enumerate(ids):
        kind, key = cid.split(":", 1)
        bu, eu = float(b_mean[cid]), float(e_mean[cid])
        status = "matched"
        if bm.loc[cid].abs().sum() == 0 and eu != 0:
            status = "experimental_only"
        elif em.loc[cid].abs().sum() == 0 and bu != 0:
            status = "baseline_only"
        row = {
            "kind": kind, "key": key, "name": _name(kind, key), "status": status,
            "baseline_us": round(bu, 3), "experimental_us": round(eu, 3), "delta_us": round(eu - bu, 3),
            "share_pct": round(100.0 * (eu - bu) / total_delta, 1) if total_delta and step_changed else None,
            "forward_delta_us": None, "backward_delta_us": None, "significance": sig[i],
            "compiled": compiled.get(key) if kind == "module" else None, "top_operator": None,
        }
        if kind == "module":
            for p, field in ((FORWARD, "forward_delta_us"), (BACKWARD_PHASE, "backward_delta_us")):
                pb, pe = phases[p]
                row[field] = round(_mean(pe.loc[cid]) - _mean(pb.loc[cid]), 3)
        out.append(row)
    significant_first = {S.SIGNIFICANT: 0, S.WITHIN_NOISE: 1, S.TOO_FEW_STEPS: 1}
    out.sort(key=lambda r: (significant_first[r["significance"]["verdict"]], -abs(r["delta_us"]), r["key"]))
    return out


def _voided(contributors: list[dict], reason: str) -> list[dict]:
    """Every contributor without a verdict or a share, largest delta first."""
    out = [{**c, "significance": voided(c["significance"], reason), "share_pct": None} for c in contributors]
    return sorted(out, key=lambda r: (-abs(r["delta_us"]), r["key"]))


def _mean(s: pd.Series) -> float:
    return float(s.mean()) if len(s) else 0.0


def _name(kind: str, key: str) -> str:
    if kind == "module":
        own = key.endswith(OWN)
        base = key[: -len(OWN)] if own else key
        return base.rsplit("/", 1)[-1] + (OWN if own else "")
    if kind == "annotation":
        return key
    return LABELS.get(kind, key)
