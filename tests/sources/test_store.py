"""LoadStore: background loading keyed by file version, bounded, thread-safe."""
from __future__ import annotations

import json
import os
import shutil
import threading
import time

import pytest
from werkzeug.test import Client

from conftest import PLUGIN_PREFIX, build_tb_app
from tb_pipeline_plugin.sources.store import LoadStore

pytestmark = pytest.mark.timing(
    "latencies of background loading: a request never blocks, waits time out, prefetch order under "
    "threads"
)

WAIT_S = 10


class Loaded:
    def __init__(self, data, warnings=()):
        self.data = data
        self.warnings = list(warnings)


class JsonLoader:
    """Reads a JSON file; optionally held at a gate so a test controls when a
    load finishes. Counts calls per path."""

    def __init__(self, gated=False):
        self.gate = threading.Event()
        if not gated:
            self.gate.set()
        self.calls: dict[str, int] = {}
        self.order: list[str] = []  # paths in the order their loads started
        self.started = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, path):
        with self._lock:
            self.calls[path] = self.calls.get(path, 0) + 1
            self.order.append(path)
        with open(path) as f:
            data = json.load(f)
        self.started.set()
        assert self.gate.wait(WAIT_S), "gate never opened"
        return Loaded(data, data.get("warnings", ()) if isinstance(data, dict) else ())


def write(path, obj):
    path.write_text(json.dumps(obj))
    st = os.stat(path)
    return str(path), st.st_size, st.st_mtime


@pytest.fixture
def stores():
    made = []

    def make(*args, **kwargs):
        store = LoadStore(*args, **kwargs)
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


def test_request_never_blocks_and_loads_once(tmp_path, stores):
    loader = JsonLoader(gated=True)
    store = stores(loader)
    key = write(tmp_path / "a.json", {"x": 1})

    t0 = time.perf_counter()
    first = store.request(*key)
    assert time.perf_counter() - t0 < 0.5
    assert first.status == "loading" and first.value is None
    assert store.any_loading()

    loader.gate.set()
    state = store.wait(*key, timeout=WAIT_S)
    assert state.status == "ready" and state.value.data == {"x": 1}
    assert state.error is None and state.warnings == []
    assert store.request(*key).value is state.value
    assert loader.calls == {key[0]: 1}
    assert not store.any_loading()


def test_failure_is_reported_without_traceback(tmp_path, stores):
    path = tmp_path / "broken.json"
    path.write_text('{"x": ')
    st = os.stat(path)
    store = stores(JsonLoader())
    state = store.wait(str(path), st.st_size, st.st_mtime, timeout=WAIT_S)
    assert state.status == "failed" and state.value is None
    assert state.error.startswith("JSONDecodeError: ")
    assert "Traceback" not in state.error and "\n" not in state.error


def test_missing_file_fails_with_reason(tmp_path, stores):
    store = stores(JsonLoader())
    state = store.wait(str(tmp_path / "gone.json"), 10, 1.0, timeout=WAIT_S)
    assert state.status == "failed"
    assert state.error.startswith("FileNotFoundError: ")


def test_warnings_propagate(tmp_path, stores):
    key = write(tmp_path / "w.json", {"warnings": ["dropped 3 events after truncation"]})
    state = stores(JsonLoader()).wait(*key, timeout=WAIT_S)
    assert state.status == "ready"
    assert state.warnings == ["dropped 3 events after truncation"]


def test_changed_file_reloads_and_drops_stale_result(tmp_path, stores):
    loader = JsonLoader(gated=True)
    store = stores(loader)
    path = tmp_path / "growing.json"
    old = write(path, {"v": 1})
    assert store.request(*old).status == "loading"
    assert loader.started.wait(WAIT_S)

    time.sleep(0.01)  # a distinct mtime even on coarse clocks
    new = write(path, {"v": 2, "more": "data"})
    assert new != old
    assert store.request(*new).status == "loading"
    loader.gate.set()

    state = store.wait(*new, timeout=WAIT_S)
    assert state.status == "ready" and state.value.data["v"] == 2
    # The first load finished after it was superseded: its value must not win.
    assert store.request(*new).value.data["v"] == 2
    assert loader.calls[str(path)] == 2


