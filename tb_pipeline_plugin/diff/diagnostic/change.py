"""Did a stage's diagnosis change between two runs, or only its noise?

A verdict is a threshold on noisy curves: a stage near a threshold ("scales"
at x1.4 on two cores) reads one verdict in one recording and another in the
next, with the same code. So two verdicts that differ are a change only
when the evidence behind them differs beyond its interval too
(analysis/diagnostic/spread.py), experimental against baseline:

* the best QPS, per executor (ratio);
* the thread speed-up at each decisive level: the level the "scales" rule
  reads and each run's best thread level (ratio of speed-ups);
* the share of the time the GIL was held (difference).

Each interval is analysis/diagnostic/spread.py's: a single recording's
modelled spread at the normal quantile, a group's level measured on its own
recordings at Student t's (ratio_interval, difference_half_width).

A single window may be off by up to `ONE_WINDOW_FACTOR`. A level of a
single recording is one window of 0.3 s or so, and a virtual machine's
host can run a stage at half its speed for longer than that (measured: the
same `augment` at two threads read 15,000 QPS in one recording and 26,000
in the next, x1.7, the slow window's slices steady, at the slow rate from
end to end; tests/diff/test_diagnostic_null_pairs.py), which
no modelled spread of the window sees. So where every QPS item beyond noise
rests on one same level measured once (each run's levels a speed-up reads,
or a level that is both a run's best and one a speed-up reads), that
evidence counts only beyond its interval widened by the factor: the GIL
share (its own sampling), a second level, a group's level measured over
its recordings, or an effect larger than a slowed window makes, before two
verdicts' difference is called a change.

QPS evidence of a stage that other processes crowded in either run
(`others_cpu_pct`) does not count as a change: it is said apart
("machine_busy"), since a neighbour halves a CPU-bound stage's QPS as
surely as a slower function does. The GIL share is not crowded.

A run whose stage oversubscribed the machine (its own threads outnumbering
the cores while the QPS fell: analysis/diagnostic/threads.py) is named in
the reason, whatever the change: its fall is the stage's threading, not
its code.

A best concurrency that moved from one level to another is a change only
when the gain from the lower of the two levels to the higher differs
between the runs beyond its interval, under the same crowding rule.

Pure functions of `analysis.diagnostic.verdicts` rows, one stage's rows of
`analysis.diagnostic.spread.level_spread` per run, and `gil` records.
"""
from __future__ import annotations

import math

import pandas as pd

from ...analysis.diagnostic.report import VERDICT_LABELS, scale_level
from ...analysis.diagnostic.spread import (CROWDED_OTHERS_PCT, difference_half_width, gil_share_df, gil_share_sd,
                                          ratio_interval)
from ..significance.method import WITHIN_NOISE

# How far a host can move one window of a single recording (module docstring: x1.7 measured, rounded up).
ONE_WINDOW_FACTOR = 2.0

# "within noise" is the significance policy's verdict, the one word for it everywhere.
SAME, CHANGED, MACHINE_BUSY, NO_INTERVAL, ONE_SIDE = "same", "changed", "machine_busy", "no_interval", "one_side"
CHANGES = (SAME, CHANGED, WITHIN_NOISE, MACHINE_BUSY, NO_INTERVAL, ONE_SIDE)
# A stage that stopped being swept or started failing changed in what it does, whatever the noise.
_WITHOUT_CURVES = ("not_swept", "failing")


def _level(spread: pd.DataFrame, executor: str, level) -> tuple[float, tuple[float, float]] | None:
    """(QPS, (log-QPS standard error, its degrees of freedom)) of one level
    of one stage's spread rows: a group's level measured on its own
    recordings (R - 1), a single recording's modelled (infinite)."""
    row = spread[(spread["executor"] == executor) & (spread["concurrency"] == level)]
    if not len(row):
        return None
    return float(row["qps"].iloc[0]), (float(row["qps_log_se"].iloc[0]), float(row["qps_df"].iloc[0]))


def _ratio_item(what: str, ratio: float, terms, crowded: bool, levels: dict) -> dict:
    """`terms`: each QPS figure's (log standard error, degrees of freedom);
    `levels`: (run, executor, concurrency) -> that term, of each QPS figure
    the ratio reads (`once`: those measured by a single recording)."""
    low, high = ratio_interval(ratio, [t[0] for t in terms], [t[1] for t in terms])
    measured = not math.isnan(low)
    text = (f"{what} x{ratio:.2f} ± {(high - low) / 2:.2f}" if measured else f"{what} x{ratio:.2f} (no interval)")
    return {"what": what, "ratio": ratio, "low": low, "high": high, "interval": measured, "crowded": crowded,
            "beyond": measured and (low > 1.0 or high < 1.0), "text": text,
            "once": frozenset(key for key, term in levels.items() if math.isinf(term[1]))}


