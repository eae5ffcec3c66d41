"""Every route's answer on a fixed logdir, for checking that a refactor keeps responses identical.

    python tests/support/route_snapshot.py build LOGDIR            # copy the demo runs and shared traces into LOGDIR
    python tests/support/route_snapshot.py take LOGDIR OUT.json    # ask every route (real TensorBoard app), save
    python tests/support/route_snapshot.py compare A.json B.json [--rename OLD=NEW ...] [--ignore-new KEY ...] [--old-refs]

`take` walks the module-diff tree of every pair (every path it answers) and
asks the operator and kernel tables of each piece, so a change anywhere in
the diff layers shows. `compare` prints each URL whose answer differs, with the
first differing keys; `--rename` maps field names of A to those of B (a
documented contract rename) before comparing; `--ignore-new` drops fields
B added (a documented addition) wherever they are; `--old-refs` moves A's
run references to where answers name their runs since issue 30 (a one-run
answer: `run`, `worker`, `span` at its top; a pair: `baseline` and
`experimental` references, each side's report under `*_report` or
`*_ranks`; the profiler link, once `timeline`, now `profiler_link`, its
`trace` spread at its top).
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

HERE = Path(__file__).resolve().parent.parent  # tests/, where conftest is
sys.path.insert(0, str(HERE))

PAIRS = [
    ("baseline", "experimental"),  # the demo: trace, pipeline statistics and diagnostic results on both sides
    ("hta_control", "hta_test"),
    ("resnet_w0", "resnet_w4"),
    ("hta_single", "hta_cpu_only"),
]
_SHARED = {
    "hta_control": "hta/trace_diff/control.json.gz",
    "hta_test": "hta/trace_diff/test.json.gz",
    "resnet_w0": "kineto/resnet50_num_workers_0",
    "resnet_w4": "kineto/resnet50_num_workers_4",
    "hta_single": "hta/single_rank",
    "hta_cpu_only": "hta/cpu_only",
    "hta_ranks": "hta/multi_rank",
}


def build(logdir: Path) -> None:
    repo = HERE.parent
    shared = repo.parent / "shared" / "traces"
    logdir.mkdir(parents=True, exist_ok=True)
    for run in (repo / "samples" / "runs").iterdir():
        if run.is_dir():
            shutil.copytree(run, logdir / run.name, dirs_exist_ok=True)
    for run, rel in _SHARED.items():
        src = shared / rel
        (logdir / run).mkdir(exist_ok=True)
        if src.is_dir():
            for f in src.iterdir():
                shutil.copy(f, logdir / run / f.name)
        else:
            shutil.copy(src, logdir / run / ("w0.1.pt.trace" + "".join(src.suffixes)))


def take(logdir: Path, out: Path) -> None:
    from werkzeug.test import Client

    from conftest import PLUGIN_PREFIX, build_tb_app, still_loading

    app, plugin = build_tb_app(logdir)
    client = Client(app)
    answers: dict[str, object] = {}

    def get(route: str, **args) -> object:
        url = f"{route}?{urlencode(args)}" if args else route
        deadline = time.monotonic() + 300
        while True:
            resp = client.get(PLUGIN_PREFIX + url)
            if not still_loading(resp) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        body = resp.get_json()
        answers[url] = {"status": resp.status_code, "body": body}
        return body if resp.status_code == 200 else None

    runs = get("/runs")
    names = sorted(r["name"] for r in runs["runs"])
    # Loading states of the first listing depend on timing: take it again once all loaded.
    for run in names:
        for route in ("/overview", "/kernels", "/modules", "/profiler_link"):
            get(route, run=run)
        for group_by in ("name", "name_and_shape"):
            get("/operators", run=run, group_by=group_by)
        get("/pipeline", run=run)
        get("/diagnostic", run=run)
        get("/distributed", baseline=run)
    get("/runs")
    for b, e in PAIRS + [("hta_ranks", "hta_ranks")]:
        pair = {"baseline": b, "experimental": e}
        get("/diff/overview", **pair)
        get("/diff/explain", **pair)
        get("/diff/memory", **pair)
        get("/diff/pipeline", **pair)
        get("/diff/diagnostic", **pair)
        get("/distributed", **pair)
        for group_by in ("name", "name_and_shape"):
            get("/diff/operators", **pair, group_by=group_by)
            get("/diff/operators", **pair, group_by=group_by, sort="name", order="asc", limit=5)
        get("/diff/kernels", **pair)
        get("/diff/kernels", **pair, filter="gemm")
        queue, seen = [""], set()
        while queue and len(seen) < 60:
            path = queue.pop(0)
            if path in seen:
                continue
            seen.add(path)
            node = get("/diff/modules", **pair, path=path, limit=50)
            if path:
                get("/diff/operators", **pair, path=path)
                get("/diff/kernels", **pair, path=path)
                get("/diff/timeline", **pair, path=path)
            if node:
                queue += [c["path"] for c in node.get("children", []) if c.get("path")]
    plugin.close()
    # The first listing's states depend on how far the prefetches got.
    answers.pop("/runs")
    out.write_text(json.dumps(answers, indent=1, sort_keys=True))
    print(f"{len(answers)} answers -> {out}")


def _ref(run: str) -> dict:
    return {"run": run, "worker": "", "span": ""}


def _old_refs(url: str, body):
    """A's answer at `url` with its run references where B names them (module docstring)."""
    if not isinstance(body, dict) or "error" in body:
        return body
    route = url.split("?", 1)[0]
    query = dict(p.split("=", 1) for p in url.split("?", 1)[1].split("&")) if "?" in url else {}
    body = dict(body)
    if route == "/profiler_link" and "trace" in body:
        body = {**body.pop("trace"), **body}
    elif route in ("/operators", "/kernels", "/modules") and "run" not in body:
        # These answers named no run before; B's reference is the one the other routes resolve.
        return body
    elif route in ("/pipeline", "/diagnostic"):
        body.update(worker="", span="")
    elif route == "/diff/pipeline":
        b, e = body.pop("baseline_run"), body.pop("experimental_run")
        body["baseline_report"], body["experimental_report"] = body.pop("baseline"), body.pop("experimental")
        body["baseline"], body["experimental"] = _ref(b), _ref(e)
    elif route == "/diff/diagnostic":
        for side in ("baseline", "experimental"):
            report = dict(body.pop(side))
            body[side] = _ref(report.pop("run"))
            body[f"{side}_report"] = report
    elif route == "/distributed":
        for side in ("baseline", "experimental"):
            ranks = body.pop(side)
            if ranks is None:
                body[side], body[f"{side}_ranks"] = None, None
                continue
            ranks = dict(ranks)
            body[side] = _ref(ranks.pop("run"))
            body[f"{side}_ranks"] = ranks
    return body


