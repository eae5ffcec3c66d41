"""A warm re-sort of `diff/operators`: a slice of the pair's table, no join, no bootstrap.

Target (issue 43): on the H200 amp pair (`../shared/traces/h200/amp`), once
the operator table has answered, asking it again in another order (or with
a filter, or another page) takes at most 10 ms through the real TensorBoard
WSGI app, and runs no table join (`diff/tables.py:join`) and no bootstrap
(`diff/significance/method.py:resample_means`).

Method: one process; the TensorBoard app built as the tests build it
(tests/conftest.py:build_tb_app) over a logdir holding the amp pair; the
first `diff/operators` answer is asked for and waited for (the runs' parse
and the table's first page are not timed). Then every sort key the table
has, each in both orders, and a few filters: each asked once (a new query:
the pair's answer cache misses), timed with `time.perf_counter` around the
WSGI call, with counters on `join` and `resample_means`. The baseline, in
the same run: the same requests asked a second time, which the pair's
answer cache serves (the floor of a request through TensorBoard's routing,
parameter parsing, the provider and the JSON encoder).

    .venv/bin/python benchmarks/bench_resort.py [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
AMP = REPO.parent / "shared" / "traces" / "h200" / "amp"
TARGET_MS = 10.0
sys.path.insert(0, str(REPO / "tests"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", dest="json_out")
    args = ap.parse_args(argv)
    from werkzeug.test import Client

    from conftest import PLUGIN_PREFIX, build_tb_app
    from tb_pipeline_plugin.diff import tables
    from tb_pipeline_plugin.diff.significance import method as significance

    counts = {"join": 0, "resample_means": 0}

    def counted(module, name):
        real = getattr(module, name)

        def wrapper(*a, **k):
            counts[name] += 1
            return real(*a, **k)
        setattr(module, name, wrapper)

    counted(tables, "join")
    counted(significance, "resample_means")

    with tempfile.TemporaryDirectory() as tmp:
        logdir = Path(tmp) / "logdir"
        logdir.mkdir()
        for side in ("baseline", "experimental"):
            shutil.copytree(AMP / side, logdir / side)
        os.environ["TB_PIPELINE_CACHE_DIR"] = str(Path(tmp) / "cache")
        app, plugin = build_tb_app(logdir)
        client = Client(app)
        pair = {"baseline": "baseline", "experimental": "experimental"}

        def ask(**query) -> tuple[float, dict]:
            url = f"{PLUGIN_PREFIX}/diff/operators?{urlencode({**pair, **query})}"
            t0 = time.perf_counter()
            resp = client.get(url)
            seconds = time.perf_counter() - t0
            if resp.status_code != 200:
                raise SystemExit(f"{url}: {resp.status_code} {resp.get_data(as_text=True)[:300]}")
            return seconds, resp.get_json()

        t0 = time.perf_counter()
        first_s, first = ask(wait_ms=10_000)
        while first.get("rows") is None:  # still loading after the wait: ask again
            first_s, first = ask(wait_ms=10_000)
        cold_s = time.perf_counter() - t0
        queries = []
        for key in [k for k in first["rows"][0] if k != "significance"]:
            for order in ("desc", "asc"):
                queries.append({"sort": key, "order": order})
        queries += [{"filter": f} for f in ("mm", "aten::", "copy", "zz-nothing")]
        queries += [{"offset": 10, "limit": 20}, {"sort": "name", "order": "asc", "limit": 5}]
        queries = [q for q in queries if q.get("sort") != first["sort"] or q.get("order") != first["order"]]
        before = dict(counts)
        resort_ms = [ask(**q)[0] * 1000 for q in queries]
        during = {k: counts[k] - before[k] for k in counts}
        again_ms = [ask(**q)[0] * 1000 for q in queries]
        plugin.close()

    row = {
        "pair": "h200/amp", "rows": first["total"], "page_rows": len(first["rows"]), "queries": len(queries),
        "first_answer_s": round(cold_s, 3),
        "resort_ms": {"median": round(statistics.median(resort_ms), 2), "max": round(max(resort_ms), 2)},
        "cached_answer_ms": {"median": round(statistics.median(again_ms), 2), "max": round(max(again_ms), 2)},
        "joins_during_resorts": during["join"], "bootstraps_during_resorts": during["resample_means"],
    }
    row["ratio_median"] = round(row["resort_ms"]["median"] / max(row["cached_answer_ms"]["median"], 1e-9), 2)
    row["target_met"] = (row["resort_ms"]["max"] <= TARGET_MS and not during["join"]
                         and not during["resample_means"])
    print(json.dumps(row, indent=1))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(row, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
