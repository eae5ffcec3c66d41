"""The user's measure: a TensorBoard process started on a logdir, until the
first views of one run have answered (issue 34).

    python _tb_user.py views LOGDIR RUN [--stages FILE]   -> one JSON line
    python _tb_user.py up LOGDIR [--plain]                -> one JSON line

`views`: TensorBoard (tests/support/tb_launcher.py: the `tensorboard`
start-up, torch-tb-profiler's plugin left out, since it would parse the same
file at the same time) with our plugin; from the process start, `runs` is
asked until the server answers, then overview, operators, kernels and
modules of RUN at once, each asked again as the page asks while it answers
409 (frontend/src/api.ts: at once with `wait_ms=2000`, the server answering
when the load has finished; after a 409 it did not wait for, a pause of
250 ms, doubling, at most 500 ms), until all four have answered 200: the
figure includes the page's own asking. (Asked
every 20 ms instead, the four askers and the server's 409 answers cost a
core's worth of CPU that the parse then lacks: 8.4-10.0 s against 6.4-6.9 s
start -> views on one core, benchmarks/README.md.) `up`: the same TensorBoard until our
`runs` answers (on an empty logdir: TensorBoard's own start, which the
user's figure subtracts); `--plain`: without our plugin, until
`/data/plugins_listing` answers (what our plugin adds to that start).

`--code DIR`: the plugin's code from another checkout (a before/after
comparison in one run). `--stages FILE`: every Python process of the run (server, parse workers,
the processes they fork) appends its stage times to FILE
(benchmarks/stages/sitecustomize.py); `_tb_stages.py` reads them.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
LAUNCHER = os.path.join(REPO, "tests", "support", "tb_launcher.py")
STAGES_DIR = os.path.join(HERE, "stages")
PREFIX = "/data/plugin/tb_pipeline/"
# The first views of a run: what its tabs open with.
VIEW_ROUTES = ("overview", "operators", "kernels", "modules")
# Between two asks while the server does not answer at all (it is starting).
POLL_S = 0.02
# The page's asking on 409 (frontend/src/api.ts): again with wait_ms=LOADING_WAIT_MS, and after
# a 409 the server did not wait for, a pause of 250 ms, doubling, at most MAX_RETRY_DELAY_MS.
PAGE_WAIT_MS = 2000
PAGE_FIRST_DELAY_S, PAGE_MAX_DELAY_S = 0.25, 0.5


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> int | None:
    """HTTP status, None while nothing listens."""
    try:
        with urllib.request.urlopen(url, timeout=600) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as e:
        e.read()
        return e.code
    except (urllib.error.URLError, ConnectionError, OSError):
        return None


ENTRY_POINT = "tb_pipeline = tb_pipeline_plugin.server.loader:PipelinePluginLoader"


def check_code_dir(code: str) -> None:
    """`code` goes first on the server's PYTHONPATH, so a `*.egg-info` left
    in it by an old in-tree build is where TensorBoard finds our entry
    point. One naming the plugin class instead of the light loader made
    TensorBoard import the whole plugin before it served, and the worker
    start after it: 4.49x instead of 3.53x at 204 MB (benchmarks/README.md)."""
    for info in Path(code).glob("*.egg-info"):
        points = info / "entry_points.txt"
        text = points.read_text(encoding="utf-8") if points.exists() else ""
        if "[tensorboard_plugins]" in text and ENTRY_POINT not in text:
            raise SystemExit(f"{info} declares another TensorBoard entry point than setup.py's "
                             f"({ENTRY_POINT!r}): a stale build left there; remove it and measure again")


def start(logdir: str, with_ours: bool, run: str = "", stages: str | None = None, timeout_s: float = 600,
          code: str = REPO) -> dict:
    """`run` empty: until the server answers; else until RUN's first views have."""
    check_code_dir(code)
    port = _free_port()
    cmd = [sys.executable, LAUNCHER, "--without", "pytorch_profiler"] + ([] if with_ours else ["--without", "tb_pipeline"])
    cmd += ["--", "--logdir", logdir, "--port", str(port), "--host", "127.0.0.1"]
    env = {**os.environ, "PYTHONPATH": code + os.pathsep + os.environ.get("PYTHONPATH", "")}
    if stages:
        env["PYTHONPATH"] = STAGES_DIR + os.pathsep + env["PYTHONPATH"]
        env["TB_PIPELINE_STAGES_FILE"] = stages
    base = f"http://127.0.0.1:{port}"
    t0 = time.perf_counter()
    wall0 = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        up_route = PREFIX + "runs" if with_ours else "/data/plugins_listing"
        while _get(base + up_route) != 200:
            if proc.poll() is not None:
                raise SystemExit(f"TensorBoard exited with {proc.returncode}")
            if time.perf_counter() - t0 > timeout_s:
                raise SystemExit("TensorBoard did not start")
            time.sleep(POLL_S)
        up_s = time.perf_counter() - t0
        out = {"up_s": up_s, "wall_s": up_s, "start_wall": wall0}
        if not run:
            return out
        answered: dict[str, float] = {}
        statuses: dict[str, int] = {}

        def ask(route: str) -> None:
            url = f"{base}{PREFIX}{route}?run={run}"
            delay, wait_ms = PAGE_FIRST_DELAY_S, 0
            while True:
                asked = time.perf_counter()
                status = _get(url + (f"&wait_ms={wait_ms}" if wait_ms else ""))
                if status != 409:
                    answered[route], statuses[route] = time.perf_counter() - t0, status or 0
                    return
                if time.perf_counter() - t0 > timeout_s:
                    answered[route], statuses[route] = float("nan"), 409
                    return
                if wait_ms and time.perf_counter() - asked < wait_ms / 2000:
                    time.sleep(delay)
                    delay = min(delay * 2, PAGE_MAX_DELAY_S)
                wait_ms = PAGE_WAIT_MS

        threads = [threading.Thread(target=ask, args=(r,)) for r in VIEW_ROUTES]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if any(s != 200 for s in statuses.values()):
            raise SystemExit(f"routes answered {statuses}")
        out.update(wall_s=max(answered.values()), routes_s=answered)
        return out
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main() -> None:
    mode, args = sys.argv[1], sys.argv[2:]
    options = {}
    for flag in ("--stages", "--code"):
        if flag in args:
            i = args.index(flag)
            options[flag[2:]] = os.path.abspath(args[i + 1])
            del args[i : i + 2]
    if mode == "views":
        out = start(args[0], True, args[1], **options)
    elif mode == "up":
        out = start(args[0], "--plain" not in args[1:], **options)
    else:
        raise SystemExit(f"unknown mode {mode}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
