"""LoadStore: background loading keyed by file version, bounded, thread-safe."""
from __future__ import annotations

import json
import os
import threading
import time

import pytest

from tb_pipeline_plugin.store import LoadStore

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
        self.started = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, path):
        with self._lock:
            self.calls[path] = self.calls.get(path, 0) + 1
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