def _renamed(value, renames: dict[str, str]):
    if isinstance(value, dict):
        return {renames.get(k, k): _renamed(v, renames) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, renames) for v in value]
    return value


def _differences(a, b, where: str = "", out=None, new: set[str] = frozenset()) -> list[str]:
    """Where `a` and `b` differ; a key in `new` that only `b` has is no difference."""
    out = [] if out is None else out
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k in new and k not in a:
                continue
            if k not in a or k not in b:
                out.append(f"{where}.{k}: {'only in B' if k not in a else 'only in A'}")
            else:
                _differences(a[k], b[k], f"{where}.{k}", out, new)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            _differences(x, y, f"{where}[{i}]", out, new)
    elif a != b or type(a) is not type(b):  # 4 vs 4.0 is a change in the JSON
        out.append(f"{where}: {str(a)[:120]!s} != {str(b)[:120]!s}")
    return out


def compare(a_path: Path, b_path: Path, renames: dict[str, str], new: set[str] = frozenset(),
            old_refs: bool = False) -> int:
    a = _renamed(json.loads(a_path.read_text()), renames)
    b = json.loads(b_path.read_text())
    if old_refs:
        # The torch-tb-profiler link's route was `timeline`, a name it shared with our Timeline view.
        a = {url.replace("/timeline?", "/profiler_link?", 1) if url.startswith("/timeline?") else url: answer
             for url, answer in a.items()}
        a = {url: {**answer, "body": _old_refs(url, answer["body"])} for url, answer in a.items()}
        # One-run answers that named no run before: B's reference is checked by the route tests.
        for url, answer in b.items():
            if url.split("?")[0] in ("/operators", "/kernels", "/modules") and isinstance(answer["body"], dict):
                answer["body"] = {k: v for k, v in answer["body"].items() if k not in ("run", "worker", "span")}
    bad = 0
    for url in sorted(set(a) | set(b)):
        if url not in a or url not in b:
            print(f"{url}: only in {'B' if url not in a else 'A'}")
            bad += 1
            continue
        diffs = _differences(a[url], b[url], new=new)
        if diffs:
            bad += 1
            print(f"{url}: {len(diffs)} differences")
            for d in diffs[:8]:
                print("   ", d)
    print(f"{len(a)} vs {len(b)} answers, {bad} differ")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("build").add_argument("logdir", type=Path)
    t = sub.add_parser("take")
    t.add_argument("logdir", type=Path)
    t.add_argument("out", type=Path)
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    c.add_argument("--rename", action="append", default=[], help="OLD=NEW field name in A")
    c.add_argument("--ignore-new", action="append", default=[], metavar="KEY", help="a field only B has, dropped")
    c.add_argument("--old-refs", action="store_true", help="A names its runs as before issue 30")
    args = ap.parse_args()
    if args.cmd == "build":
        build(args.logdir)
        return 0
    if args.cmd == "take":
        take(args.logdir, args.out)
        return 0
    return compare(args.a, args.b, dict(r.split("=", 1) for r in args.rename), set(args.ignore_new), args.old_refs)


if __name__ == "__main__":
    sys.exit(main())
