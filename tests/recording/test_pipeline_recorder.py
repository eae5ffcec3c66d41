"""Recorder in a real training loop (torch, DataLoader with num_workers=0):
a slow Dataset is input-bound, the same data cached is not, and the data-wait
delta between them is the injected delay."""
from __future__ import annotations

import time

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from tb_pipeline_plugin.diff.significance.method import NoisePolicy
from tb_pipeline_plugin.analysis.statistics.report import report
from tb_pipeline_plugin.diff.statistics.compare import compare_pipeline
from tb_pipeline_plugin.readers import load_pipeline_run
from tb_pipeline_plugin.record import Recorder

pytestmark = pytest.mark.timing(
    "the data-wait delta of a loop recorded in the test is its injected delay; step parts against "
    "perf_counter"
)

DELAY_S = 0.03
BATCHES = 24
BATCH = 64


class SlowBatches(Dataset):
    def __init__(self, delay_s: float):
        gen = torch.Generator().manual_seed(0)
        self.x = torch.randn(BATCHES, BATCH, 8, generator=gen)
        self.y = torch.randn(BATCHES, BATCH, 1, generator=gen)
        self.delay_s = delay_s
        self.slept_s: list[float] = []  # what the sleeps really took (an oversubscribed box oversleeps)

    def __len__(self):
        return BATCHES

    def __getitem__(self, i):
        t0 = time.perf_counter()
        time.sleep(self.delay_s)
        self.slept_s.append(time.perf_counter() - t0)
        return self.x[i], self.y[i]


def train(rec: Recorder, batches) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in rec.wrap(batches):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        with rec.callback("log_loss"):
            float(loss.detach())


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("pipeline_logdir")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        slow = SlowBatches(DELAY_S)
        with Recorder(str(logdir), "slow", host_interval_s=0.1) as rec:
            train(rec, DataLoader(slow, batch_size=None, num_workers=0))
        cached = [(slow.x[i], slow.y[i]) for i in range(len(slow))]  # the same data, in memory
        with Recorder(str(logdir), "cached", host_interval_s=0.1) as rec:
            train(rec, cached)
    finally:
        torch.set_num_threads(threads)
    return load_pipeline_run(str(logdir / "slow")), load_pipeline_run(str(logdir / "cached")), slow.slept_s


def test_slow_loader_is_input_bound_and_cached_is_not(two_runs):
    slow, cached = (report(t) for t in two_runs[:2])
    for split in (slow["split"], cached["split"]):  # every batch a step; slow first ones counted as warm-up
        assert split["steps"] + split["warmup_steps"] + split["epilogue_steps"] == BATCHES
    assert slow["input_bound"]["verdict"] == "yes"
    assert cached["input_bound"]["verdict"] == "no"
    assert "--headspace" in slow["input_bound"]["next_step"]
    assert all(s["batch_size"] == BATCH for s in two_runs[0].steps.to_dict("records"))


def test_data_wait_delta_matches_injected_delay(two_runs):
    slow, cached, slept_s = two_runs
    diff = compare_pipeline(slow, cached, noise=NoisePolicy())  # baseline slow, experimental cached
    row = next(r for r in diff["summary"] if r["metric"] == "split.data_wait_s")
    # The oracle is the delay as injected, timed inside the Dataset (sleeping
    # DELAY_S takes longer on an oversubscribed machine).
    assert len(slept_s) == BATCHES and min(slept_s) >= DELAY_S
    assert -row["delta"] == pytest.approx(sum(slept_s) / len(slept_s), rel=0.10)
    # The split is exhaustive: every step's parts add up to its duration.
    for tables in (slow, cached):
        s = tables.steps
        total = s["data_wait_s"] + s["compute_s"] + s["callbacks_s"] + s["other_s"]
        assert (total - s["duration_s"]).abs().max() < 1e-9


def test_callbacks_and_host_metrics_are_recorded(two_runs):
    slow = report(two_runs[0])
    [cb] = slow["callbacks"]
    assert cb["name"] == "log_loss" and cb["calls"] == BATCHES
    assert slow["host"]["summary"]["samples"] >= 2
    assert slow["host"]["summary"]["rss_bytes_max"] > 10 << 20
    assert slow["meta"][0]["torch"].split("+")[0] == torch.__version__.split("+")[0]


def test_step_parts_follow_the_marks(tmp_path):
    """data wait (in next), compute, a callback, then other after step();
    the oracle is each phase timed by the loop itself."""
    slept = {"data_wait_s": [], "compute_s": [], "callbacks_s": [], "other_s": []}

    def timed_sleep(part, s):
        t0 = time.perf_counter()
        time.sleep(s)
        slept[part].append(time.perf_counter() - t0)

    def slow_source():
        for i in range(3):
            timed_sleep("data_wait_s", 0.010)
            yield i

    with Recorder(str(tmp_path), "marks", host_interval_s=None, flush_interval_s=0) as rec:
        for _ in rec.wrap(slow_source()):
            timed_sleep("compute_s", 0.005)
            with rec.callback("cb"):
                timed_sleep("callbacks_s", 0.003)
            rec.step()
            timed_sleep("other_s", 0.004)
    steps = load_pipeline_run(str(tmp_path / "marks")).steps
    assert len(steps) == 3
    for part, times in slept.items():
        # Each part holds its phase plus a few statements of loop overhead.
        assert steps[part].tolist() == pytest.approx(times, abs=0.0015), part


