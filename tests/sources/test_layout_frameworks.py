"""Runs as other training frameworks lay them out, one run per training job in the picker:
PyTorch Lightning's `PyTorchProfiler` (`lightning_logs/version_N/`) and Hugging Face's `Trainer` with a
torch.profiler callback (traces in `output_dir` beside the Trainer's `runs/` TensorBoard logs), both recorded
with the real packages by the scripts in tests/data/; and a plain `tensorboard_trace_handler` job of two DDP
processes profiled over two cycles (two workers, two spans each), recorded here. Numbers are checked against
the trace JSON (tests/support/json_oracle.py)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlencode

import pytest
from werkzeug.test import Client

from conftest import PLUGIN_PREFIX, build_tb_app, get_when_ready
from support.json_oracle import load_events, step_windows
from support.recordings import recording
from tb_pipeline_plugin import cli

DATA = Path(__file__).resolve().parents[1] / "data"


def _get(client, route: str, **params) -> dict:
    resp = get_when_ready(client, f"{route}?{urlencode(params)}")
    assert resp.status_code == 200, resp.get_data(as_text=True)
    return resp.get_json()


def _check_overview(client, run: str, worker: str, span: str, path: Path) -> None:
    body = _get(client, "overview", run=run, worker=worker, span=span)
    windows = step_windows(load_events(path)[1])
    assert [s["name"] for s in body["steps"]] == [name for name, _, _ in windows] and windows
    assert body["avg_step_time_us"] == pytest.approx(sum(e - s for _, s, e in windows) / len(windows), rel=1e-6)


@pytest.fixture(scope="module")
def clients():
    made = {}

    def make(logdir):
        if logdir not in made:
            made[logdir] = build_tb_app(logdir)
        return Client(made[logdir][0])

    yield make
    for _, plugin in made.values():
        plugin.close()


@pytest.mark.parametrize("framework, runs", [
    ("lightning", ["lightning_logs/version_0", "lightning_logs/version_1"]),
    ("transformers", ["baseline", "experimental"]),
])
def test_one_run_per_job_with_the_traces_numbers(clients, framework, runs):
    client = clients(DATA / framework)
    listed = client.get(f"{PLUGIN_PREFIX}/runs").get_json()["runs"]
    assert [r["name"] for r in listed] == runs
    for r in listed:
        [worker] = r["workers"]
        [span] = worker["spans"]
        [path] = (DATA / framework / r["name"]).glob("*.pt.trace.json")
        _check_overview(client, r["name"], worker["name"], span, path)
    body = _get(client, "diff/explain", baseline=runs[0], experimental=runs[1])
    assert body["step"]["baseline_us"] > 0


def test_lightning_and_transformers_jobs_on_the_cli(capsys):
    for a, b in [("lightning/lightning_logs/version_0", "lightning/lightning_logs/version_1"),
                 ("transformers/baseline", "transformers/experimental")]:
        assert cli.main(["diff", str(DATA / a), str(DATA / b)]) == 0, capsys.readouterr().err
    assert "avg_step_time_us" in capsys.readouterr().out


DDP_SCRIPT = r'''
import os, sys, time
import torch, torch.distributed as dist, torch.multiprocessing as mp

def work(rank, run):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=sys.argv[2])
    dist.init_process_group("gloo", rank=rank, world_size=2)
    torch.manual_seed(rank)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(64, 8))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = [(torch.randn(16, 64), torch.randn(16, 8)) for _ in range(10)]
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                schedule=torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=2),
                                on_trace_ready=torch.profiler.tensorboard_trace_handler(run)) as prof:
        for x, y in data:
            time.sleep(0.002 * (rank + 1))
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            prof.step()
    # Both ranks leave together: gloo aborts a process whose peer tore the
    # group down while it was still finishing (seen as SIGABRT under load).
    dist.barrier()
    dist.destroy_process_group()

if __name__ == "__main__":
    mp.spawn(work, args=(sys.argv[1],), nprocs=2)
'''


@recording()
def ddp_job(out: Path) -> None:
    """DDP_SCRIPT's two processes profiled into `out/job`."""
    from support.tb_cli import free_port

    script = out / "ddp_job.py"
    script.write_text(DDP_SCRIPT)
    subprocess.run([sys.executable, str(script), str(out / "job"), str(free_port())], check=True, timeout=300,
                   env={**os.environ, "OMP_NUM_THREADS": "1"})
    script.unlink()


@pytest.fixture(scope="module")
def ddp_logdir(tmp_path_factory):
    return ddp_job.copy_to(tmp_path_factory.mktemp("ddp"))


def test_tensorboard_trace_handler_workers_and_spans(clients, ddp_logdir):
    client = clients(ddp_logdir)
    [run] = client.get(f"{PLUGIN_PREFIX}/runs").get_json()["runs"]
    files = sorted((ddp_logdir / "job").glob("*.pt.trace.json"))
    assert run["name"] == "job" and len(files) == 4
    assert len(run["workers"]) == 2 and all(len(w["spans"]) == 2 for w in run["workers"])
    for w in run["workers"]:
        for span in w["spans"]:
            _check_overview(client, "job", w["name"], span, ddp_logdir / "job" / f"{w['name']}.{span}.pt.trace.json")
    ranks = _get(client, "distributed", baseline="job")["baseline_ranks"]["ranks"]
    by_worker = {}
    for w in run["workers"]:
        meta, _ = load_events(ddp_logdir / "job" / f"{w['name']}.{w['spans'][-1]}.pt.trace.json")
        by_worker[w["name"]] = meta["distributedInfo"]["rank"]
    assert {r["worker"]: r["rank"] for r in ranks} == by_worker
    assert sorted(by_worker.values()) == [0, 1] and all(r["rank_from_trace"] for r in ranks)
