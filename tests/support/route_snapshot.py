"""Every route's answer on a fixed logdir, for checking that a refactor keeps responses identical.

    python tests/support/route_snapshot.py build LOGDIR            # copy the demo runs and shared traces into LOGDIR
    python tests/support/route_snapshot.py take LOGDIR OUT.json [--max-paths N] [--expect-package DIR]
    python tests/support/route_snapshot.py compare A.json B.json [--rename OLD=NEW ...] [--ignore-new KEY ...] [--old-refs]

`take` asks every route of every run and of every pair (real TensorBoard app,
through HTTP only) and walks the module-diff tree of every pair, asking the
operator, kernel and Timeline answers of each piece it visits, so a change
anywhere in the diff layers shows. The walk visits the root and its children
(the steps) first, then depth-first, each step's subtree before the next
(every kind of piece, at every depth, in the first steps), up to
`--max-paths` paths a pair (default: all). `--expect-package` makes it fail
unless `tb_pipeline_plugin` is imported from DIR (a snapshot of an older
checkout must not be taken with the installed one). The script drives the
app itself, without tests/conftest.py, so it takes the same snapshot of any
version of the package.

`compare` prints each URL whose answer differs, with the first differing
keys (`compare()` returns them: tests/routes/test_route_snapshot.py asserts on
them); `--rename` maps field names of A to those of B (a documented contract
rename) before comparing; `--ignore-new` drops fields B added (a documented
addition) wherever they are; `--old-refs` moves A's run references to where
answers name their runs since issue 30 (a one-run answer: `run`, `worker`,
`span` at its top; a pair: `baseline` and `experimental` references, each
side's report under `*_report` or `*_ranks`; the profiler link, once
`timeline`, now `profiler_link`, its `trace` spread at its top).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

REPO = Path(__file__).resolve().parents[2]
PLUGIN_PREFIX = "/data/plugin/tb_pipeline"

PAIRS = [
    ("baseline", "experimental"),  # the demo: trace, pipeline statistics and diagnostic results on both sides
    ("hta_control", "hta_test"),
    ("resnet_w0", "resnet_w4"),
    ("hta_single", "hta_cpu_only"),
    ("hta_ranks", "hta_ranks"),  # two ranks, against itself
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
# The one-run routes (each asked of every run) and the pair routes (each asked of every pair).
RUN_ROUTES = ("/overview", "/operators", "/kernels", "/modules", "/profiler_link", "/pipeline", "/diagnostic",
              "/distributed")
PAIR_ROUTES = ("/diff/overview", "/diff/explain", "/diff/memory", "/diff/pipeline", "/diff/diagnostic",
               "/distributed", "/diff/operators", "/diff/kernels", "/diff/modules", "/diff/timeline")


def build(logdir: Path, samples: Path | None = None, shared: Path | None = None) -> None:
    """The demo runs (`samples`, default samples/runs) and the shared traces (`shared`, default
    ../shared/traces) copied into `logdir` under the run names of PAIRS."""
    samples = samples or REPO / "samples" / "runs"
    shared = shared or REPO.parent / "shared" / "traces"
    logdir.mkdir(parents=True, exist_ok=True)
    for run in samples.iterdir():
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


def _app(logdir: Path):
    """The real TensorBoard WSGI app serving our plugin, with the flags of TensorBoard's own parser (as
    tests/conftest.py:build_tb_app, repeated here so that any version of the package is driven the same
    way, whatever the tests of that version look like)."""
    from tensorboard import program
    from tensorboard.backend import application
    from tensorboard.plugins import base_plugin
    from tensorboard.plugins.core import core_plugin

    from tb_pipeline_plugin.server.plugin import PipelinePlugin

    tb = program.TensorBoard(plugins=[core_plugin.CorePluginLoader()])
    tb.configure(argv=["tensorboard", "--logdir", str(logdir)])
    flags = tb.flags
    instances: dict = {}
    context = base_plugin.TBContext(flags=flags, logdir=flags.logdir, plugin_name_to_instance=instances,
                                    sampling_hints=flags.samples_per_plugin, window_title=flags.window_title)
    plugin = PipelinePlugin(context)
    instances[plugin.plugin_name] = plugin
    return application.TensorBoardWSGI([plugin], flags.path_prefix), plugin


def _still_loading(resp) -> bool:
    """409, or an answer that holds what is ready and says it is not complete (as tests/conftest.py)."""
    if resp.status_code == 409:
        return True
    return resp.status_code == 200 and resp.is_json and (resp.get_json() or {}).get("complete") is False


def take(logdir: Path, out: Path, max_paths: int | None = None, expect_package: Path | None = None) -> dict:
    """Every answer (module docstring), saved to `out` as {url: {"status", "body"}}; returns it."""
    # Every answer decoded with its contract type, as under the tests: an answer off its declared shape fails.
    os.environ.setdefault("TB_PIPELINE_VALIDATE_RESPONSES", "1")
    import tb_pipeline_plugin

    package = Path(tb_pipeline_plugin.__file__).resolve().parent
    print(f"tb_pipeline_plugin from {package}", flush=True)
    if expect_package is not None and package != expect_package.resolve():
        raise SystemExit(f"tb_pipeline_plugin imported from {package}, not {expect_package.resolve()}")
    from werkzeug.test import Client

    app, plugin = _app(logdir)
    client = Client(app)
    answers: dict[str, object] = {}

    def get(route: str, record: bool = True, **args) -> object:
        url = f"{route}?{urlencode(args)}" if args else route
        deadline = time.monotonic() + 300
        while True:
            resp = client.get(PLUGIN_PREFIX + url)
            if not _still_loading(resp) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        body = resp.get_json(silent=True)
        if body is None:
            body = resp.get_data(as_text=True)[:2000]
        if record:
            answers[url] = {"status": resp.status_code, "body": body}
        return body if resp.status_code == 200 else None

    # The first listing's load states depend on how far the prefetches got: it names the runs, and the
    # listing is recorded once every run was asked for.
    names = sorted(r["name"] for r in get("/runs", record=False)["runs"])
    for run in names:
        for route in ("/overview", "/kernels", "/modules", "/profiler_link", "/pipeline", "/diagnostic"):
            get(route, run=run)
        for group_by in ("name", "name_and_shape"):
            get("/operators", run=run, group_by=group_by)
        get("/distributed", baseline=run)
    for b, e in PAIRS:
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
        get("/diff/timeline", **pair)  # no path: the whole window
        seen: list[str] = []

        def visit(path: str) -> list[str]:
            """The piece's answers; its children's paths."""
            seen.append(path)
            node = get("/diff/modules", **pair, path=path, limit=50)
            if path:
                get("/diff/operators", **pair, path=path)
                get("/diff/kernels", **pair, path=path)
                get("/diff/timeline", **pair, path=path)
            return [c["path"] for c in (node or {}).get("children", []) if c.get("path")]

        def full() -> bool:
            return max_paths is not None and len(seen) >= max_paths

        steps = visit("")
        below = {}
        for step in steps:
            if full():
                break
            below[step] = visit(step)
        stack = [path for step in reversed(steps) for path in reversed(below.get(step, []))]
        while stack and not full():
            stack += reversed(visit(stack.pop()))
    # The listing once nothing loads: while a load is under way (the runs' span labels are read in the
    # background), which states and labels it has depends on how far that got.
    deadline = time.monotonic() + 120
    while (get("/runs") or {}).get("loading") and time.monotonic() < deadline:
        time.sleep(0.1)
    plugin.close()
    out.write_text(json.dumps(answers, indent=1, sort_keys=True))
    print(f"{len(answers)} answers -> {out}", flush=True)
    return answers


def _ref(run: str) -> dict:
    return {"run": run, "worker": "", "span": ""}


def _old_refs(url: str, body):
    """A's answer at `url` with its run references where B names them (module docstring)."""
    if not isinstance(body, dict) or "error" in body:
        return body
    route = url.split("?", 1)[0]
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


