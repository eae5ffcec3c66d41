"""Soak: 8 clients hit every route while the logdir changes.

    .venv/bin/python benchmarks/soak.py [--seconds 60] [--clients 8]

Serves the real TensorBoard WSGI app with only this plugin on a threaded
werkzeug server bound to 127.0.0.1 (loopback only; an ephemeral port). Meanwhile
one thread keeps changing the logdir: runs are added (copies of the real
traces in ../shared/traces), rewritten while being written (half a file, then
the rest), deleted, and hostile files land (a module cycle, a 20,000-deep
module chain, a non-UTF-8 file name, a small gzip bomb, a cut gzip). Clients
ask every route with real and junk parameters, and give up on slow answers
(a 5 s client timeout), as a browser tab being closed would.

Pass: no 5xx, and once the clients stop and pending loads finish, the
process goes idle (no handler still spinning for a client that left).
Reported: requests by status, latency percentiles, RSS at start / end /
peak, CPU seconds used in the idle window. Exit status 0 on pass.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path
from urllib.parse import urlencode

import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]
SHARED = REPO.parent / "shared" / "traces"
PREFIX = "/data/plugin/tb_pipeline"
ROUTES = ("/runs", "/overview", "/operators", "/kernels", "/modules", "/diff/overview", "/diff/modules",
          "/diff/operators", "/diff/kernels", "/diagnostic", "/diff/diagnostic", "/index.js")
JUNK = ("", "..", "../../etc/passwd", "%00", "\x00", "a" * 5000, "<script>", "r%FE", "-1", "1e9", "0.0.0", "\\")


def _module_doc(n: int, cycle: bool) -> bytes:
    events = [{"ph": "X", "cat": "python_function", "name": f"nn.Module: M_{i}", "pid": 1, "tid": 1,
               "ts": i * 0.001, "dur": n * 0.01 - i * 0.002,
               "args": {"Python id": i + 1, "Python parent id": (i + 1) if cycle else i}} for i in range(n)]
    return json.dumps({"traceEvents": events}).encode()


class LogdirChurn(threading.Thread):
    def __init__(self, logdir: Path, seeds: list[Path], stop: threading.Event, rng: random.Random):
        super().__init__(daemon=True)
        self.logdir, self.seeds, self.stop, self.rng = logdir, seeds, stop, rng
        self.actions: Counter = Counter()

    def runs(self) -> list[Path]:
        return [p for p in self.logdir.iterdir() if p.is_dir()]

    def run(self) -> None:
        n = 0
        while not self.stop.is_set():
            n += 1
            action = self.rng.choice(("add", "add", "rewrite", "delete", "hostile"))
            try:
                getattr(self, action)(n)
                self.actions[action] += 1
            except OSError:
                self.actions["os_error"] += 1  # raced with our own delete: fine
            self.stop.wait(self.rng.uniform(0.1, 0.5))

    def add(self, n: int) -> None:
        run = self.logdir / f"run{n}"
        run.mkdir()
        shutil.copy(self.rng.choice(self.seeds), run / "w.1.pt.trace.json.gz")

    def rewrite(self, n: int) -> None:
        runs = self.runs()
        if not runs:
            return
        target = self.rng.choice(runs) / "w.1.pt.trace.json.gz"
        data = self.rng.choice(self.seeds).read_bytes()
        with open(target, "wb") as f:  # a file being written: half now, the rest later
            f.write(data[: len(data) // 2])
            f.flush()
            self.stop.wait(0.3)
            f.write(data[len(data) // 2:])

    def delete(self, n: int) -> None:
        runs = self.runs()
        if len(runs) > 3:
            shutil.rmtree(self.rng.choice(runs), ignore_errors=True)

    def hostile(self, n: int) -> None:
        run = self.logdir / f"hostile{n}"
        run.mkdir()
        kind = self.rng.choice(("cycle", "deep", "name", "bomb", "cut"))
        if kind == "cycle":
            (run / "w.1.pt.trace.json").write_bytes(_module_doc(50, cycle=True))
        elif kind == "deep":
            (run / "w.1.pt.trace.json").write_bytes(_module_doc(20_000, cycle=False))
        elif kind == "name":
            with open(os.path.join(os.fsencode(run), b"w\xfe.1.pt.trace.json.gz"), "wb") as f:
                f.write(self.rng.choice(self.seeds).read_bytes())
        elif kind == "bomb":
            member = gzip.compress(b" " * (1 << 20), compresslevel=9)
            (run / "w.1.pt.trace.json.gz").write_bytes(member * 300)
        else:
            data = self.rng.choice(self.seeds).read_bytes()
            (run / "w.1.pt.trace.json.gz").write_bytes(data[: len(data) // 3])


def client(base: str, stop: threading.Event, rng: random.Random, names: list[str], stats: dict, lock) -> None:
    while not stop.is_set():
        route = rng.choice(ROUTES)
        pick = lambda: rng.choice(names) if names and rng.random() < 0.8 else rng.choice(JUNK)  # noqa: E731
        params = {}
        if route.startswith("/diff/"):
            params = {"baseline": pick(), "experimental": pick()}
            if rng.random() < 0.3:
                params["path"] = rng.choice(("0", "0.1", "1.0.2", "x", "9" * 50))
            if rng.random() < 0.3:
                params.update(offset=rng.choice(("0", "5", "-1", "x")), limit=rng.choice(("1", "100", "0", "1e9")))
        elif route not in ("/runs", "/index.js"):
            params = {"run": pick()}
            if rng.random() < 0.2:
                params["worker"] = rng.choice(("w", "w%FE", "..", ""))
            if rng.random() < 0.2:
                params["span"] = rng.choice(("1", "x", "99"))
        if route == "/operators" or (route == "/diff/operators" and rng.random() < 0.5):
            params["group_by"] = rng.choice(("name", "name_and_shape", "bogus"))
        url = base + PREFIX + route + ("?" + urlencode(params) if params else "")
        t0 = time.monotonic()
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                body = resp.read()
                status = resp.status
            if route == "/runs":
                names[:] = [r["name"] for r in json.loads(body)["runs"]]
        except urllib.error.HTTPError as exc:
            status = exc.code
            exc.read()
        except (TimeoutError, urllib.error.URLError, ConnectionError):
            status = "client_gave_up"
        with lock:
            stats["status"][str(status)] += 1
            stats["latency"].append(time.monotonic() - t0)
            if isinstance(status, int) and status >= 500:
                stats["5xx"].append(url)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--idle-cpu-s", type=float, default=0.5, help="most CPU seconds allowed in the 3 s idle window")
    args = p.parse_args(argv)

    import logging

    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise

    from conftest import build_tb_app

    seeds = sorted(SHARED.rglob("*.json.gz"))
    logdir = Path(tempfile.mkdtemp(prefix="soak_logdir_"))
    rng = random.Random(args.seed)
    for i, seed in enumerate(seeds[:4]):
        (logdir / f"seed{i}").mkdir()
        shutil.copy(seed, logdir / f"seed{i}" / "w.1.pt.trace.json.gz")
    app, plugin = build_tb_app(logdir)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    base = f"http://127.0.0.1:{server.server_port}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    me = psutil.Process()
    rss_start = me.memory_info().rss
    stop = threading.Event()
    churn = LogdirChurn(logdir, seeds, stop, random.Random(args.seed + 1))
    churn.start()
    stats = {"status": Counter(), "latency": [], "5xx": []}
    lock = threading.Lock()
    names: list[str] = []
    clients = [threading.Thread(target=client, args=(base, stop, random.Random(args.seed + 10 + i), names, stats, lock))
               for i in range(args.clients)]
    for c in clients:
        c.start()
    peak = rss_start
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        time.sleep(0.5)
        peak = max(peak, me.memory_info().rss)
    stop.set()
    for c in clients:
        c.join()
    churn.join()
    # Let queued loads finish, then nothing may keep running.
    settle = time.monotonic() + 120
    while time.monotonic() < settle:
        try:
            with urllib.request.urlopen(base + PREFIX + "/runs", timeout=30) as resp:
                if not json.loads(resp.read())["loading"]:
                    break
        except (urllib.error.URLError, TimeoutError):
            pass
        time.sleep(0.5)
    time.sleep(1.0)
    cpu0 = sum(me.cpu_times()[:2])
    time.sleep(3.0)
    idle_cpu = sum(me.cpu_times()[:2]) - cpu0
    lat = sorted(stats["latency"]) or [0.0]
    summary = {
        "seconds": args.seconds, "clients": args.clients, "requests": len(stats["latency"]),
        "status": dict(stats["status"]), "5xx": stats["5xx"][:20], "churn": dict(churn.actions),
        "latency_s": {"p50": round(lat[len(lat) // 2], 3), "p99": round(lat[int(len(lat) * 0.99)], 3), "max": round(lat[-1], 3)},
        "rss_mb": {"start": rss_start >> 20, "peak": peak >> 20, "end": me.memory_info().rss >> 20},
        "idle_cpu_s": round(idle_cpu, 3),
    }
    server.shutdown()
    plugin.close()
    shutil.rmtree(logdir, ignore_errors=True)
    print(json.dumps(summary, indent=1))
    ok = not stats["5xx"] and idle_cpu <= args.idle_cpu_s
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
