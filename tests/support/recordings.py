"""Record once: the recordings the tests read, each made once and shared by
every pytest process (the serial run and each xdist worker) and every later
`make test` while nothing it records with changed.

A recording is a function that records into an empty folder, registered with
`@recording(...)`:

    @recording(sources=["samples/record_demo.py", "samples/train_demo.py"])
    def demo_pair(out: Path) -> None:
        record_demo.record_demo(str(out), quiet=True)

    @pytest.fixture(scope="module")
    def demo(tmp_path_factory):
        logdir = demo_pair.copy_to(tmp_path_factory.mktemp("demo"))

Its entry is `<root>/<name>-<key>/`, where `root` is $TB_PIPELINE_TEST_RECORDINGS if set, else the user's
cache (`$XDG_CACHE_HOME` or `~/.cache`, then `tb_pipeline_plugin/test-recordings/`; the repository's git-ignored
`.cache/test-recordings/` where that cannot be written): shared by every clone on the machine, as pip's and npm's
caches are, so that a fresh clone records only what its code changed. `key` is a hash of
the file that defines the recording, the `sources` it names (the recording scripts and helpers), the
package code it records with (RECORDS_WITH), setup.py, the Python and torch versions, and the entries of the
recordings it is made from (`after`: the route snapshot of commit BEFORE is taken on the demo pair). The first
process that needs an entry builds it under an exclusive `fcntl.flock`, into a temporary folder renamed
into place when complete; the others wait on the lock and read it. A failed build leaves no entry.

`copy_to(dest)` copies the entry to a folder of the test's (so no test writes into another's recording)
and returns what the recording function returned, its paths moved under `dest` (None: `dest` itself).

`make test-py` first builds every recording alone (`pytest --build-recordings`, in the serial half's process after
collection and before its first test; `--collect-only` with it builds and runs nothing else; collecting
registers them by importing every test module), so that none is recorded beside another test's load:
their verdicts are timings. Those registered `one_core=True` (one intra-op thread, loading in the main process,
mostly sleeping, no verdict reading the machine's load) are then made two at a time, each on a core of its own.
Run one module alone and it builds what it needs, once.

A test that fails after reading a recording marks that entry suspect (`doubt`, from tests/conftest.py): the next
`build_all` records it again, so that a recording made on a disturbed machine is not kept by every later run.
"""
from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import inspect
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from tb_pipeline_plugin.trace.fork_map import fork_available, fork_map

REPO_ROOT = Path(__file__).resolve().parents[2]
ENV = "TB_PIPELINE_TEST_RECORDINGS"
META = "_recording.json"
# In an entry that a failed test read: `build_all` records it again (the failure may be a recording made on a
# disturbed machine, which a cache shared by every later run would otherwise keep failing on).
SUSPECT = "_suspect"
# Entries of an older key are removed this long after they were last built (another process may still read one
# while the code changes under it).
STALE_S = 24 * 3600

REGISTRY: dict[str, "Recording"] = {}
# Which recordings each test module read in this process (`reading_for`, `doubt`).
_reads: dict[str, set[str]] = {}
_reader: str | None = None