@dataclass(frozen=True)
class Difference:
    """One URL whose answers differ: `keys` says where (`.body.rows[3].delta_us: 1.0 != 2.0`), or that
    only one snapshot asked it."""

    url: str
    keys: tuple[str, ...]

    def __str__(self) -> str:
        head = f"{self.url}: {len(self.keys)} difference{'s' * (len(self.keys) != 1)}"
        return head + "".join(f"\n    {k}" for k in self.keys[:8])


def load(snapshot) -> dict:
    """A snapshot: itself, or read from its path."""
    return json.loads(Path(snapshot).read_text()) if isinstance(snapshot, (str, Path)) else snapshot


def compare(a, b, renames: dict[str, str] | None = None, new: set[str] = frozenset(),
            old_refs: bool = False) -> list[Difference]:
    """The differences of snapshot `b` from `a` (each a snapshot or the path of one), URL by URL."""
    a = _renamed(load(a), renames or {})
    b = dict(load(b))
    if old_refs:
        # The torch-tb-profiler link's route was `timeline`, a name it shared with our Timeline view.
        a = {url.replace("/timeline?", "/profiler_link?", 1) if url.startswith("/timeline?") else url: answer
             for url, answer in a.items()}
        a = {url: {**answer, "body": _old_refs(url, answer["body"])} for url, answer in a.items()}
        # One-run answers that named no run before: B's reference is checked by the route tests.
        for url, answer in list(b.items()):
            if url.split("?")[0] in ("/operators", "/kernels", "/modules") and isinstance(answer["body"], dict):
                body = {k: v for k, v in answer["body"].items() if k not in ("run", "worker", "span")}
                b[url] = {**answer, "body": body}
    found = []
    for url in sorted(set(a) | set(b)):
        if url not in a or url not in b:
            found.append(Difference(url, (f"only in {'B' if url not in a else 'A'}",)))
            continue
        diffs = _differences(a[url], b[url], new=new)
        if diffs:
            found.append(Difference(url, tuple(diffs)))
    return found


def main() -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("build").add_argument("logdir", type=Path)
    t = sub.add_parser("take")
    t.add_argument("logdir", type=Path)
    t.add_argument("out", type=Path)
    t.add_argument("--max-paths", type=int, default=None, help="module-tree paths walked per pair (default: all)")
    t.add_argument("--expect-package", type=Path, default=None, metavar="DIR",
                   help="fail unless tb_pipeline_plugin is imported from DIR")
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
        take(args.logdir, args.out, args.max_paths, args.expect_package)
        return 0
    found = compare(args.a, args.b, dict(r.split("=", 1) for r in args.rename), set(args.ignore_new), args.old_refs)
    for difference in found:
        print(difference)
    print(f"{len(load(args.a))} vs {len(load(args.b))} answers, {len(found)} differ")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