def _best_qps_ratio(base, exp, b_row: dict, e_row: dict, executor: str, crowded: bool) -> dict | None:
    lb, le = b_row[f"best_{executor}_concurrency"], e_row[f"best_{executor}_concurrency"]
    b, e = _level(base, executor, lb), _level(exp, executor, le)
    if b is None or e is None or not (b[0] > 0 and e[0] > 0):
        return None
    return _ratio_item(f"best {executor} QPS", e[0] / b[0], (b[1], e[1]), crowded,
                       {("baseline", executor, lb): b[1], ("experimental", executor, le): e[1]})


def _gain(spread: pd.DataFrame, executor: str, low, high) -> tuple[float, tuple, tuple] | None:
    """QPS at `high` over QPS at `low` of one run, and the two levels'
    spreads (taken as independent: the recordings of one machine state
    move a stage's levels together, so the gain's true spread is smaller)."""
    a, b = _level(spread, executor, low), _level(spread, executor, high)
    if a is None or b is None or not (a[0] > 0 and b[0] > 0):
        return None
    return b[0] / a[0], a[1], b[1]


def _gain_ratio(base, exp, executor: str, low, high, what: str, crowded: bool) -> dict | None:
    gb, ge = _gain(base, executor, low, high), _gain(exp, executor, low, high)
    if gb is None or ge is None:
        return None
    levels = {("baseline", executor, low): gb[1], ("baseline", executor, high): gb[2],
              ("experimental", executor, low): ge[1], ("experimental", executor, high): ge[2]}
    return _ratio_item(what, ge[0] / gb[0], (gb[1], gb[2], ge[1], ge[2]), crowded, levels)


def _decisive_levels(base: pd.DataFrame, exp: pd.DataFrame, b_row: dict, e_row: dict) -> list[int]:
    """Thread levels whose speed-up a verdict reads, measured by both runs:
    each run's "scales" level and best thread level, above the lowest level."""
    bl = set(base.loc[base["executor"] == "thread", "concurrency"].astype(int))
    el = set(exp.loc[exp["executor"] == "thread", "concurrency"].astype(int))
    if not bl or not el or min(bl) != min(el):
        return []
    wanted = {scale_level(bl, int(b_row["cores"])), scale_level(el, int(e_row["cores"])),
              b_row["best_thread_concurrency"], e_row["best_thread_concurrency"]}
    return sorted(int(c) for c in wanted if c is not None and int(c) in bl & el and int(c) > min(bl))


def _gil_item(b_gil: dict | None, e_gil: dict | None) -> dict | None:
    b, e = gil_share_sd(b_gil), gil_share_sd(e_gil)
    if b is None or e is None:
        return None
    half = difference_half_width((b[1], e[1]), (gil_share_df(b_gil), gil_share_df(e_gil)))
    return {"what": "GIL held", "ratio": None, "low": None, "high": None, "interval": True, "crowded": False,
            "beyond": abs(e[0] - b[0]) > half,
            "text": f"GIL held {100 * b[0]:.0f} % vs {100 * e[0]:.0f} % (± {100 * half:.0f} points)",
            "once": frozenset()}


def one_level(items: list[dict]) -> list[tuple]:
    """The levels measured once on which every item of `items` rests (any
    one of them moved alone moves them all: module docstring), sorted; []
    where there is none or an item is the GIL's. `items`: the evidence
    beyond noise."""
    if not items or any(i["ratio"] is None for i in items):
        return []
    return sorted(frozenset.intersection(*(i["once"] for i in items)), key=lambda k: (k[0], k[1], float(k[2])))


def _beyond_one_window(item: dict) -> bool:
    """The ratio beyond its interval widened by ONE_WINDOW_FACTOR either way."""
    return item["low"] / ONE_WINDOW_FACTOR > 1.0 or item["high"] * ONE_WINDOW_FACTOR < 1.0


def _levels_words(keys: list[tuple]) -> str:
    """"the baseline run's thread x1 and x2 levels and the experimental run's thread x2 level"."""
    parts = []
    for run in ("baseline", "experimental"):
        for executor in ("thread", "process"):
            counts = [f"x{int(k[2])}" for k in keys if k[0] == run and k[1] == executor]
            if counts:
                parts.append(f"the {run} run's {executor} {' and '.join(counts)} level{'s' if len(counts) > 1 else ''}")
    return " and ".join(parts)


def evidence(base: pd.DataFrame, exp: pd.DataFrame, b_row: dict, e_row: dict, b_gil: dict | None = None,
             e_gil: dict | None = None, crowded: bool = False) -> list[dict]:
    """The comparisons a stage's change rests on, each {what, text, beyond,
    interval, crowded, ratio, low, high} (ratios experimental / baseline;
    `interval` False: a side has no slices). `base`, `exp`: the stage's rows
    of each run's level_spread; `crowded`: other processes crowded the stage
    in either run."""
    items = [_best_qps_ratio(base, exp, b_row, e_row, executor, crowded) for executor in ("thread", "process")]
    lowest = base.loc[base["executor"] == "thread", "concurrency"].min()
    items += [_gain_ratio(base, exp, "thread", lowest, level, f"thread speed-up at {level}", crowded)
              for level in _decisive_levels(base, exp, b_row, e_row)]
    items.append(_gil_item(b_gil, e_gil))
    return [i for i in items if i is not None]