def test_ready_values_bounded_lru(tmp_path, stores):
    loader = JsonLoader()
    store = stores(loader, max_ready=2)
    keys = [write(tmp_path / f"{i}.json", {"i": i}) for i in range(3)]
    store.wait(*keys[0], timeout=WAIT_S)
    store.wait(*keys[1], timeout=WAIT_S)
    store.request(*keys[0])  # touch: 1 becomes least recently used
    store.wait(*keys[2], timeout=WAIT_S)

    evicted = store.summary(*keys[1])
    assert evicted.status == "ready" and evicted.value is None
    assert loader.calls[keys[1][0]] == 1  # summary does not reload
    assert store.summary(*keys[0]).value.data == {"i": 0}
    assert store.summary(*keys[2]).value.data == {"i": 2}

    # Asking for the value loads it again, evicting the next least recently used.
    assert store.request(*keys[1]).status == "loading"
    assert store.wait(*keys[1], timeout=WAIT_S).value.data == {"i": 1}
    assert loader.calls[keys[1][0]] == 2
    assert store.summary(*keys[0]).value is None
    ready = [store.summary(*k).value for k in keys]
    assert sum(v is not None for v in ready) == 2


def test_concurrent_requests_load_once(tmp_path, stores):
    loader = JsonLoader(gated=True)
    store = stores(loader, max_workers=4)
    key = write(tmp_path / "a.json", {"x": 1})
    results = []

    def hammer():
        for _ in range(50):
            results.append(store.request(*key).status)

    threads = [threading.Thread(target=hammer) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    loader.gate.set()
    assert store.wait(*key, timeout=WAIT_S).status == "ready"
    assert set(results) <= {"loading", "ready"}
    assert loader.calls == {key[0]: 1}


def test_parallel_workers(tmp_path, stores):
    loader = JsonLoader(gated=True)
    store = stores(loader, max_workers=2)
    a = write(tmp_path / "a.json", {"a": 1})
    b = write(tmp_path / "b.json", {"b": 1})
    store.request(*a)
    store.request(*b)
    deadline = time.monotonic() + WAIT_S
    while len(loader.calls) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(loader.calls) == 2  # both running while the gate is shut
    loader.gate.set()
    assert store.wait(*a, timeout=WAIT_S).status == store.wait(*b, timeout=WAIT_S).status == "ready"


def test_wait_times_out_while_loading(tmp_path, stores):
    loader = JsonLoader(gated=True)
    store = stores(loader)
    key = write(tmp_path / "a.json", {})
    t0 = time.perf_counter()
    assert store.wait(*key, timeout=0.2).status == "loading"
    assert 0.15 < time.perf_counter() - t0 < 5
    loader.gate.set()


def test_discard_and_retain_only(tmp_path, stores):
    loader = JsonLoader()
    store = stores(loader)
    a = write(tmp_path / "a.json", {"a": 1})
    b = write(tmp_path / "b.json", {"b": 1})
    store.wait(*a, timeout=WAIT_S)
    store.wait(*b, timeout=WAIT_S)
    store.retain_only([a[0]])
    store.discard(a[0])
    assert store.request(*a).status in ("loading", "ready")
    store.wait(*b, timeout=WAIT_S)
    assert loader.calls == {a[0]: 2, b[0]: 2}


def test_closed_store_fails_new_requests(tmp_path):
    store = LoadStore(JsonLoader())
    store.close()
    state = store.request(*write(tmp_path / "a.json", {}))
    assert state.status == "failed" and "shutting down" in state.error


def test_rejects_zero_capacity():
    with pytest.raises(ValueError):
        LoadStore(JsonLoader(), max_ready=0)


# ---- priorities: what a data route asks for goes before background prefetches


def wait_until(pred, timeout=WAIT_S):
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.005)


def test_requested_load_overtakes_queued_prefetches(tmp_path, stores):
    loader = JsonLoader(gated=True)
    store = stores(loader, max_workers=1, max_ready=8)
    keys = {n: write(tmp_path / f"{n}.json", {"n": n}) for n in "abcde"}
    for n in "abcd":
        assert store.summary(*keys[n]).status == "loading"
    assert loader.started.wait(WAIT_S)  # `a` is parsing, held at the gate
    assert loader.order == [keys["a"][0]]

    # A queued prefetch asked for by a data route is promoted; a file never
    # seen before is queued at the same (request) priority, behind it.
    assert store.request(*keys["d"]).status == "loading"
    assert store.request(*keys["e"]).status == "loading"
    loader.gate.set()
    for n in "abcde":
        assert store.wait(*keys[n], timeout=WAIT_S).status == "ready"

    # `a` was not interrupted; then the requested ones, then the prefetches.
    assert [p for p in loader.order] == [keys[n][0] for n in "adebc"]
    assert all(c == 1 for c in loader.calls.values())


