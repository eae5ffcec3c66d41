"""The real `tensorboard` command on a free loopback port, for the browser tests.

    with serve_tensorboard(logdir, log_path, until=lambda runs: ...) as port:
        get(port, "runs")

`until(runs)` gets each `runs` answer and says when the server is ready for
the test (the runs it needs are listed and loaded); a TensorBoard that exits
or is not ready in time fails the test with the end of its log.
"""
from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Callable

import pytest

READY_TIMEOUT_S = 180


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port: int, route: str, **params) -> dict:
    """GET a route of our plugin and decode its JSON."""
    q = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
    url = f"http://127.0.0.1:{port}/data/plugin/tb_pipeline/{route}" + (f"?{q}" if q else "")
    with urllib.request.urlopen(url, timeout=60) as resp:
        return json.loads(resp.read())


def tensorboard_command(logdir, port: int) -> list[str]:
    exe = Path(sys.executable).parent / "tensorboard"
    return [str(exe) if exe.exists() else "tensorboard", "--logdir", str(logdir), "--port", str(port),
            "--host", "127.0.0.1"]


def runs_ready(*names: str) -> Callable[[dict], bool]:
    """`until` for: every run in `names` is listed and nothing is loading."""
    return lambda runs: not runs["loading"] and set(names) <= {r["name"] for r in runs["runs"]}


@contextlib.contextmanager
def serve_tensorboard(logdir, log_path, until: Callable[[dict], bool], env: dict | None = None,
                      command: Callable[[int], list[str]] | None = None):
    """Starts TensorBoard (`command(port)`, default `tensorboard --logdir`)
    in `env` (the whole environment; default this process's), waits until
    `until(runs)`, yields the port, and stops it afterwards."""
    port = free_port()
    cmd = command(port) if command else tensorboard_command(logdir, port)
    log = open(log_path, "w+")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                            env={**(os.environ if env is None else env), "PYTHONUNBUFFERED": "1"})
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            try:
                if until(get(port, "runs")):
                    break
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                pytest.fail(f"TensorBoard did not serve the runs (exit {proc.poll()}):\n{log.read()[-4000:]}")
            time.sleep(0.3)
        yield port
        if proc.poll() is not None:
            # Died under the tests (a crash in a request thread): what the page
            # saw was only "Failed to fetch", so say why here.
            log.seek(0)
            text = log.read()
            fatal = text.find("Fatal Python error")
            excerpt = text[fatal:fatal + 4000] if fatal >= 0 else text[-4000:]
            pytest.fail(f"TensorBoard exited (status {proc.returncode}) while the tests used it:\n{excerpt}")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