def crowding_text(others_pct: tuple[float, float]) -> str:
    """Which run other processes crowded, and by how much CPU."""
    sides = [f"{pct:.0f} % CPU in the {side} run" for side, pct in zip(("baseline", "experimental"), others_pct)
             if pct >= CROWDED_OTHERS_PCT]
    return f"other processes took {' and '.join(sides)} while the machine was full"


def oversubscription_note(b_row: dict | None, e_row: dict | None) -> str:
    """"; oversubscribed in the experimental run: processes oversubscribe ..." or ""."""
    sides = [f"in the {side} run: {row['oversubscription']}" for side, row in (("baseline", b_row),
                                                                              ("experimental", e_row))
             if row is not None and row.get("oversubscription")]
    return f"; oversubscribed {' and '.join(sides)}" if sides else ""


def verdict_change(b_row: dict | None, e_row: dict | None, items: list[dict],
                   others_pct: tuple[float, float] = (0.0, 0.0)) -> tuple[str, str]:
    """(one of CHANGES, the reason in words) for one stage; a row is None
    where that run has no such stage; `others_pct`: each run's
    spread.others_cpu_pct of the stage."""
    change, reason = _verdict_change(b_row, e_row, items, others_pct)
    return change, reason + oversubscription_note(b_row, e_row)


def _verdict_change(b_row: dict | None, e_row: dict | None, items: list[dict],
                    others_pct: tuple[float, float]) -> tuple[str, str]:
    if b_row is None or e_row is None:
        return ONE_SIDE, f"only in the {'experimental' if b_row is None else 'baseline'} run"
    vb, ve = b_row["verdict"], e_row["verdict"]
    clean = [i for i in items if i["beyond"] and not i["crowded"]]
    crowded = [i for i in items if i["beyond"] and i["crowded"]]
    if vb == ve:
        moved = "; ".join(part for part in (
            f"beyond noise: {', '.join(i['text'] for i in clean)}" if clean else "",
            f"{', '.join(i['text'] for i in crowded)}, but {crowding_text(others_pct)}" if crowded else "") if part)
        return SAME, f"same verdict ({VERDICT_LABELS[vb]})" + (f"; {moved}" if moved else "")
    pair = f"verdicts differ ({VERDICT_LABELS[vb]} vs {VERDICT_LABELS[ve]})"
    if vb in _WITHOUT_CURVES or ve in _WITHOUT_CURVES:
        return CHANGED, pair
    lone = one_level(clean)
    if lone and not any(_beyond_one_window(i) for i in clean):
        return WITHIN_NOISE, (f"{pair} and so do the curves beyond noise ({', '.join(i['text'] for i in clean)}), "
                              f"but all of it rests on {_levels_words(lone)}, each measured once, by less than a "
                              f"host that slowed one of those windows moves it (x{ONE_WINDOW_FACTOR:g}): within "
                              f"noise; record repeats (tb-pipeline record --repeat) to tell")
    if clean:
        return CHANGED, f"{pair} beyond noise: {', '.join(i['text'] for i in clean)}"
    if crowded:
        return MACHINE_BUSY, (f"{pair} and so do the curves ({', '.join(i['text'] for i in crowded)}), but "
                              f"{crowding_text(others_pct)}: that alone moves a CPU-bound stage this much; "
                              f"record both runs on a quiet machine to tell")
    if not items or not all(i["interval"] for i in items):
        return NO_INTERVAL, (f"{pair}; no interval (a run written before levels were sliced, or no level "
                             f"both runs measured), so noise cannot be told from a change")
    return WITHIN_NOISE, f"{pair} but within noise: {', '.join(i['text'] for i in items)}"


def best_concurrency_change(base: pd.DataFrame, exp: pd.DataFrame, b_row: dict | None, e_row: dict | None,
                            executor: str, crowded: bool = False) -> str | None:
    """SAME, CHANGED, WITHIN_NOISE, MACHINE_BUSY or NO_INTERVAL for one
    executor's best concurrency; None where either run has no such curve."""
    if b_row is None or e_row is None:
        return None
    lb, le = b_row[f"best_{executor}_concurrency"], e_row[f"best_{executor}_concurrency"]
    if lb is None or le is None:
        return None
    if lb == le:
        return SAME
    item = _gain_ratio(base, exp, executor, min(lb, le), max(lb, le), "gain", crowded)
    if item is None or not item["interval"]:
        return NO_INTERVAL
    if not item["beyond"]:
        return WITHIN_NOISE
    return MACHINE_BUSY if crowded else CHANGED