def test_requested_load_is_not_stuck_behind_slow_prefetches(tmp_path, stores):
    """Ungated, with real (sleeping) loads: the requested file is ready while
    most prefetches queued before it are still waiting."""
    order = []

    def slow_load(path):
        order.append(path)
        time.sleep(0.2)
        with open(path) as f:
            return Loaded(json.load(f))

    store = stores(slow_load, max_workers=1, max_ready=8)
    keys = [write(tmp_path / f"{i}.json", {"i": i}) for i in range(9)]
    for k in keys[:8]:
        assert store.summary(*k).status == "loading"
    assert store.summary(*keys[8]).status == "unloaded"  # over max_ready: not prefetched
    assert store.wait(*keys[8], timeout=WAIT_S).status == "ready"
    # Parsed first: at most the prefetch running when it was requested (and,
    # had this thread stalled over 0.2 s before asking, the next one).
    assert order.index(keys[8][0]) <= 2
    assert sum(store.summary(*k).status == "loading" for k in keys[:8]) >= 5


def test_prefetch_never_exceeds_max_ready_nor_evicts(tmp_path, stores):
    loader = JsonLoader()
    store = stores(loader, max_ready=2)
    keys = [write(tmp_path / f"{i}.json", {"i": i}) for i in range(4)]
    states = [store.summary(*k) for k in keys]
    assert [s.status for s in states] == ["loading", "loading", "unloaded", "unloaded"]
    assert store.wait(*keys[0], timeout=WAIT_S).status == "ready"
    assert store.wait(*keys[1], timeout=WAIT_S).status == "ready"

    # The cache is full: listing again prefetches nothing and evicts nothing.
    again = [store.summary(*k) for k in keys]
    assert [s.status for s in again] == ["ready", "ready", "unloaded", "unloaded"]
    assert again[0].value.data == {"i": 0} and again[1].value.data == {"i": 1}
    assert sorted(loader.calls) == sorted(k[0] for k in keys[:2])

    # Asking for one loads it (and evicts the least recently used: `0`,
    # since the listing touched `0` before `1`); it was not parsed before.
    assert store.request(*keys[3]).status == "loading"
    assert store.wait(*keys[3], timeout=WAIT_S).value.data == {"i": 3}
    assert store.summary(*keys[0]).status == "ready" and store.summary(*keys[0]).value is None
    assert store.summary(*keys[2]).status == "unloaded"
    assert all(c == 1 for c in loader.calls.values())
    assert not store.any_loading()


def test_prefetch_false_only_reports(tmp_path, stores):
    loader = JsonLoader()
    store = stores(loader)
    key = write(tmp_path / "a.json", {})
    assert store.summary(*key, prefetch=False).status == "unloaded"
    assert loader.calls == {} and not store.any_loading()


def test_close_fails_queued_loads_and_finishes_the_running_one(tmp_path, stores):
    loader = JsonLoader(gated=True)
    store = stores(loader, max_workers=1)
    a = write(tmp_path / "a.json", {"a": 1})
    b = write(tmp_path / "b.json", {"b": 1})
    store.request(*a)
    assert loader.started.wait(WAIT_S)
    store.summary(*b)
    store.close()
    late = store.request(*b)
    assert late.status == "failed" and "shutting down" in late.error
    loader.gate.set()
    assert store.wait(*a, timeout=WAIT_S).status == "ready"
    assert b[0] not in loader.calls


# ---- through the real TensorBoard app: `runs` must not delay the run a user opens


def _many_runs(recorded_logdir, tmp_path, n=10):
    """`n` runs, each a copy of the recorded baseline trace (run00 .. run09)."""
    src = sorted((recorded_logdir / "baseline").glob("*.pt.trace.json*"))[0]
    logdir = tmp_path / "many"
    for i in range(n):
        run = logdir / f"run{i:02d}"
        run.mkdir(parents=True)
        shutil.copy(src, run / src.name)
    return logdir


def _json(client, route):
    resp = client.get(f"{PLUGIN_PREFIX}/{route}")
    return resp.status_code, resp.get_json()


def _statuses(client):
    code, body = _json(client, "runs")
    assert code == 200, body
    return {r["name"]: r["status"] for r in body["runs"]}, body["loading"]


