"""A refactor leaves every route's answer as it was (issue 43): the route
snapshot (tests/support/route_snapshot.py) taken with the code of BEFORE, the
commit the refactor starts from, and with the current tree, on the same
logdir (the demo pair, recorded once per `make test` as `make demo` records it,
and the shared traces' pairs), must be
identical except for the changes listed in INTENDED.

The demo pair is recorded on each machine (support/recorded.py), so its numbers
differ between machines and no stored snapshot could be its golden: both
sides are taken on this machine, from the same recording of the runs.
BEFORE's side is itself a recording (`before_snapshot`, support/recordings.py),
made once from the demo pair's entry and kept while BEFORE, the snapshot
script, the pinned libraries and that entry are the same: BEFORE's package
is `git archive`d into a temporary folder (its C extensions copied from the
current package when their sources are the same, else built there, else the
package's own fallback decodes). The current tree's side is taken here, now.
Each side runs the current tree's snapshot script in its own process, with
its own parse cache, and checks that it imported the package it was meant to
(the venv's editable install points at this checkout).

It measures no time and shares nothing with another process: it runs on the
parallel workers (tests/conftest.py).
"""
from __future__ import annotations

import importlib.machinery
import io
import os
import shutil
import signal
import subprocess
import sys
import tarfile
from collections import Counter
from pathlib import Path

from conftest import REPO_ROOT
from support import route_snapshot
from support.recorded import demo_pair
from support.recordings import recording

# The commit the refactor of issue 43 starts from (the first-parent ancestor of its first commit).
BEFORE = "d8d9a3cf585754f5382118930b9f02e4f7bf118c"

# The contract changes made on purpose since BEFORE, each with its reason. Whoever changes an answer on
# purpose adds it here, in the commit that changes it:
#   "OLD=NEW": a field renamed (BEFORE's OLD is compared as NEW, wherever it is; compare's --rename);
#   "+NEW":    a field added (NEW is dropped wherever BEFORE's answer lacks it; compare's --ignore-new);
#   "~/ROUTE?QUERY": the answer at that URL (and every URL it begins) changed its values on purpose;
#   "~RUN":    every answer about run RUN (a run= / baseline= / experimental= of its URL) did.
# Any other difference fails the test.
INTENDED: dict[str, str] = {
    "+basis": "issue 44: the explanation's step names its clock and its steps (diff/step_basis.py:describe)",
    "+rest_delta_us": "issue 44: the part of the recorded delta the profiled steps' parts do not hold",
    "+rest_share_pct": "issue 44: its share, which with the contributors' makes 100 %",
    "~/diff/explain?baseline=baseline&experimental=experimental":
        "issue 44: contributor shares are of the delta the answer states (the recorded steps'), not of the "
        "profiled steps' own",
    "~/diff/overview?": "issue 44: the overview's note names the step time's clock and steps",
    "~hta_test": "issue 44: work launched before the profiled window is no step's (trace/link.py, "
                 "analysis/kernels.py): its first step starts where that work ended, and the Kernels table "
                 "gives it a row of its own",
    "~hta_single": "issue 44: the explanation's note says its host ran ahead of its device",
    "+device_idle_us": "issue 45: each step's device idle time by cause (analysis/device_idle.py)",
    "+bound": "issue 45: what bounds a run's profiled steps",
    "~/diff/explain?": "issue 45: the sentence names what changed on the GPU (the GEMMs' precision and "
                       "autocast's casts, fused kernels, CUDA graphs) and a change of bound; the comparability "
                       "check lists those",
    "+baseline_recording": "issue 47: a group's module diff and Timeline name the recording whose steps they show",
    "+experimental_recording": "issue 47: the same for the experimental side",
    "+recordings_note": "issue 47: and say so in a sentence (null unless a side is a group)",
    "~/diff/pipeline?": "issue 47: a stage value a run did not measure (a DataLoader part's items/s, queue waits, "
                        "occupancy, busy share) is null, not 0; the GPU utilization row says it is the driver's "
                        "samples over the whole run",
    "~/diff/timeline?baseline=baseline&experimental=experimental":
        "issue 47: no event overlaps another on its row (the demo's ProfilerStep opens inside the loader's next())",
    "+short_name": "issue 45: every kernel row carries its display name (analysis/kernel_names.py)",
    "+baseline_kernel_short_names": "issue 45: the explanation's top operator names its kernels short too",
    "+experimental_kernel_short_names": "issue 45: the same for the experimental run's kernels",
    "+snapshot": "issue 46: diff/memory compares both runs' CUDA memory snapshots (null when neither has one)",
}