def test_headspace_replays_the_first_batches(tmp_path):
    pulled = []

    class Source:
        def __len__(self):
            return 6

        def __iter__(self):
            for i in range(6):
                pulled.append(i)
                yield i

    src = Source()
    with Recorder(str(tmp_path), "hs", host_interval_s=None, headspace=2) as rec:
        first = list(rec.wrap(src))
        second = list(rec.wrap(src))
    assert first == [0, 1, 0, 1, 0, 1] and second == [0, 1] * 3
    assert pulled == [0, 1]  # the real loader is never asked again
    steps = load_pipeline_run(str(tmp_path / "hs")).steps
    assert steps["cached"].tolist() == [False, False] + [True] * 10


def test_profiler_hand_off_puts_trace_and_stats_in_one_run(tmp_path):
    import glob

    from tb_pipeline_plugin.trace import load_trace
    from tb_pipeline_plugin.trace.link import link

    rec = Recorder(str(tmp_path), "profiled", host_interval_s=None)
    slow = SlowBatches(0.005)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                schedule=torch.profiler.schedule(wait=1, warmup=1, active=3, repeat=1),
                                on_trace_ready=rec.trace_handler()) as prof:
        rec.profiler = prof
        for i, (x, _) in enumerate(rec.wrap(DataLoader(slow, batch_size=None))):
            if i == 5:
                break
            x.sum()
    rec.close()
    [trace] = glob.glob(str(tmp_path / "profiled" / "*.pt.trace.json*"))
    assert len(load_pipeline_run(str(tmp_path / "profiled")).steps) == 6
    # prof.step() ran at each step boundary: the schedule's 3 active steps were traced.
    assert len(link(load_trace(trace)).steps.name) == 3


def test_a_slow_trace_export_is_not_data_wait(tmp_path):
    """prof.step() at a step boundary may export the trace (0.2 s measured
    on a small run): the profiler's own cost, not the loader's."""
    handler_calls = []

    def slow_export(prof):
        handler_calls.append(time.perf_counter())
        time.sleep(0.3)

    rec = Recorder(str(tmp_path), "profiled", host_interval_s=None)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                schedule=torch.profiler.schedule(wait=0, warmup=1, active=2, repeat=1),
                                on_trace_ready=slow_export) as prof:
        rec.profiler = prof
        for i, (x, _) in enumerate(rec.wrap(DataLoader(SlowBatches(0.002), batch_size=None))):
            if i == 6:
                break
            x.sum()
    rec.close()
    assert handler_calls, "the schedule exported no trace"
    steps = load_pipeline_run(str(tmp_path / "profiled")).steps
    assert steps["data_wait_s"].max() < 0.2, steps["data_wait_s"].tolist()
    assert steps["duration_s"].max() < 0.2, steps["duration_s"].tolist()


def _callback_run(logdir, run: str, sleeps: dict[str, float]) -> None:
    with Recorder(str(logdir), run, host_interval_s=None) as rec:
        for _ in rec.wrap(range(8)):
            for name, s in sleeps.items():
                with rec.callback(name):
                    time.sleep(s)


def test_slow_callbacks_are_named_and_diffed(tmp_path):
    _callback_run(tmp_path, "a", {"metrics": 0.006, "logger": 0.001})
    _callback_run(tmp_path, "b", {"metrics": 0.001, "logger": 0.009})
    a, b = load_pipeline_run(str(tmp_path / "a")), load_pipeline_run(str(tmp_path / "b"))
    ra = report(a)
    assert [c["name"] for c in ra["callbacks"]] == ["metrics", "logger"]  # slowest first
    # One call a step over the steps the report keeps: all 8 on a quiet box; on a busy one a slow first
    # step can read as warm-up and leave 7 (CI, load 4-5), which every figure then leaves out alike.
    split = ra["split"]
    assert split["steps"] + split["warmup_steps"] + split["epilogue_steps"] == 8 and split["steps"] >= 6
    assert ra["callbacks"][0]["calls"] == split["steps"] and ra["callbacks"][0]["mean_s"] >= 0.006
    # Callbacks are most of these steps: the advice names the slowest one.
    assert ra["split"]["callbacks_pct"] > 90 and "metrics" in ra["input_bound"]["next_step"]
    rows = compare_pipeline(a, b, noise=NoisePolicy())["callbacks"]
    # |delta per step|: logger +8 ms before metrics -5 ms.
    assert [r["name"] for r in rows] == ["logger", "metrics"]
    assert rows[0]["delta_per_step_s"] > 0.006 and rows[1]["delta_per_step_s"] < -0.004
