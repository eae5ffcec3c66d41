"""Which function holds the GIL: `py-spy record --gil` on this very process.

py-spy (a separate binary) reads the interpreter's memory with ptrace-like
access; `--gil` keeps only samples of the thread holding the GIL, and
`--nonblocking` does not pause us, so the stage keeps running at full speed
while sampled. Samples are grouped by the innermost frame of the user's
code: frames of this package (the loop that calls the stage) are never a
holder; a sample with no frame inside the user's code (the loop between two
calls) counts as `HARNESS`.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field

from ..errors import install_hint

_FRAME = re.compile(r"^(?P<function>.*) \((?P<file>.*):(?P<line>\d+)\)$")
RATE_HZ = 200
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Said in the UI where a function name goes: no code of the user held the GIL then.
HARNESS = "(not your code: the measuring loop between calls)"


@dataclass
class GilSample:
    command: str = ""
    total_samples: int = 0
    held_share: float = 0.0
    rate_hz: int = 0
    duration_s: float = 0.0
    top: list = field(default_factory=list)  # dicts: function, file, line, samples, share
    skipped: str = ""


def find_py_spy() -> str | None:
    here = os.path.join(os.path.dirname(sys.executable), "py-spy")
    return here if os.access(here, os.X_OK) else shutil.which("py-spy")


def why_no_gil_sampling() -> str:
    """Empty when sampling can be tried."""
    if sysconfig.get_config_var("Py_GIL_DISABLED") and not getattr(sys, "_is_gil_enabled", lambda: True)():
        return "free-threaded Python with the GIL off: there is no GIL to hold"
    if sys.implementation.name != "cpython":
        return f"py-spy samples CPython only, this is {sys.implementation.name}"
    if find_py_spy() is None:
        return f"py-spy is not installed ({install_hint('diagnose')})"
    return ""


def parse_raw(text: str, top_n: int = 10, own_dir: str = PACKAGE_DIR) -> tuple[int, list[dict]]:
    """py-spy's raw format: `frame;frame;...;innermost count` per line,
    each frame `function (file:line)`, outermost first. Each sample goes to
    the innermost frame called from this package's frames (`own_dir`): the
    user's code the stage runs, or `HARNESS` when none is on the stack."""
    per_function: dict = defaultdict(lambda: defaultdict(int))
    total = 0
    own = os.path.join(own_dir, "")
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = [m for m in (_FRAME.match(f) for f in stack.split(";")) if m is not None]
        if not frames:
            continue
        ours = [i for i, m in enumerate(frames) if m["file"].startswith(own)]
        inner = frames[ours[-1] + 1:] if ours else frames
        total += int(count)
        if not inner:
            per_function[(HARNESS, "")][0] += int(count)
            continue
        match = inner[-1]
        per_function[(match["function"], match["file"])][int(match["line"])] += int(count)
    rows = []
    for (function, file), lines in per_function.items():
        samples = sum(lines.values())
        hottest = max(lines.items(), key=lambda kv: kv[1])[0]
        rows.append({"function": function, "file": file, "line": hottest, "samples": samples,
                     "share": samples / total if total else 0.0})
    rows.sort(key=lambda r: -r["samples"])
    return total, rows[:top_n]


def _count_samples(text: str, marker: str) -> int:
    """Samples (from an --idle recording) whose stack contains `marker`."""
    total = 0
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if marker in stack and count.isdigit():
            total += int(count)
    return total


def _py_spy(argv: list[str]) -> subprocess.Popen:
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def sample_gil(duration_s: float, pid: int | None = None) -> GilSample:
    """Blocks for about duration_s while py-spy samples `pid` (default: us).

    Two recordings run side by side: `--gil` (only samples where a thread
    holds the GIL) and `--idle` (every sample, every thread). The second counts
    the samples py-spy actually took, so a py-spy starved of CPU on a busy
    machine does not read as a GIL that is free."""
    reason = why_no_gil_sampling()
    if reason:
        return GilSample(skipped=reason)
    seconds = max(1, round(duration_s))  # py-spy takes whole seconds
    target = str(pid or os.getpid())
    with tempfile.TemporaryDirectory(prefix="tb-diag-gil-") as tmp:
        gil_out, all_out = os.path.join(tmp, "gil.txt"), os.path.join(tmp, "all.txt")
        common = ["--nonblocking", "--full-filenames", "-r", str(RATE_HZ), "-d", str(seconds), "-f", "raw"]
        argv = [find_py_spy(), "record", "--gil", *common, "-o", gil_out, "-p", target]
        command = " ".join(["py-spy", *argv[1:-3], "<pid>"])
        try:
            gil_proc = _py_spy(argv)
            all_proc = _py_spy([find_py_spy(), "record", "--idle", *common, "-o", all_out, "-p", target])
            _, err = gil_proc.communicate(timeout=seconds + 60)
            all_proc.communicate(timeout=seconds + 60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return GilSample(command=command, skipped=f"py-spy failed to run: {exc}")
        if gil_proc.returncode != 0 or not os.path.exists(gil_out):
            tail = err.strip().splitlines()[-1:] or ["no output"]
            hint = " (py-spy needs ptrace access: run as root or set kernel.yama.ptrace_scope=0)" \
                if "ermission" in tail[0] else ""
            return GilSample(command=command, skipped=f"py-spy exited with {gil_proc.returncode}: {tail[0]}{hint}")
        with open(gil_out, encoding="utf-8", errors="replace") as fh:
            total, top = parse_raw(fh.read())
        taken = 0
        if all_proc.returncode == 0 and os.path.exists(all_out) and pid is None:
            with open(all_out, encoding="utf-8", errors="replace") as fh:
                # Our own thread waits in this function during every sample.
                taken = _count_samples(fh.read(), "sample_gil (")
    taken = taken or RATE_HZ * seconds
    held = min(1.0, total / taken)
    return GilSample(command=command, total_samples=total, held_share=held, rate_hz=RATE_HZ,
                     duration_s=float(seconds), top=top)