# Module-tree paths walked per pair (the root, its steps, then depth-first: every depth and kind of
# piece of the first steps; the demo's first two steps whole), each asked for its module, operator,
# kernel and Timeline answers. The five pairs' whole trees are 762 paths, about 40 s of CPU a side;
# 80 a pair are 347 paths and 1,520 answers, about 22 s a side (issue 43: `make test` in 10 minutes).
MAX_PATHS = 80
# Each side's snapshot, at most (a side that hangs fails the test instead of `make test`).
TAKE_TIMEOUT_S = 300
SHARED = REPO_ROOT.parent / "shared" / "traces"

PACKAGE = "tb_pipeline_plugin"
EXTENSIONS = ("_scan", "_nest")  # tb_pipeline_plugin/trace/_*.c, built in place by setup.py


def _intended() -> tuple[dict[str, str], set[str], set[str]]:
    renames, new, changed = {}, set(), set()
    for change, why in INTENDED.items():
        assert isinstance(why, str) and why.strip(), f"INTENDED[{change!r}] gives no reason"
        if change.startswith("+") and len(change) > 1:
            new.add(change[1:])
        elif change.startswith("~") and len(change) > 1:
            changed.add(change[1:])
        elif change.count("=") == 1 and all(change.split("=")):
            old, name = change.split("=")
            renames[old] = name
        else:
            raise AssertionError(f"INTENDED[{change!r}]: neither 'OLD=NEW', '+NEW' nor '~WHERE'")
    return renames, new, changed


def _changed_on_purpose(url: str, changed: set[str]) -> bool:
    """The answer at `url` changed its values on purpose (INTENDED's "~" entries)."""
    query = url.split("?", 1)[1] if "?" in url else ""
    runs = {v for k, v in (kv.split("=", 1) for kv in query.split("&") if "=" in kv)
            if k in ("run", "baseline", "experimental")}
    return any(url.startswith(c) if c.startswith("/") else c in runs for c in changed)


def _git(*args: str, binary: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True, text=not binary, timeout=120)


def _before_exists() -> None:
    """Fails (never skips; AssertionError, which a recording's build also fails with) when BEFORE is not in this
    clone's history: without it nothing is compared."""
    try:
        found = _git("cat-file", "-e", f"{BEFORE}^{{commit}}")
    except FileNotFoundError:
        raise AssertionError("git is not installed: this test compares every route's answer with commit "
                             f"{BEFORE}'s, which it reads from the repository's history") from None
    if found.returncode == 0:
        return
    shallow = _git("rev-parse", "--is-shallow-repository").stdout.strip() == "true"
    raise AssertionError(f"commit {BEFORE} (where the refactor of issue 43 starts) is not in this clone's history"
                         + (" (a shallow clone: `git fetch --unshallow`)" if shallow else
                            f" ({REPO_ROOT} is no git checkout, or one without that commit: fetch it)")
                         + "; this test compares every route's answer with that commit's, and cannot run without it. "
                         f"git said: {found.stderr.strip()[:300]}")


def _built(package: Path, name: str) -> Path | None:
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = package / "trace" / (name + suffix)
        if path.exists():
            return path
    return None


def _before_package(root: Path) -> Path:
    """BEFORE's package under `root` (root/tb_pipeline_plugin), with its C extensions."""
    archive = _git("archive", "--format=tar", BEFORE, PACKAGE, "setup.py", binary=True)
    assert archive.returncode == 0, archive.stderr.decode()[-2000:]
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        if hasattr(tarfile, "data_filter"):  # Python 3.10.12+, 3.11.4+
            tar.extractall(root, filter="data")
        else:
            tar.extractall(root)
    current, old = REPO_ROOT / PACKAGE, root / PACKAGE
    to_build = []
    for name in EXTENSIONS:
        source, now = old / "trace" / f"{name}.c", current / "trace" / f"{name}.c"
        if not source.exists():  # none at BEFORE
            continue
        built = _built(current, name)
        if now.exists() and source.read_bytes() == now.read_bytes():
            if built is not None:
                shutil.copy(built, old / "trace" / built.name)
            # Else none is built here either: both sides decode with the package's fallback.
        else:
            to_build.append(name)
    if to_build:
        # Optional extensions (setup.py): without a compiler this builds nothing and BEFORE's code falls back
        # to its msgspec decoder and Python nesting, which make the same tables (trace/scan.py, nesting.py).
        subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=root,
                       capture_output=True, timeout=300)
    return old


