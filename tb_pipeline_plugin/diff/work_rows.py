"""The pair's overview rows beyond the runs' own metrics: work per step
(samples, tokens) and its rates, the verdicts the pair's differences
withhold, and the step time's caveat when the runs' steps differ in work."""
from __future__ import annotations

from .significance import method as S
from . import step_basis as B
from .delta import delta_pct
from .overview import STEP_TIME
from .significance.withheld import voided
from .units import STEP, counts_text, rate_per_s

# The overview rows measured on the host in the profiled steps: what the
# profiler's options inflate (diff/comparability.py).
HOST_ROWS = (STEP_TIME, "breakdown_us.data_loading", "breakdown_us.cpu_exec", "breakdown_us.runtime",
             "breakdown_us.other")


def work_rows(pair) -> list[dict]:
    """Overview rows of work per step, for each of samples and tokens both
    runs know: the count per step, the time per sample (token) judged as
    the step time is (every recorded step's own count when both runs have
    statistics, else the profiled steps at the run's count), and the rate."""
    units = pair.units
    rows = []
    for unit in ("sample", "token"):
        bc, ec = units["baseline"][f"{unit}s_per_step"], units["experimental"][f"{unit}s_per_step"]
        if bc is None or ec is None:
            continue
        if pair.pipelines is not None:
            judged = B.recorded(pair, {**units, "unit": unit})
        else:
            (bs, b_rec), (es, e_rec) = B.profiled_step_us(pair)
            bs, es = bs / bc, es / ec
            bm, em = (float(bs.mean()) if len(bs) else 0.0), (float(es.mean()) if len(es) else 0.0)
            judged = {"baseline_us": round(bm, 3), "experimental_us": round(em, 3), "delta_us": round(em - bm, 3),
                      "significance": S.step_time(bs, es, (b_rec, e_rec), noise=pair.noise)}
        b_rate, e_rate = rate_per_s(judged["baseline_us"]), rate_per_s(judged["experimental_us"])
        rows += [
            row(f"{unit}s_per_step", f"{unit.capitalize()}s per step", "count", bc, ec),
            {**row(f"time_per_{unit}_us", f"Time per {unit}", "us", judged["baseline_us"], judged["experimental_us"]),
             "significance": judged["significance"]},
            row(f"{unit}s_per_s", f"{unit.capitalize()}s per second", "per_s", b_rate, e_rate),
        ]
    return rows


def row(metric: str, label: str, unit: str, b, e) -> dict:
    numeric = b is not None and e is not None
    delta = round(e - b, 3) if numeric else None
    return {"metric": metric, "label": label, "unit": unit, "baseline": b, "experimental": e, "delta": delta,
            "delta_pct": delta_pct(b, delta) if numeric else None, "significance": None, "caveat": None}


def void_rows(rows: list[dict], void: str | None, recorded: bool) -> None:
    """No verdict on the host-time rows of the profiled steps (`void`: why)."""
    for r in rows:
        r.setdefault("caveat", None)
        if void is None:
            continue
        profiled_step = r["metric"] in HOST_ROWS and not (recorded and r["metric"] == STEP_TIME)
        per_work = r["metric"].startswith("time_per_") and not recorded
        if profiled_step or per_work:
            r["significance"] = voided(r["significance"], void)
            r["caveat"] = void


def caveat_rows(rows: list[dict], units: dict) -> None:
    """The step time is per step: when the runs' work per step differs, it says where to look."""
    if units["unit"] == STEP:
        return
    for r in rows:
        if r["metric"] == STEP_TIME and r["caveat"] is None:
            r["caveat"] = (f"Per step, and the runs' steps differ in work ({counts_text(units)}): compare "
                           f"Time per {units['unit']}.")
