"""How often the explanation's verdicts are wrong: false alarms on null
comparisons, misses on a known 4x change, single recordings vs groups of 3.

    python benchmarks/bench_verdicts.py [--k 9] [--busy] [--keep] [--json out.json]

Recordings (tests/support/group_runs.py:record_one, each its own process, 12 steps):
K of the null configuration (tests/support/explain_runs.py's default model) and K
with block 1 four times wider (`wide_block=1`), taken in turns (n1 w1 n2 w2
...) so that a drifting machine drifts over both alike. `--busy` records a
second set the same way while another process spins on a core
(group_runs.busy_core). Comparisons (tb_pipeline_plugin.compare.compare):

* null, single: every ordered pair (i, j), i != j, of null recordings;
* null, groups of 3: every ordered pair (A, B) of disjoint triples of null
  recordings (no recording on both sides), as RecordingGroups;
* x4, single: every (null_i, wide_j);
* x4, groups of 3: every (null triple, wide triple).

Group comparisons above `--max-group-comparisons` are a seeded sample.
Rates: `step significant` = the step verdict is `significant`; `any
contributor` = some contributor is `significant`; on null comparisons both
are false alarms. `miss` (x4 only) = the first contributor is not Block_1
or is not significant. Comparisons share recordings, so they are not
independent: K recordings per side are all the information there is.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import shutil
import sys
import time
from collections import Counter
from contextlib import nullcontext
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
OUT_DIR = HERE / "out" / "verdicts"
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "tests"))

from support.group_runs import STEPS, busy_core, record_one, traces_in  # noqa: E402

CONFIGS = {"null": {}, "wide": {"wide_block": 1}}
CULPRIT = "Block_1"
GROUP = 3


def record_set(root: Path, k: int, busy: bool, reuse: bool) -> tuple[dict[str, list[Path]], list[float]]:
    """K recordings per configuration under root/{null,wide}/r1..rK, in
    turns; the 1-minute load average after each recording."""
    have = {name: [traces_in(str(root / name / f"r{i}")) for i in range(1, k + 1)] for name in CONFIGS}
    if reuse and all(all(t) for t in have.values()):
        print(f"reusing the recordings in {root}")
        return {name: [Path(t[0]) for t in ts] for name, ts in have.items()}, []
    shutil.rmtree(root, ignore_errors=True)  # record_one takes the first trace it finds in a directory
    out: dict[str, list[Path]] = {name: [] for name in CONFIGS}
    loads = []
    with busy_core() if busy else nullcontext():
        for i in range(1, k + 1):
            for name, knobs in CONFIGS.items():
                out[name].append(record_one(root / name / f"r{i}", **knobs))
                loads.append(os.getloadavg()[0])
            print(f"  recorded {i}/{k} of each configuration (load average {loads[-1]:.1f})", flush=True)
    return out, loads


def judge(baseline, experimental) -> dict:
    from tb_pipeline_plugin.compare import compare
    from tb_pipeline_plugin.diff.significance.method import SIGNIFICANT

    ex = compare(baseline, experimental).explanation
    significant = [c["name"] for c in ex["contributors"] if c["significance"]["verdict"] == SIGNIFICANT]
    first = ex["contributors"][0] if ex["contributors"] else None
    return {"step": ex["step"]["significance"]["verdict"] == SIGNIFICANT, "significant": significant,
            "first": f"{first['name']} ({first['significance']['verdict']})" if first else "none",
            "hit": first is not None and first["name"] == CULPRIT and first["significance"]["verdict"] == SIGNIFICANT}


def rate_row(condition: str, case: str, sides: str, pairs: list, null: bool) -> dict:
    t0 = time.perf_counter()
    results = [judge(b, e) for b, e in pairs]
    n = len(results)
    row = {"condition": condition, "case": case, "sides": sides, "comparisons": n,
           "step_significant": sum(r["step"] for r in results) / n,
           "any_contributor_significant": sum(bool(r["significant"]) for r in results) / n,
           "miss": None if null else sum(not r["hit"] for r in results) / n,
           "seconds": time.perf_counter() - t0}
    if null:  # what the false alarms name: a hint at which part of the step is noisiest
        row["false_alarm_contributors"] = dict(Counter(c for r in results for c in r["significant"]).most_common(5))
    else:  # a miss that names another part first, significant, misleads more than one that names none
        row["misses_first_contributor"] = dict(Counter(r["first"] for r in results if not r["hit"]).most_common(5))
    return row


def evaluate(condition: str, paths: dict[str, list[Path]], max_group: int, seed: int, means: dict) -> list[dict]:
    from tb_pipeline_plugin.analysis.group import RecordingGroup
    from tb_pipeline_plugin.analysis.processor import TraceProcessor

    runs = {name: [TraceProcessor.load(str(p)) for p in ps] for name, ps in paths.items()}
    # Each recording's mean step, for the record: how far recordings of one configuration land apart.
    for name, tps in runs.items():
        means[name] = [round(float(tp.ledger().steps["step_us"].mean()) / 1000, 2) for tp in tps]
    k = len(runs["null"])
    triples = list(itertools.combinations(range(k), GROUP))
    # One RecordingGroup per triple, reused across comparisons: its pooled analyses are memoised.
    groups = {name: {t: RecordingGroup([runs[name][i] for i in t], [f"r{i + 1}" for i in t]) for t in triples}
              for name in runs}
    rng = random.Random(seed)

    def capped(pairs: list) -> list:
        return pairs if len(pairs) <= max_group else rng.sample(pairs, max_group)

    null, wide = runs["null"], runs["wide"]
    null_g, wide_g = groups["null"], groups["wide"]
    return [
        rate_row(condition, "null, single", "1 vs 1", [(null[i], null[j]) for i in range(k) for j in range(k) if i != j],
                 null=True),
        rate_row(condition, "null, groups of 3", "3 vs 3",
                 capped([(null_g[a], null_g[b]) for a in triples for b in triples if not set(a) & set(b)]), null=True),
        rate_row(condition, "x4, single", "1 vs 1", [(n, w) for n in null for w in wide], null=False),
        rate_row(condition, "x4, groups of 3", "3 vs 3", capped([(null_g[a], wide_g[b]) for a in triples for b in triples]),
                 null=False),
    ]


def print_table(rows: list[dict]) -> None:
    print(f"\n{'condition':10} {'comparison':18} {'sides':7} {'n':>5} {'step signif.':>13} "
          f"{'any contrib. signif.':>21} {'miss':>7}")
    print("-" * 86)
    for r in rows:
        miss = "-" if r["miss"] is None else f"{100 * r['miss']:.1f} %"
        print(f"{r['condition']:10} {r['case']:18} {r['sides']:7} {r['comparisons']:5d} "
              f"{100 * r['step_significant']:11.1f} % {100 * r['any_contributor_significant']:19.1f} % {miss:>7}")
    for r in rows:
        for key, what in (("false_alarm_contributors", "false alarms"), ("misses_first_contributor", "misses name first")):
            if r.get(key):
                print(f"{what}, {r['condition']} {r['case']}: {r[key]}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=9, help="recordings per configuration (at least 6: two disjoint triples)")
    parser.add_argument("--busy", action="store_true", help="also record and judge a set with a core kept busy")
    parser.add_argument("--keep", action="store_true", help="keep the recordings in benchmarks/out/verdicts (and reuse them)")
    parser.add_argument("--max-group-comparisons", type=int, default=2000,
                        help="a seeded sample of the group comparisons beyond this many")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", dest="json_out", help="also write the table (and the run's facts) to this file")
    args = parser.parse_args(argv)
    if args.k < 2 * GROUP:
        parser.error(f"--k must be at least {2 * GROUP}")
    from tb_pipeline_plugin.diff.significance.method import NoisePolicy

    conditions = ["quiet"] + (["busy"] if args.busy else [])
    rows, facts = [], {"k": args.k, "steps_per_recording": STEPS, "between_run_pct": NoisePolicy.from_environment().between_run_pct,
                       "cpus": os.cpu_count(), "started": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    try:
        for condition in conditions:
            print(f"recording {condition}: {args.k} null + {args.k} x4, in turns", flush=True)
            t0 = time.perf_counter()
            paths, loads = record_set(OUT_DIR / f"k{args.k}_{condition}", args.k, condition == "busy", args.keep)
            facts[condition] = {"record_s": round(time.perf_counter() - t0, 1),
                                "load_average_1min": [round(min(loads), 2), round(max(loads), 2)] if loads else None}
            facts[condition]["mean_step_ms"] = {}
            rows += evaluate(condition, paths, args.max_group_comparisons, args.seed, facts[condition]["mean_step_ms"])
            facts[condition]["load_average_after_judging"] = [round(x, 2) for x in os.getloadavg()]
    finally:
        if not args.keep:
            shutil.rmtree(OUT_DIR, ignore_errors=True)
    print_table(rows)
    for condition in conditions:
        print(f"{condition}: recorded in {facts[condition]['record_s']} s, 1-min load average during recording "
              f"{facts[condition]['load_average_1min']}, after judging {facts[condition]['load_average_after_judging']}")
        for name, ms in facts[condition]["mean_step_ms"].items():
            print(f"  {condition} {name}: mean step per recording (ms) {ms}")
    print(f"single recordings judged with an assumed between-run spread of {facts['between_run_pct']} % "
          "(TB_PIPELINE_BETWEEN_RUN_PCT); groups measure theirs")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"facts": facts, "rows": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