def _take(side: str, package: Path, logdir: Path, tmp: Path) -> tuple[subprocess.Popen, Path]:
    """Starts the current tree's snapshot script on `package` (its parent first on the path)."""
    out = tmp / f"{side}.json"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TB_PIPELINE_DECODE")}
    env.update(PYTHONPATH=str(package.parent), TB_PIPELINE_CACHE_DIR=str(tmp / f"cache_{side}"),
               TB_PIPELINE_VALIDATE_RESPONSES="1")
    proc = subprocess.Popen(
        [sys.executable, str(REPO_ROOT / "tests" / "support" / "route_snapshot.py"), "take", str(logdir), str(out),
         "--max-paths", str(MAX_PATHS), "--expect-package", str(package)],
        cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)  # its own process group: a side stopped here takes its parse workers with it
    return proc, out


def _stop(proc: subprocess.Popen) -> None:
    """Ends a side's snapshot and its parse workers (its process group), if it still runs."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:  # it ended meanwhile
            pass
        proc.wait()


def _wait(side: str, proc: subprocess.Popen, package: Path) -> None:
    """Until the side's snapshot ended; AssertionError (a recording's build fails with it too) unless it ended
    well, on `package`."""
    try:
        output, _ = proc.communicate(timeout=TAKE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        _stop(proc)
        output, _ = proc.communicate()
        raise AssertionError(f"the {side} snapshot ran past {TAKE_TIMEOUT_S} s; its output:\n{output[-3000:]}")
    assert proc.returncode == 0, f"the {side} snapshot ({package}) failed:\n{output[-5000:]}"
    assert f"{PACKAGE} from {package.resolve()}" in output, output[-2000:]


def _logdir(dest: Path) -> Path:
    """The snapshot's logdir: the demo pair as `make demo` records it (recorded once, support/recorded.py) and
    the shared traces' pairs."""
    route_snapshot.build(dest, samples=demo_pair.path(), shared=SHARED)
    return dest


@recording(sources=["tests/support/route_snapshot.py", "requirements-dev.txt"], after=(demo_pair,))
def before_snapshot(out: Path) -> Path:
    """BEFORE's side of the snapshot, on the demo pair's entry (about 22 s of CPU): what a refactor's every
    later commit is compared with."""
    _before_exists()
    work = out / "work"
    old = _before_package(work / "before")
    proc, path = _take("before", old, _logdir(work / "logdir"), work)
    _wait("before", proc, old)
    kept = out / "before.json"
    path.rename(kept)
    shutil.rmtree(work)
    return kept


def _message(found: list, before: dict, after: dict, shown: int = int(os.environ.get("SNAPSHOT_SHOWN", "6"))) -> str:
    routes = Counter(d.url.split("?", 1)[0] for d in found)
    return (f"{len(found)} of {len(after)} answers differ from BEFORE's ({BEFORE[:10]}, {len(before)} answers) "
            f"by route: {dict(routes)}. A change made on purpose goes in INTENDED (tests/routes/test_route_snapshot.py) "
            "with its reason; the first ones:\n" + "\n".join(str(d) for d in found[:shown]))


def _walked(snapshot: dict, pair: tuple[str, str]) -> int:
    prefix = f"/diff/modules?baseline={pair[0]}&experimental={pair[1]}&"
    return sum(url.startswith(prefix) for url in snapshot)


def test_intended_changes_are_well_formed():
    _intended()


def test_every_answer_as_before(shared_traces, tmp_path):
    _before_exists()
    renames, new, changed = _intended()
    assert SHARED.resolve() == shared_traces.parent  # the folder the recording read
    before = route_snapshot.load(before_snapshot.path() / "before.json")
    current = REPO_ROOT / PACKAGE
    proc, path = _take("after", current, _logdir(tmp_path / "logdir"), tmp_path)
    _wait("after", proc, current)
    after = route_snapshot.load(path)

    # The snapshot asked what it should: every route of every run and pair, and pieces of every tree.
    runs = {r["name"] for r in after["/runs"]["body"]["runs"]}
    assert {name for pair in route_snapshot.PAIRS for name in pair} <= runs
    asked = Counter(url.split("?", 1)[0] for url in after)
    assert set(asked) == {"/runs", *route_snapshot.RUN_ROUTES, *route_snapshot.PAIR_ROUTES}, asked
    for pair in route_snapshot.PAIRS:
        assert _walked(after, pair) >= 30, (pair, _walked(after, pair))
    for route in route_snapshot.PAIR_ROUTES:  # the demo pair has everything every pair route reads
        prefix = f"{route}?baseline=baseline&experimental=experimental"
        url = next((u for u in sorted(after) if u == prefix or u.startswith(prefix + "&")), prefix)
        assert after.get(url, {}).get("status") == 200, (url, str(after.get(url))[:500])

    found = [d for d in route_snapshot.compare(before, after, renames, new) if not _changed_on_purpose(d.url, changed)]
    assert not found, _message(found, before, after)