def test_route_requested_run_parses_before_prefetches(recorded_logdir, tmp_path, monkeypatch):
    """Ten runs, `runs` prefetches eight; the overview of the last one is
    parsed right after the parse already running, and nothing twice. The
    first parse is held until the overview was asked for, so the order is
    deterministic; the loads themselves are the real ones."""
    from tb_pipeline_plugin.sources import artifacts

    logdir = _many_runs(recorded_logdir, tmp_path)
    real_parse = artifacts.parse_to_entry
    order, first_held, release = [], threading.Event(), threading.Event()

    def parse(path, *args, **kwargs):
        order.append(os.path.basename(os.path.dirname(path)))
        if len(order) == 1:
            first_held.set()
            assert release.wait(WAIT_S)
        return real_parse(path, *args, **kwargs)

    monkeypatch.delenv("TB_PIPELINE_MAX_LOADED_TRACES", raising=False)
    # Parse in the store's one thread (no worker processes), where the
    # parse can be held and its order observed; the queue is the same.
    monkeypatch.setenv("TB_PIPELINE_PARSE_WORKERS", "0")
    monkeypatch.setattr(artifacts, "parse_to_entry", parse)
    app, plugin = build_tb_app(logdir)
    try:
        client = Client(app)
        statuses, loading = _statuses(client)
        assert loading
        assert [statuses[f"run{i:02d}"] for i in range(10)] == ["loading"] * 8 + ["unloaded"] * 2
        assert first_held.wait(WAIT_S)
        code, body = _json(client, "overview?run=run09")
        assert code == 409 and body["run_status"] == "loading"
        assert _statuses(client)[0]["run09"] == "loading"
        release.set()

        deadline = time.monotonic() + 60
        while (code := _json(client, "overview?run=run09")[0]) == 409:
            assert time.monotonic() < deadline, "run09 never loaded"
            time.sleep(0.02)
        assert code == 200
        assert order[:2] == ["run00", "run09"]

        while _statuses(client)[1]:
            assert time.monotonic() < deadline, "prefetches never finished"
            time.sleep(0.05)
        statuses, _ = _statuses(client)
        assert statuses["run08"] == "unloaded"  # over max_ready: never prefetched
        assert sorted(order) == sorted(f"run{i:02d}" for i in range(10) if i != 8)  # each parsed once
    finally:
        release.set()
        plugin.close()


def test_route_requested_run_is_ready_while_prefetches_still_run(recorded_logdir, tmp_path, monkeypatch):
    """No hooks: `runs` queues all twelve runs, then the UI polls the last
    run's overview. It answers while most of the runs queued before it are
    still loading (with FIFO loading none would be). Twenty-four: a parse of
    these is about 20 ms, and with twelve, on a busy box (a core burned at
    normal priority, the parse workers at nice 10), the last ones finished
    within one poll of each other and none was left loading to see."""
    n = 24
    last = f"run{n - 1:02d}"
    logdir = _many_runs(recorded_logdir, tmp_path, n)
    monkeypatch.setenv("TB_PIPELINE_MAX_LOADED_TRACES", str(n))
    app, plugin = build_tb_app(logdir)
    try:
        client = Client(app)
        t0 = time.perf_counter()
        statuses, _ = _statuses(client)
        assert set(statuses.values()) == {"loading"}
        deadline = time.monotonic() + 60
        while _json(client, f"overview?run={last}")[0] == 409:
            assert time.monotonic() < deadline, f"{last} never loaded"
            time.sleep(0.02)
        t_requested = time.perf_counter() - t0
        statuses, loading = _statuses(client)
        still = sum(status == "loading" for name, status in statuses.items() if name != last)
        while _statuses(client)[1]:
            assert time.monotonic() < deadline, "prefetches never finished"
            time.sleep(0.05)
        t_all = time.perf_counter() - t0
        print(f"{last} overview after {t_requested:.2f} s; all {n} runs parsed after {t_all:.2f} s; "
              f"{still} of {n - 1} runs queued before it were still loading then")
        assert loading and still >= 3
    finally:
        plugin.close()


def test_a_finished_prefetch_never_evicts_a_requested_value():
    """Requested loads overtake queued prefetches and so finish first; the
    prefetches finishing later must not push them out of a full cache."""
    gate = threading.Event()
    loads: list[str] = []

    def load(path):
        loads.append(path)
        if path.startswith("pre"):
            gate.wait(10)
        return path.upper()

    store = LoadStore(load, max_workers=1, max_ready=2)
    try:
        store.summary("pre1", 1, 1.0)
        store.summary("pre2", 1, 1.0)
        assert store.request("a", 1, 1.0).status == "loading"
        assert store.request("b", 1, 1.0).status == "loading"
        gate.set()
        deadline = time.monotonic() + 10
        while store.any_loading() and time.monotonic() < deadline:
            time.sleep(0.01)
        # Both user-requested values are still cached: parsed once, not evicted.
        assert store.summary("a", 1, 1.0).value == "A"
        assert store.summary("b", 1, 1.0).value == "B"
        assert sorted(loads) == ["a", "b", "pre1", "pre2"]
    finally:
        store.close()


def test_worker_survives_a_base_exception_in_the_loader():
    def load(path):
        if path == "bad":
            raise SystemExit("loader called exit()")
        return 42

    store = LoadStore(load, max_workers=1, max_ready=4)
    try:
        bad = store.wait("bad", 1, 1.0, 10)
        assert bad.status == "failed" and "SystemExit" in bad.error
        assert store.wait("good", 1, 1.0, 10).value == 42
    finally:
        store.close()
