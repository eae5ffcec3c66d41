"""One scale measurement in a fresh interpreter; prints one JSON line.

    python _scale_measure.py lean FILE
    python _scale_measure.py cold|warm CACHE_DIR FILE...      (our loader, all per-run views)
    python _scale_measure.py coldmem CACHE_DIR FILE...        (cold, with the process tree's peak PSS sampled)
    python _scale_measure.py diff CACHE_DIR LOGDIR            (TensorBoard app, the four diff routes)
    python _scale_measure.py distributed CACHE_DIR LOGDIR RUN   (the distributed route over every rank, until complete)
    python _scale_measure.py latency LOGDIR                   (route latency while `big` parses)
    python _scale_measure.py ttp RUN_DIR                      (torch-tb-profiler, run in its own venv)
    python _scale_measure.py serial FILE...                   (in-process TraceProcessor, one by one)
    python _scale_measure.py split K FILE...                  (K forked in-process loaders: the machine's ceiling)

`peak_rss_bytes` is this process's VmHWM; `children_peak_rss_bytes` the
largest child (our parse workers, torch-tb-profiler's per-file processes).
"""
import gc
import json
import os
import resource
import sys
import time


def _status_bytes(field: str) -> int:
    """A memory figure of this process from /proc/self/status (`VmHWM`: peak resident, `VmRSS`: now)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _vm_hwm() -> int:
    return _status_bytes("VmHWM")


def _children_peak() -> int:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024


class TreeMemory:
    """Peak of the summed PSS of this process and all its descendants
    (parse workers and the processes they fork), sampled every 20 ms: the
    memory a load takes from the machine, pages shared copy-on-write
    counted once (per-process RSS counts them in each process)."""

    def __init__(self):
        import threading

        self.peak_bytes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import psutil

        me = psutil.Process()
        while not self._stop.wait(0.02):
            self.peak_bytes = max(self.peak_bytes, self.now_bytes(me))

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak_bytes

    @staticmethod
    def now_bytes(me=None) -> int:
        """The summed PSS of `me` (this process) and its descendants, once."""
        import psutil

        me = me or psutil.Process()
        total = 0
        for p in [me, *me.children(recursive=True)]:
            try:
                total += p.memory_full_info().pss
            except (psutil.Error, OSError):
                pass
        return total


def _cpu_s() -> dict:
    """CPU seconds of this process and of its reaped children: where the work ran."""
    t = os.times()
    return {"self": t.user + t.system, "children": t.children_user + t.children_system}


def _all_views(tp) -> None:
    tp.overview()
    tp.operators("name")
    tp.operators("name_and_shape")
    tp.kernels()
    tp.modules()


def lean(path: str) -> dict:
    import msgspec

    class LeanEvent(msgspec.Struct, gc=False):
        ph: str = ""
        name: str = ""
        cat: str = ""
        ts: float = 0.0
        dur: float = 0.0
        pid: int | str = 0
        tid: int | str = 0
        args: msgspec.Raw = msgspec.Raw()

    class LeanTrace(msgspec.Struct, gc=False):
        traceEvents: list[LeanEvent]

    decoder = msgspec.json.Decoder(LeanTrace)
    gc.disable()
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        raw = f.read()
    n = len(decoder.decode(raw).traceEvents)
    return {"wall_s": time.perf_counter() - t0, "events": n}


def ours(paths: list[str], sample_memory: bool = False) -> dict:
    """`TB_PIPELINE_CACHE_DIR` set by the caller: cold (empty) or warm."""
    from concurrent.futures import ThreadPoolExecutor

    import tb_pipeline_plugin.analysis.processor  # noqa: F401 - imports out of the timing
    from tb_pipeline_plugin.sources.artifacts import TraceLoader

    loader = TraceLoader.from_env()
    # The plugin's worker processes start once per TensorBoard (on the first
    # load); reported apart from the per-file figure.
    t0 = time.perf_counter()
    loader.pool.start()
    pool_start_s = time.perf_counter() - t0
    # Idle: the server and its started workers with their imports, before any trace (what TensorBoard with our
    # plugin holds anyway); the load's own memory is the peak over it.
    idle_bytes = TreeMemory.now_bytes() if sample_memory else 0
    memory = TreeMemory() if sample_memory else None
    t0 = time.perf_counter()
    with ThreadPoolExecutor(loader.concurrency) as ex:  # as many loads at once as the plugin's store runs
        tps = list(ex.map(loader, paths))
    ready_s = time.perf_counter() - t0
    for tp in tps:
        _all_views(tp)
    out = {"ready_s": ready_s, "wall_s": time.perf_counter() - t0, "files": len(tps), "pool_start_s": pool_start_s,
           "processes": loader.pool.processes}
    if memory is not None:
        out["peak_tree_pss_bytes"] = memory.stop()
        out["idle_tree_pss_bytes"] = idle_bytes
    loader.pool.shutdown(wait=True)  # reaped: counted in RUSAGE_CHILDREN and children's CPU
    out["cpu_s"] = _cpu_s()
    return out


def serial(paths: list[str]) -> dict:
    from tb_pipeline_plugin.analysis.processor import TraceProcessor

    t0 = time.perf_counter()
    for p in paths:
        _all_views(TraceProcessor.load(p))
    return {"wall_s": time.perf_counter() - t0, "files": len(paths), "cpu_s": _cpu_s()}


def _serial_chunk(paths: list[str]) -> None:
    from tb_pipeline_plugin.analysis.processor import TraceProcessor

    for p in paths:
        _all_views(TraceProcessor.load(p))


def split(processes: int, paths: list[str]) -> dict:
    """The machine's ceiling for parallel loads: `processes` forked copies of
    this (already imported) interpreter load every K-th file in-process, no
    worker pool, no persisting, nothing sent back. serial / this is the most
    that many processes can gain here, whatever the loader does."""
    import multiprocessing

    import tb_pipeline_plugin.analysis.processor  # noqa: F401 - imported once, before the fork

    ctx = multiprocessing.get_context("fork")
    t0 = time.perf_counter()
    procs = [ctx.Process(target=_serial_chunk, args=(paths[i::processes],)) for i in range(processes)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    if any(p.exitcode != 0 for p in procs):
        raise SystemExit("a split loader failed")
    return {"wall_s": time.perf_counter() - t0, "files": len(paths), "processes": processes, "cpu_s": _cpu_s()}


def _app(logdir: str):
    from tensorboard import program
    from tensorboard.backend import application
    from tensorboard.plugins import base_plugin
    from tensorboard.plugins.core import core_plugin
    from werkzeug.test import Client

    from tb_pipeline_plugin.server.plugin import PipelinePlugin

    tb = program.TensorBoard(plugins=[core_plugin.CorePluginLoader()])
    tb.configure(argv=["tensorboard", "--logdir", logdir])
    context = base_plugin.TBContext(flags=tb.flags, logdir=tb.flags.logdir, plugin_name_to_instance={})
    plugin = PipelinePlugin(context)
    app = application.TensorBoardWSGI([plugin])
    return Client(app), plugin


PREFIX = "/data/plugin/tb_pipeline/"


def _get_ready(client, route: str, timeout_s: float = 3600):
    """The answer once loaded: asked again while 409, or while it says it is
    not complete (`distributed`, which answers with the ranks ready)."""
    deadline = time.monotonic() + timeout_s
    while True:
        resp = client.get(PREFIX + route)
        if resp.status_code != 409 and not (resp.status_code == 200 and resp.get_json().get("complete") is False):
            if resp.status_code != 200:
                raise SystemExit(f"{route}: HTTP {resp.status_code}: {resp.get_data(as_text=True)[:300]}")
            return resp
        if time.monotonic() > deadline:
            raise SystemExit(f"{route}: still loading after {timeout_s} s")
        time.sleep(0.01)


DIFF_ROUTES = ("diff/overview", "diff/modules", "diff/operators", "diff/kernels")


def diff(logdir: str) -> dict:
    client, plugin = _app(logdir)
    pair = "baseline=baseline&experimental=experimental"
    t0 = time.perf_counter()
    _get_ready(client, f"overview?run=baseline")
    _get_ready(client, f"overview?run=experimental")
    ready_s = time.perf_counter() - t0
    per_route = {}
    for route in DIFF_ROUTES:
        t1 = time.perf_counter()
        _get_ready(client, f"{route}?{pair}")
        per_route[route] = time.perf_counter() - t1
    plugin.close()
    return {"ready_s": ready_s, "wall_s": time.perf_counter() - t0, "routes_s": per_route}


def _until_complete(client, route: str, timeout_s: float = 3600, cpu: list | None = None) -> tuple[float, object]:
    """(seconds from the first ask to the complete answer, the last response).
    Only the requests are timed: this client's own parse of a 3 MB answer is
    not the server's time. `cpu`, when given, gets this process's CPU
    seconds over the same span (what a loaded machine does not inflate)."""
    deadline = time.monotonic() + timeout_s
    t0, c0 = time.perf_counter(), time.process_time()
    while True:
        resp = client.get(PREFIX + route)
        done, cpu_done = time.perf_counter(), time.process_time()
        if resp.status_code != 200:
            raise SystemExit(f"{route}: HTTP {resp.status_code}: {resp.get_data(as_text=True)[:300]}")
        if resp.get_json().get("complete") is not False:
            if cpu is not None:
                cpu.append(cpu_done - c0)
            return done - t0, resp
        if time.monotonic() > deadline:
            raise SystemExit(f"{route}: not complete after {timeout_s} s")
        time.sleep(0.01)


def distributed(logdir: str, run: str) -> dict:
    """The `distributed` route over every rank of `run`: time from the first
    ask to its complete answer (cold: this fresh process's first, discovery
    included), asked again at once, asked again after the scan went stale
    (answered from it while it refreshes in the background, then from the
    fresh one), the run against itself (a pair of its size); the process's
    memory before and after."""
    client, plugin = _app(logdir)
    plugin.runs.start_parsers()  # workers start once per TensorBoard
    rss_before = _status_bytes("VmRSS")
    one, pair = f"distributed?baseline={run}", f"distributed?baseline={run}&experimental={run}"
    cold_cpu: list = []
    wall, resp = _until_complete(client, one, cpu=cold_cpu)
    body = resp.get_json()
    # Asked again: every rank is read (what a page reload or the other tab's request costs).
    again, _ = _until_complete(client, one)
    time.sleep(2.5)  # past the rescan interval
    stale = []
    for _ in range(3):
        stale.append(_until_complete(client, one)[0])
        time.sleep(1.0)  # the background rescan lands meanwhile
    pair_s, pair_resp = _until_complete(client, pair)
    pair_again, _ = _until_complete(client, pair)
    rss_after = _status_bytes("VmRSS")
    plugin.close()
    ranks = body["baseline_ranks"]["ranks"]
    return {"wall_s": wall, "cold_cpu_s": cold_cpu[0], "again_s": again, "after_rescan_s": stale, "pair_s": pair_s, "pair_again_s": pair_again,
            "answer_bytes": len(resp.data), "pair_answer_bytes": len(pair_resp.data),
            "rss_before_bytes": rss_before, "rss_after_bytes": rss_after,
            "ranks": len(ranks), "slowest_rank": body["baseline_ranks"]["slowest"]["rank"],
            "rank_source": ranks[0].get("rank_source", "(not given)") if ranks else None,
            "ranks_match_names": all(r["worker"] == f"rank{r['rank']}" for r in ranks)}


def latency(logdir: str) -> dict:
    """Worst and median latency of `runs` and the small run's views while
    the big run parses (cache off, so it really parses), and the longest
    garbage-collector pass in this process meanwhile (the usual worst
    request before server/gc_freeze.py)."""
    import gc

    client, plugin = _app(logdir)
    _get_ready(client, "overview?run=small")
    _get_ready(client, "operators?run=small")
    _get_ready(client, "kernels?run=small")
    passes: list[tuple[int, float]] = []
    started: list[float] = []

    def on_gc(phase, info):
        if phase == "start":
            started.append(time.perf_counter())
        elif started:
            passes.append((info["generation"], time.perf_counter() - started.pop()))

    gc.callbacks.append(on_gc)
    t0 = time.perf_counter()
    assert client.get(PREFIX + "overview?run=big").status_code == 409
    times = []
    while True:
        for route in ("runs", "overview?run=small", "operators?run=small", "kernels?run=small"):
            t1 = time.perf_counter()
            assert client.get(PREFIX + route).status_code == 200
            times.append(time.perf_counter() - t1)
        if client.get(PREFIX + "overview?run=big").status_code != 409:
            break
        time.sleep(0.02)
    parse_s = time.perf_counter() - t0
    gc.callbacks.remove(on_gc)
    plugin.close()
    times.sort()
    return {"wall_s": parse_s, "requests": len(times), "max_s": times[-1], "p50_s": times[len(times) // 2],
            "p99_s": times[min(len(times) - 1, int(len(times) * 0.99))],
            "gc_max_s": max((d for _, d in passes), default=0.0), "gc_full_passes": sum(1 for g, _ in passes if g == 2),
            "frozen_objects": gc.get_freeze_count(), "load_average": os.getloadavg()[0]}


def ttp(run_dir: str) -> dict:
    from torch_tb_profiler import io
    from torch_tb_profiler.profiler.loader import RunLoader

    caches = io.Cache()
    t0 = time.perf_counter()
    run = RunLoader(os.path.basename(run_dir), run_dir, caches).load()
    wall = time.perf_counter() - t0
    profiles = len(run.profiles) if run is not None else 0
    return {"wall_s": wall, "profiles": profiles}


def main() -> None:
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "lean":
        out = lean(args[0])
    elif mode in ("cold", "warm", "coldmem"):
        os.environ["TB_PIPELINE_CACHE_DIR"] = args[0]
        # coldmem: a cold load with the process tree's memory sampled (the
        # sampling costs CPU: timed loads run without it).
        out = ours(args[1:], sample_memory=mode == "coldmem")
    elif mode == "diff":
        os.environ["TB_PIPELINE_CACHE_DIR"] = args[0]
        out = diff(args[1])
    elif mode == "distributed":
        os.environ["TB_PIPELINE_CACHE_DIR"] = args[0]
        out = distributed(args[1], args[2])
    elif mode == "latency":
        os.environ["TB_PIPELINE_CACHE_DIR"] = "off"
        out = latency(args[0])
    elif mode == "ttp":
        out = ttp(args[0])
    elif mode == "serial":
        out = serial(args)
    elif mode == "split":
        out = split(int(args[0]), args[1:])
    else:
        raise SystemExit(f"unknown mode {mode}")
    import multiprocessing

    multiprocessing.active_children()  # reap finished children so their peak counts
    out["peak_rss_bytes"] = _vm_hwm()
    out["children_peak_rss_bytes"] = _children_peak()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
