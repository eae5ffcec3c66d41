"""Diff benchmark: first responses of the diff routes on two big traces.

Targets, for two ~200 MiB traces already loaded (TraceProcessor.load done,
nothing derived yet, as the plugin's store holds them):
  * first `diff/modules` root response  < 0.3 s and < 1 MB of JSON;
  * first `diff/operators` page         < 0.1 s.

Pairs (real traces grown in time with replicate.py, so every step, operator
and kernel is a real one):
  * `gpu`: HTA's trace_diff pair, control (A100) vs test (V100): kernels,
    launches, an autograd thread, annotations, no module events;
  * `cpu`: two runs recorded here with samples/record_samples.py (4 vs 5
    blocks, `with_stack=True`): module tree, fwdbwd flows, memory events.

Measured in-process with `time.perf_counter`, after both traces are loaded;
the JSON size is that of the encoder the routes use (http.encode_json).
Every figure is "first": each repeat builds fresh TraceProcessors over the
already decoded tables (nothing derived or memoised: pieces, operator
tables, overviews all computed inside the timed call); the minimum over
repeats is reported (least disturbed by other load), the maximum too, and
the targets must hold for the maximum.

    .venv/bin/python benchmarks/bench_diff.py [--size-mb 200] [--keep] [--pairs gpu,cpu] [--json out.json]
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
OUT_DIR = os.path.join(HERE, "out")
MIB = 1 << 20
HTA = os.path.join(REPO_ROOT, "..", "shared", "traces", "hta", "trace_diff")
MODULES_ROOT_MAX_S = 0.3
MODULES_ROOT_MAX_BYTES = 1_000_000
OPERATORS_PAGE_MAX_S = 0.1

sys.path.insert(0, HERE)
sys.path.insert(0, REPO_ROOT)
from replicate import replicate_trace  # noqa: E402  (the infra engineer's helper, shared with bench_load)


def build_pair(name: str, size_mb: float, reuse: bool) -> tuple[str, str]:
    os.makedirs(OUT_DIR, exist_ok=True)
    paths = []
    for side, source in _sources(name):
        dst = os.path.join(OUT_DIR, f"diff_{name}_{side}_{size_mb:g}mb.json")
        if reuse and os.path.exists(dst):
            print(f"reusing {dst}")
        else:
            t0 = time.perf_counter()
            stats = replicate_trace(source(), dst, int(size_mb * MIB))
            print(f"built {dst}: {stats.bytes_written / MIB:.0f} MiB, {stats.events} events, "
                  f"{stats.copies} copies in {time.perf_counter() - t0:.1f} s")
        paths.append(dst)
    return paths[0], paths[1]


def _sources(name: str):
    if name == "gpu":
        return [(side, lambda side=side: _hta(side)) for side in ("control", "test")]
    return [("baseline", lambda: _record("baseline", 4)), ("experimental", lambda: _record("experimental", 5))]


def _hta(side: str) -> str:
    path = os.path.join(HTA, f"{side}.json.gz")
    if not os.path.exists(path):
        raise SystemExit(f"missing {path} (expects ../shared beside the repo)")
    return path


def _record(side: str, layers: int) -> str:
    sys.path.insert(0, os.path.join(REPO_ROOT, "samples"))
    from record_samples import record_run

    out = os.path.join(OUT_DIR, f"diff_cpu_source_{side}")
    shutil.rmtree(out, ignore_errors=True)
    record_run(out, layers=layers, with_stack=True)
    [fname] = [n for n in os.listdir(out) if n.endswith(".pt.trace.json")]
    return os.path.join(out, fname)


def timed(fn):
    t0 = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - t0


def measure(name: str, b_path: str, e_path: str, repeat: int) -> dict:
    from tb_pipeline_plugin.analysis.processor import TraceProcessor
    from tb_pipeline_plugin.diff.impls.modules import ModulesQuery, diff_modules_impl
    from tb_pipeline_plugin.diff.impls.overview import diff_overview_impl
    from tb_pipeline_plugin.diff.impls.tables import diff_kernels_impl, diff_operators_impl
    from tb_pipeline_plugin.diff.pair import pair_of
    from tb_pipeline_plugin.diff.tables import TableQuery
    from tb_pipeline_plugin.server.http import encode_json

    b, load_b = timed(lambda: TraceProcessor.load(b_path))
    e, load_e = timed(lambda: TraceProcessor.load(e_path))
    row = {"pair": name, "file_mb": [os.path.getsize(p) / MIB for p in (b_path, e_path)],
           "events": [len(b.table), len(e.table)], "load_s": [load_b, load_e],
           "steps": [len(b.linked.steps.name), len(e.linked.steps.name)], "repeat": repeat}
    timings: dict[str, list[float]] = {}

    def timed(key, fn):
        value, seconds = timed(fn)
        timings.setdefault(key, []).append(seconds)
        return value

    for k in range(repeat):
        if k:
            # A fresh processor over the same table: nothing derived yet,
            # exactly as the store hands over a just-loaded run.
            b, e = TraceProcessor(b.table, b_path), TraceProcessor(e.table, e_path)
        gc.collect()
        pair = pair_of(b, e)
        root = timed("modules_root_s", lambda: encode_json(diff_modules_impl(pair, ModulesQuery(path=""))))
        step = timed("modules_step_s", lambda: encode_json(diff_modules_impl(pair, ModulesQuery(path="0"))))
        page = timed("operators_cold_s", lambda: encode_json(diff_operators_impl(pair)))
        timed("operators_warm_s", lambda: encode_json(diff_operators_impl(pair, TableQuery(sort="name"))))
        timed("operators_piece_s", lambda: encode_json(diff_operators_impl(pair, TableQuery(path="0.0"))))
        timed("kernels_cold_s", lambda: encode_json(diff_kernels_impl(pair)))
        timed("overview_cold_s", lambda: encode_json(diff_overview_impl(pair)))
    row["modules_root_bytes"], row["modules_step_bytes"], row["operators_page_bytes"] = len(root), len(step), len(page)
    row["atoms"] = [len(b.pieces().kind), len(e.pieces().kind)]
    for key, values in timings.items():
        row[key] = min(values)  # least disturbed by other load on the machine
        row[key + "_all"] = values
    row["passed"] = (
        max(timings["modules_root_s"]) < MODULES_ROOT_MAX_S
        and row["modules_root_bytes"] < MODULES_ROOT_MAX_BYTES
        and max(timings["operators_cold_s"]) < OPERATORS_PAGE_MAX_S
    )
    return row


def measure_pairs(pairs: list[str], size_mb: float, keep: bool, measure_pair, repeat: int) -> list[dict]:
    """`measure_pair(name, b_path, e_path, repeat)` of each pair, built first;
    the built traces are removed afterwards unless `keep`."""
    rows, built = [], []
    try:
        for name in pairs:
            b_path, e_path = build_pair(name, size_mb, reuse=keep)
            built += [b_path, e_path]
            rows.append(measure_pair(name, b_path, e_path, max(1, repeat)))
            gc.collect()
    finally:
        if not keep:
            for p in built:
                if os.path.exists(p):
                    os.remove(p)
            for side in ("baseline", "experimental"):
                shutil.rmtree(os.path.join(OUT_DIR, f"diff_cpu_source_{side}"), ignore_errors=True)
    return rows


def print_rows(rows: list[dict]) -> None:
    for r in rows:
        print(f"\n== {r['pair']}: {r['file_mb'][0]:.0f} + {r['file_mb'][1]:.0f} MiB, "
              f"{r['events'][0]} + {r['events'][1]} events, {r['steps'][0]} + {r['steps'][1]} steps, "
              f"{r['atoms'][0]} + {r['atoms'][1]} piece atoms; loaded in {r['load_s'][0]:.1f} + {r['load_s'][1]:.1f} s")
        print(f"  (min of {r['repeat']} cold repeats; max in brackets)")
        print(f"  diff/modules root (first)      {r['modules_root_s'] * 1000:8.1f} ms  {r['modules_root_bytes'] / 1000:8.1f} kB"
              f"   [{max(r['modules_root_s_all']) * 1000:.1f} ms]  target < {MODULES_ROOT_MAX_S * 1000:.0f} ms, < {MODULES_ROOT_MAX_BYTES / 1000:.0f} kB")
        print(f"  diff/modules step 0 (zoom)     {r['modules_step_s'] * 1000:8.1f} ms  {r['modules_step_bytes'] / 1000:8.1f} kB")
        print(f"  diff/operators page (first)    {r['operators_cold_s'] * 1000:8.1f} ms  {r['operators_page_bytes'] / 1000:8.1f} kB"
              f"   [{max(r['operators_cold_s_all']) * 1000:.1f} ms]  target < {OPERATORS_PAGE_MAX_S * 1000:.0f} ms"
              " (computes both runs' operator tables)")
        print(f"  diff/operators page, re-sorted {r['operators_warm_s'] * 1000:8.1f} ms")
        print(f"  diff/operators piece 0.0       {r['operators_piece_s'] * 1000:8.1f} ms")
        print(f"  diff/kernels page, cold        {r['kernels_cold_s'] * 1000:8.1f} ms")
        print(f"  diff/overview, cold            {r['overview_cold_s'] * 1000:8.1f} ms")
        print(f"  {'PASS' if r['passed'] else 'FAIL'}")


def run_cli(argv, description: str, measure_pair, print_pairs, repeat: int) -> int:
    """The pair benchmarks' command line (this file's, bench_timeline.py's):
    build the pairs asked for, measure, print, optionally write JSON; exit
    status 0 when every row passed."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--size-mb", type=float, default=200, help="target size of each trace, MiB")
    parser.add_argument("--keep", action="store_true", help="keep (and reuse) built inputs in benchmarks/out/")
    parser.add_argument("--pairs", default="gpu,cpu", help="comma-separated subset of gpu,cpu")
    parser.add_argument("--repeat", type=int, default=repeat, help="measurements per pair (fresh processors)")
    parser.add_argument("--json", dest="json_out", help="also write the rows to this file")
    args = parser.parse_args(argv)
    pairs = [p for p in args.pairs.split(",") if p]
    if set(pairs) - {"gpu", "cpu"}:
        parser.error(f"unknown pairs: {sorted(set(pairs) - {'gpu', 'cpu'})}")
    rows = measure_pairs(pairs, args.size_mb, args.keep, measure_pair, args.repeat)
    print_pairs(rows)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(rows, f, indent=2)
    return 0 if all(r["passed"] for r in rows) else 1


def main(argv=None) -> int:
    return run_cli(argv, __doc__.splitlines()[0], measure, print_rows, 3)


if __name__ == "__main__":
    sys.exit(main())
