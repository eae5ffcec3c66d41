"""Schema-driven fuzz of every route: no request may answer 5xx.

    .venv/bin/python benchmarks/fuzz_routes.py --examples 300

schemathesis reads docs/openapi.json (the contract) and hypothesis draws
requests for every operation in it: each parameter absent, present, of the
documented type or not, empty, huge, odd Unicode. Half of the draws have their
run names (`run`, `baseline`, `experimental`) replaced by runs that exist, so
the analyses run instead of answering 404. Requests go through the real
TensorBoard WSGI app (in process) over a logdir holding real traces (HTA's
CPU and GPU traces, a recorded one when `--recorded` is given) and hostile
ones (a module cycle, a 2,000-deep module chain, a cut gzip, a gzip bomb, a
non-UTF-8 worker name). Every run is loaded first, so data routes answer
with data rather than 409.

Exit status 0 when no response had a status >= 500; the summary counts
statuses per operation and lists the first failing requests.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from urllib.parse import quote

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]
SHARED = REPO.parent / "shared" / "traces"
RUN_PARAMS = ("run", "baseline", "experimental")


def _modules(n: int, cycle: bool) -> bytes:
    events = [{"ph": "X", "cat": "python_function", "name": f"nn.Module: M_{i}", "pid": 1, "tid": 1,
               "ts": i * 0.001, "dur": n * 0.01 - i * 0.002,
               "args": {"Python id": i + 1, "Python parent id": (i + 1) if cycle else i}} for i in range(n)]
    return json.dumps({"traceEvents": events}).encode()


def build_logdir(root: Path, recorded: list[Path]) -> list[str]:
    files = {
        "cpu": SHARED / "hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
        "gpu": SHARED / "hta/multi_rank/sampled_rank-0.json.gz",
        "amd": SHARED / "hta/amd/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    }
    for name, src in files.items():
        (root / name).mkdir()
        shutil.copy(src, root / name / "w.1.pt.trace.json.gz")
    for i, src in enumerate(recorded):
        (root / f"recorded{i}").mkdir()
        shutil.copy(src, root / f"recorded{i}" / Path(src).name)
    (root / "cycle").mkdir()
    (root / "cycle" / "w.1.pt.trace.json").write_bytes(_modules(50, cycle=True))
    (root / "deep").mkdir()
    (root / "deep" / "w.1.pt.trace.json").write_bytes(_modules(2000, cycle=False))
    (root / "cut").mkdir()
    data = files["cpu"].read_bytes()
    (root / "cut" / "w.1.pt.trace.json.gz").write_bytes(data[: len(data) // 2])
    (root / "bomb").mkdir()
    (root / "bomb" / "w.1.pt.trace.json.gz").write_bytes(gzip.compress(b" " * (1 << 20), 9) * 100)
    (root / "odd").mkdir()
    with open(os.path.join(os.fsencode(root / "odd"), b"w\xfe.1.pt.trace.json.gz"), "wb") as f:
        f.write(data)
    return sorted(p.name for p in root.iterdir())


def load_all(client, prefix: str, runs: list[str], timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    for run in runs:
        while time.monotonic() < deadline:
            status = client.get(f"{prefix}/overview?run={quote(run)}").status_code
            if status != 409:
                break
            time.sleep(0.1)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--examples", type=int, default=300, help="hypothesis examples per operation")
    p.add_argument("--schema", default=str(REPO / "docs" / "openapi.json"))
    p.add_argument("--recorded", nargs="*", default=[])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", help="write the summary here")
    args = p.parse_args(argv)

    import schemathesis
    from hypothesis import HealthCheck, given, settings, strategies as st
    from werkzeug.test import Client

    from conftest import PLUGIN_PREFIX, build_tb_app

    schema = schemathesis.openapi.from_path(args.schema)
    logdir = Path(tempfile.mkdtemp(prefix="fuzz_routes_"))
    runs = build_logdir(logdir, [Path(r) for r in args.recorded])
    app, plugin = build_tb_app(logdir)
    client = Client(app)
    client.get(f"{PLUGIN_PREFIX}/runs")
    load_all(client, PLUGIN_PREFIX, runs)
    statuses: dict[str, Counter] = defaultdict(Counter)
    server_errors: list[dict] = []
    t0 = time.monotonic()

    def real_names(case, rng: random.Random):
        if rng.random() < 0.5:
            if case.query is None:
                case.query = {}
            # An operation whose contract lists no run parameter still gets
            # one sometimes (the route may take it anyway).
            keys = [k for k in RUN_PARAMS if k in case.query] or ["run"]
            for key in keys:
                case.query[key] = rng.choice(runs)
        return case

    try:
        for result in schema.get_all_operations():
            operation = result.ok()
            label = f"{operation.method.upper()} {operation.path}"

            @settings(max_examples=args.examples, database=None, deadline=None, derandomize=True,
                      suppress_health_check=list(HealthCheck))
            @given(case=operation.as_strategy(), rng=st.randoms(use_true_random=False))
            def check(case, rng):
                case = real_names(case, rng)
                response = case.call(app=app)
                statuses[label][response.status_code] += 1
                if response.status_code >= 500 and len(server_errors) < 20:
                    server_errors.append({"operation": label, "query": case.query, "status": response.status_code,
                                          "body": response.text[:500]})

            check()
    finally:
        plugin.close()
        shutil.rmtree(logdir, ignore_errors=True)
    summary = {
        "examples_per_operation": args.examples, "seconds": round(time.monotonic() - t0, 1),
        "requests": sum(sum(c.values()) for c in statuses.values()),
        "status": {op: dict(sorted(c.items())) for op, c in statuses.items()},
        "server_errors": server_errors,
    }
    text = json.dumps(summary, indent=1, default=str)
    if args.json:
        Path(args.json).write_text(text)
    print(text)
    return 0 if not server_errors and all(code < 500 for c in statuses.values() for code in c) else 1


if __name__ == "__main__":
    sys.exit(main())
