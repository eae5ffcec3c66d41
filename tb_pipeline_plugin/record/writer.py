"""Append records to a run's statistics file: complete lines only, append-only.

Records are handed to the OS by a background flusher every
`flush_interval_s` (default 50 ms) in one write, so the training loop pays
for building a record, not for encoding it or a system call: the recorder's
budget is 2 µs per event, and their measured cost is in benchmarks/README.md
(`bench_record.py`). Readers see a record at most one interval after it
happened; a process killed outright loses at most that interval.
`flush_interval_s=0` writes every record synchronously, one write() per
record, as it is produced.
"""
from __future__ import annotations

import os
import socket
import threading
import time
from collections import deque

import msgspec

from ..formats.pipeline import FILE_SUFFIX, PIPELINE_DIR

DEFAULT_FLUSH_INTERVAL_S = 0.05


def run_name_default() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + f"-{socket.gethostname()}"


def stats_path(logdir: str, run: str) -> str:
    """`{logdir}/{run}/pipeline/{host}_{pid}.jsonl`: one file per writing
    process, so processes never interleave partial lines."""
    name = f"{socket.gethostname()}_{os.getpid()}{FILE_SUFFIX}"
    return os.path.join(logdir, run, PIPELINE_DIR, name)


class StatsWriter:
    def __init__(self, path: str, flush_interval_s: float = DEFAULT_FLUSH_INTERVAL_S):
        if flush_interval_s < 0:
            raise ValueError("flush_interval_s must be >= 0")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.path = path
        self.flush_interval_s = flush_interval_s
        # O_APPEND and whole lines per write(): on Linux, appends to a regular
        # file do not interleave, so the sampler thread, SPDL's event loop and
        # the training loop never split each other's lines.
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._encoder = msgspec.json.Encoder()
        self._pending: deque = deque()  # append / popleft are thread-safe
        self._lock = threading.Lock()  # one flusher at a time, and close
        self._stop = threading.Event()
        self._thread = None
        if flush_interval_s > 0:
            self._thread = threading.Thread(target=self._run, name="tb-pipeline-writer", daemon=True)
            self._thread.start()

    def write(self, record) -> None:
        if self._thread is None:
            self._write_now([record])
        else:
            self._pending.append((None, record))

    def write_deferred(self, build, args: tuple) -> None:
        """Like write(build(*args)), with build() run by the flusher."""
        if self._thread is None:
            self._write_now([build(*args)])
        else:
            self._pending.append((build, args))

    def flush(self) -> None:
        pending = self._pending
        entries = [pending.popleft() for _ in range(len(pending))]
        if entries:
            self._write_now([rec if build is None else build(*rec) for build, rec in entries])

    def _write_now(self, records: list) -> None:
        data = self._encoder.encode_lines(records)
        with self._lock:
            if self._fd >= 0:
                os.write(self._fd, data)

    def _run(self) -> None:
        while not self._stop.wait(self.flush_interval_s):
            self.flush()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self.flush()
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