def cache_root() -> Path:
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    return _user_or_checkout(os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache"))


@functools.lru_cache(maxsize=None)
def _user_or_checkout(user_cache: str) -> Path:
    """The user's cache folder for recordings, made once per process; the checkout's where it cannot be written."""
    user = Path(user_cache) / "tb_pipeline_plugin" / "test-recordings"
    try:
        user.mkdir(parents=True, exist_ok=True)
        if os.access(user, os.W_OK):
            return user
    except OSError:
        pass
    return REPO_ROOT / ".cache" / "test-recordings"


# What a recording records with: the recorder and launcher, diagnostic mode, the record schemas they write
# and the package's top-level modules (`tb-pipeline`'s entry point, the import hook, the leaves). Reading
# code (trace/, analysis/, diff/, sources/, server/, report/) changes no recording.
RECORDS_WITH = ("record", "diagnose", "formats")
READS_ONLY = ("compare.py",)  # the notebook API
_code_digest: str | None = None


def _code_hash() -> str:
    """The source files of RECORDS_WITH and tb_pipeline_plugin/*.py (but READS_ONLY), setup.py, Python's and torch's
    versions."""
    global _code_digest
    if _code_digest is None:
        h = hashlib.sha256()
        pkg = REPO_ROOT / "tb_pipeline_plugin"
        files = sorted(p for p in pkg.glob("*.py") if p.name not in READS_ONLY) + \
            sorted(p for sub in RECORDS_WITH for p in (pkg / sub).rglob("*.py"))
        for p in files + [REPO_ROOT / "setup.py"]:
            h.update(str(p.relative_to(REPO_ROOT)).encode() + b"\0" + p.read_bytes() + b"\0")
        h.update(sys.version.encode())
        try:
            from importlib.metadata import version

            h.update(version("torch").encode())
        except Exception:  # torch is not installed: nothing records with it
            pass
        _code_digest = h.hexdigest()
    return _code_digest


def _to_json(value: Any, base: str) -> Any:
    if isinstance(value, Path):
        value = str(value)
    if isinstance(value, str) and (value == base or value.startswith(base + os.sep)):
        return {"__path__": os.path.relpath(value, base)}
    if isinstance(value, dict):
        return {"__dict__": [[_to_json(k, base), _to_json(v, base)] for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        return {"__tuple__" if isinstance(value, tuple) else "__list__": [_to_json(v, base) for v in value]}
    return value


def _from_json(value: Any, base: Path) -> Any:
    if isinstance(value, dict):
        if "__path__" in value:
            return base / value["__path__"] if value["__path__"] != "." else base
        if "__dict__" in value:
            return {_hashable(_from_json(k, base)): _from_json(v, base) for k, v in value["__dict__"]}
        if "__tuple__" in value:
            return tuple(_from_json(v, base) for v in value["__tuple__"])
        if "__list__" in value:
            return [_from_json(v, base) for v in value["__list__"]]
    return value


def _hashable(v):
    return tuple(v) if isinstance(v, list) else v


@contextlib.contextmanager
def _output_to(log: Path):
    """The build's output (the profiler's and the recorded scripts' as well: file descriptors 1 and 2) into `log`;
    its last lines are added to the error of a build that fails."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with open(log, "w") as f:
        os.dup2(f.fileno(), 1)
        os.dup2(f.fileno(), 2)
    try:
        yield
    except Exception as e:
        sys.stdout.flush()
        sys.stderr.flush()
        tail = log.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{type(e).__name__}: {e}\n--- last output of the recording ({log}):\n{tail}") from e
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)


@dataclass
class Recording:
    name: str
    build: Callable[[Path], Any]
    sources: tuple[Path, ...]
    one_core: bool = False
    after: tuple["Recording", ...] = ()
    _key: str | None = field(default=None, repr=False)

    def key(self) -> str:
        if self._key is None:
            h = hashlib.sha256(_code_hash().encode() + self.name.encode())
            for p in self.sources:
                h.update(p.name.encode() + b"\0" + p.read_bytes())  # by name: moving a test module keeps its entry
            for made_from in self.after:
                # The entry as built, not only its key: one recorded again under the same key (a suspect one)
                # makes what was made from it stale.
                h.update((made_from.path() / META).read_bytes())
            self._key = h.hexdigest()[:16]
        return self._key

    def built(self) -> bool:
        """Whether its entry is complete in the cache."""
        return (self.entry() / META).is_file()

    def entry(self) -> Path:
        return cache_root() / f"{self.name}-{self.key()}"

    def path(self) -> Path:
        """The entry's folder, built if it is not there yet (read it, never write into it)."""
        if _reader is not None:
            _reads.setdefault(_reader, set()).add(self.name)
        root = cache_root()
        entry = self.entry()
        if self.built():
            return entry
        root.mkdir(parents=True, exist_ok=True)
        with open(root / f"{self.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if (entry / META).is_file():  # another process built it while this one waited
                return entry
            tmp = root / f".{entry.name}.tmp-{os.getpid()}"
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir()
            t0 = time.perf_counter()
            try:
                with _output_to(root / f"{self.name}.log"):
                    value = self.build(tmp)
                took = time.perf_counter() - t0
                # `built_at`: no two builds of an entry write the same META (what `after` keys on).
                (tmp / META).write_text(json.dumps({"name": self.name, "key": self.key(), "built_s": round(took, 1),
                                                    "built_at": time.time(), "value": _to_json(value, str(tmp))}))
                os.rename(tmp, entry)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            self._prune(root, entry)
        return entry

    def _prune(self, root: Path, keep: Path) -> None:
        for old in root.glob(f"{self.name}-*"):
            if old != keep and old.name[len(self.name) + 1:].isalnum() and \
                    time.time() - old.stat().st_mtime > STALE_S:
                shutil.rmtree(old, ignore_errors=True)

    def meta(self) -> dict:
        return json.loads((self.path() / META).read_text())

    def copy_to(self, dest: Path) -> Any:
        """The entry copied into `dest` (created or empty); returns what the recording function returned, its
        paths under `dest` (`dest` itself when it returned None)."""
        src = self.path()
        dest = Path(dest)
        shutil.copytree(src, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns(META, SUSPECT))
        value = _from_json(json.loads((src / META).read_text())["value"], dest)
        return dest if value is None else value


def recording(name: str | None = None, sources: tuple | list = (), one_core: bool = False,
              after: tuple | list = ()) -> Callable[[Callable[[Path], Any]], Recording]:
    """Registers `fn(out)`, which records into the empty folder `out` and may return paths under it (and other
    JSON values). `sources`: repository-relative files it records from, besides the file defining it. `after`:
    the recordings it is made from (registered before it, so `build_all` makes them first); each one's entry
    as built is part of its key.
    `one_core`: what it records runs within one core and no verdict of its tests reads the machine's load (its
    scripts set one intra-op thread, load in the main process, and mostly sleep), so `build_all` may make it
    beside another such recording, each on a core of its own."""

    def register(fn: Callable[[Path], Any]) -> Recording:
        module = Path(inspect.getsourcefile(fn)).resolve()
        rec_name = name or f"{module.stem}.{fn.__name__}"
        files = (module, *(REPO_ROOT / s for s in sources))
        rec = Recording(rec_name, fn, tuple(sorted(set(files))), one_core, tuple(after))
        if rec_name in REGISTRY and REGISTRY[rec_name].sources != rec.sources:
            raise ValueError(f"two recordings named {rec_name!r}")
        REGISTRY.setdefault(rec_name, rec)
        return REGISTRY[rec_name]

    return register


def reading_for(reader: str | None) -> None:
    """The test module whose tests read recordings from now on in this process (None: none)."""
    global _reader
    _reader = reader


def doubt(reader: str) -> list[str]:
    """Marks the entries that `reader` read in this process `SUSPECT` (a test of it failed): the next `build_all`
    records them again, alone; this session's readers keep reading them. Returns their names."""
    doubted = []
    for name in sorted(_reads.get(reader, ())):
        rec = REGISTRY.get(name)
        entry = rec.entry() if rec else None
        if entry is not None and (entry / META).is_file():
            (entry / SUSPECT).write_text(reader)
            doubted.append(name)
    return doubted


def _drop_suspect(rec: "Recording", say: Callable[[str], None]) -> None:
    if not all(made_from.built() for made_from in rec.after):
        # One it is made from is to be recorded again: its key will change with it (the stale entry is pruned),
        # and computing it here would record that one outside `_build_one`, which says and survives a failure.
        return
    entry = rec.entry()
    mark = entry / SUSPECT
    if not mark.is_file():
        return
    reader = mark.read_text(errors="replace")
    gone = entry.parent / f".{entry.name}.suspect-{os.getpid()}"
    os.rename(entry, gone)
    shutil.rmtree(gone, ignore_errors=True)
    say(f"recording {rec.name}: recorded again (a test of {reader} failed after reading it)")


def build_all(say: Callable[[str], None] = print) -> list[str]:
    """Every registered recording (a failed one said and skipped: its tests build it again and fail with its
    error); returns the names of those that failed. Those that need the whole machine are made one after another,
    alone; then the `one_core` ones still to build in two lanes at once, each lane a forked process pinned to a
    core of its own (no hyper-threads share a core on this kind of machine), so that they take the time of the
    longer lane."""
    t0 = time.perf_counter()
    for rec in REGISTRY.values():
        _drop_suspect(rec, say)
    todo = [rec for rec in REGISTRY.values() if rec.one_core and not rec.built()]
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    side_by_side = len(todo) >= 2 and len(cores) >= 2 and fork_available()
    alone = [rec for rec in REGISTRY.values() if not (side_by_side and rec in todo)]
    failed = [name for rec in alone for name in _build_one(rec, say)]
    if side_by_side:
        failed += _build_lanes(_split(todo), cores[:2], say)
    say(f"{len(REGISTRY) - len(failed)} of {len(REGISTRY)} recordings ready in {time.perf_counter() - t0:.1f} s "
        f"({cache_root()})")
    return failed


def _build_one(rec: Recording, say: Callable[[str], None]) -> list[str]:
    """[] when `rec` is ready, else [its name], said either way."""
    t = time.perf_counter()
    was_there = rec.built()
    try:
        rec.path()
    except Exception as e:  # noqa: BLE001 - said, and raised again where a test reads it
        say(f"recording {rec.name}: FAILED after {time.perf_counter() - t:.1f} s: {type(e).__name__}: {e}"[:2000])
        return [rec.name]
    say(f"recording {rec.name}: {'cached' if was_there else f'recorded in {time.perf_counter() - t:.1f} s'}")
    return []


def _split(recs: list[Recording]) -> list[list[Recording]]:
    """`recs` in two lanes of about equal time, by each one's last build (any key; 1 s where none is known)."""
    lanes: list[list[Recording]] = [[], []]
    took = [0.0, 0.0]
    for rec in sorted(recs, key=lambda r: -_last_built_s(r)):
        i = took.index(min(took))
        lanes[i].append(rec)
        took[i] += _last_built_s(rec) or 1.0
    return lanes


def _last_built_s(rec: Recording) -> float:
    """How long the newest entry of `rec`'s name took to build (any key), 0 when none is there."""
    best, newest = 0.0, -1.0
    for old in cache_root().glob(f"{rec.name}-*/{META}"):
        try:
            mtime, built = old.stat().st_mtime, float(json.loads(old.read_text()).get("built_s", 0.0))
        except (OSError, ValueError):
            continue
        if mtime > newest:
            best, newest = built, mtime
    return best


def _build_lanes(lanes: list[list[Recording]], cores: list[int], say: Callable[[str], None]) -> list[str]:
    """Each lane in a forked child pinned to its core (`fork_map`, none in this process); the lines each child
    said, said here once all have ended."""
    def build_lane(lane_core):
        lane, core = lane_core
        os.sched_setaffinity(0, {core})
        lines: list[str] = []
        bad = [name for rec in lane for name in _build_one(rec, lines.append)]
        return [f"{line} (core {core})" for line in lines], bad

    failed = []
    for lane, report in zip(lanes, fork_map(build_lane, list(zip(lanes, cores)), in_caller=False)):
        if report is None:
            report = ([f"recording lane of {', '.join(r.name for r in lane)}: its process ended without a report"],
                      [r.name for r in lane])
        for line in report[0]:
            say(line)
        failed += report[1]
    return failed
