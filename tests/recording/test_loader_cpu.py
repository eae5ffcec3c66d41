"""CPU time of a DataLoader's parts (fetch, collate_fn) in an unmodified
script run through `tb-pipeline record`, against the CPU and wall time the
script's own Dataset and collate_fn measure (num_workers=0: the loop's thread)."""
from __future__ import annotations

import json
import textwrap

import pytest
from test_pipeline_launcher import launch

from tb_pipeline_plugin.analysis.statistics.report import report
from tb_pipeline_plugin.readers import load_pipeline_run

pytestmark = pytest.mark.timing(
    "a DataLoader's CPU and wall time, measured while the script runs, against the script's own clocks"
)

SCRIPT = textwrap.dedent("""
    import json, time, torch
    from torch.utils.data import DataLoader, Dataset

    CPU = {"getitem": 0.0, "collate": 0.0}
    SLEPT = []

    class Mixed(Dataset):  # odd items wait (like a read), even ones compute in Python
        def __len__(self):
            return 40
        def __getitem__(self, i):
            c0 = time.thread_time()
            if i % 2:
                t0 = time.perf_counter()
                time.sleep(0.004)
                SLEPT.append(time.perf_counter() - t0)
            else:
                s = 0
                for k in range(40_000):
                    s += k
            CPU["getitem"] += time.thread_time() - c0
            return torch.zeros(8)

    def collate(items):
        c0 = time.thread_time()
        s = 0
        for k in range(20_000):
            s += k
        out = torch.stack(items)
        CPU["collate"] += time.thread_time() - c0
        return out

    batches = sum(1 for _ in DataLoader(Mixed(), batch_size=4, collate_fn=collate, num_workers=0))
    print("ORACLE", json.dumps({"batches": batches, "slept_s": sum(SLEPT), **CPU}))
""")


def test_dataloader_parts_cpu_and_wall(tmp_path):
    done = launch(tmp_path, SCRIPT, "loader")
    oracle = json.loads(done.stdout.split("ORACLE", 1)[1])
    rows = {s["stage_name"]: s for s in report(load_pipeline_run(str(tmp_path / "logs" / "loader")))["stages"]}
    fetch, collate = rows["fetch"], rows["collate_fn"]
    assert fetch["tasks"] == collate["tasks"] == oracle["batches"] == 10
    assert fetch["pipeline_index"] == -1
    # The fetch holds __getitem__ and collate_fn: its CPU is theirs plus the
    # fetcher's own few µs; its wall time adds the sleeps, which cost no CPU.
    per_batch_cpu_s = (oracle["getitem"] + oracle["collate"]) / oracle["batches"]
    assert fetch["task_cpu_mean_s"] == pytest.approx(per_batch_cpu_s, rel=0.15, abs=2e-4)
    assert collate["task_cpu_mean_s"] == pytest.approx(oracle["collate"] / oracle["batches"], rel=0.15, abs=1e-4)
    assert fetch["task_call_mean_s"] >= oracle["slept_s"] / oracle["batches"] + 0.5 * per_batch_cpu_s
    assert fetch["task_cpu_mean_s"] < 0.8 * fetch["task_call_mean_s"]  # it waits part of the time
