"""One measurement in a fresh interpreter: `python _measure.py MODE PATH`.

Prints one JSON line. A fresh process per measurement keeps peak RSS honest
(no memory left over from an earlier run, no warm caches in the allocator).

MODE `baseline`: read the bytes + msgspec typed decode of every event (the
floor any parser pays). MODE `candidate`: the plugin's TraceProcessor from
file to all five views.
"""

import json
import os
import resource
import sys
import time


def _peak_rss_bytes() -> int:
    """Peak RSS of this process image.

    Linux's VmHWM belongs to the current address space, so it starts fresh at
    exec. ru_maxrss does not: it keeps the high-water mark of the pre-exec
    image, i.e. the parent's pages seen through fork/vfork, and would charge
    the benchmark driver's memory to the measurement.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    # Elsewhere: ru_maxrss is KiB on Linux, bytes on macOS.
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


def _ru_maxrss_bytes() -> int:
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


def prepare_baseline(path: str):
    """Import and define everything up front; return the work to time."""
    import msgspec

    class BareEvent(msgspec.Struct):
        ph: str = ""
        name: str = ""
        cat: str = ""
        pid: int | str = 0
        tid: int | str = 0
        ts: float = 0.0
        dur: float = 0.0
        id: int | str | None = None
        args: dict | None = None

    class BareTrace(msgspec.Struct):
        traceEvents: list[BareEvent]

    def work() -> int:
        with open(path, "rb") as f:
            raw = f.read()
        trace = msgspec.json.decode(raw, type=BareTrace)
        return len(trace.traceEvents)

    return work


def prepare_candidate(path: str):
    import importlib
    import pkgutil

    import tb_pipeline_plugin.analysis as analysis
    from tb_pipeline_plugin.analysis.processor import TraceProcessor

    # Views import their modules lazily; in a running TensorBoard those are
    # loaded once per process, so keep import time out of the per-file figure.
    for mod in pkgutil.walk_packages(analysis.__path__, analysis.__name__ + "."):
        importlib.import_module(mod.name)

    def work():
        tp = TraceProcessor.load(path)
        tp.overview()
        tp.operators("name")
        tp.operators("name_and_shape")
        tp.kernels()
        tp.modules()
        return None

    return work


def main() -> None:
    mode, path = sys.argv[1], sys.argv[2]
    t_import = time.perf_counter()
    if mode == "baseline":
        work = prepare_baseline(path)
    elif mode == "candidate":
        work = prepare_candidate(path)
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    import_s = time.perf_counter() - t_import
    rss_after_imports = _peak_rss_bytes()
    t0 = time.perf_counter()
    events = work()
    wall_s = time.perf_counter() - t0
    print(
        json.dumps(
            {
                "mode": mode,
                "file_bytes": os.path.getsize(path),
                "events": events,
                "wall_s": wall_s,
                "import_s": import_s,
                "peak_rss_bytes": _peak_rss_bytes(),
                "imports_rss_bytes": rss_after_imports,
                "ru_maxrss_bytes": _ru_maxrss_bytes(),
            }
        )
    )


if __name__ == "__main__":
    main()
