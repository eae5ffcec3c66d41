"""Composer profiler traces read straight from a logdir: the file is written here the way Composer's JSONTraceHandler
writes it, and every expected number is computed from the written events."""
from __future__ import annotations

import json

import numpy as np
import pytest

from tb_pipeline_plugin.analysis.statistics.report import report
from tb_pipeline_plugin.readers import find_pipeline_sources, load_pipeline_run

T0_US = 1_795_000_000_000_000
STEPS = 12
RANK, PID = 0, 4242


def _ev(name, ph, ts, **kw):
    return {"name": name, "cat": kw.pop("cat", ""), "ph": ph, "ts": int(ts), "pid": RANK, "tid": PID, **kw}


def _span(events, name, start, dur, cat=""):
    args = {"epoch": 0, "batch": len(events)}
    events.append(_ev(name, "B", start, cat=cat, args=args))
    events.append(_ev(name, "E", start + dur, cat=cat, args=args))


def composer_events():
    """(events, oracle): per step a dataloader span, an after_dataloader
    callback, the batch span with an algorithm inside, a batch_end callback
    after it; host counters every 100 ms."""
    rng = np.random.default_rng(0)
    events = [_ev("process_name", "M", T0_US, args={"name": "Rank 0 training loop process"}),
              _ev("thread_name", "M", T0_US, args={"name": "Training Loop"})]
    oracle = {"wait": [], "step": [], "cb": {"SpeedMonitor": [], "BlurPool": []}, "cpu": [], "disk": [], "disk_t": []}
    t = T0_US
    for i in range(STEPS):
        dl, cb1, batch, algo, cb2 = (int(v) for v in rng.integers([2000, 100, 8000, 300, 200], [9000, 400, 12000, 900, 600]))
        start = t
        events.append(_ev("event/dataloader", "i", t, s="p"))  # Composer's record_instant_on_start
        _span(events, "event/dataloader", t, dl)
        t += dl
        _span(events, "callback/SpeedMonitor/event/after_dataloader", t, cb1, cat="after_dataloader,SpeedMonitor")
        t += cb1
        _span(events, "event/batch", t, batch)
        _span(events, "algorithm/BlurPool/event/before_forward", t + 500, algo, cat="before_forward,BlurPool")
        t += batch
        _span(events, "callback/SpeedMonitor/event/batch_end", t, cb2, cat="batch_end,SpeedMonitor")
        t += cb2 + 50
        oracle["wait"].append(dl)
        oracle["step"].append((start, t if i < STEPS - 1 else t - cb2 - 50))  # the last step ends with its batch
        oracle["cb"]["SpeedMonitor"] += [cb1] + ([cb2] if i < STEPS - 1 else [])
        oracle["cb"]["BlurPool"].append(algo)
    read_bytes = 0
    for k, ts in enumerate(range(T0_US, t, 100_000)):
        cpu = float(rng.uniform(10, 90))
        read_bytes += int(rng.integers(0, 1 << 20))
        events.append(_ev("cpu", "C", ts, cat="cpu", args={"cpu_percent": cpu}))
        events.append(_ev("memory/virtual", "C", ts + 3, cat="memory", args={"used_gb": 1e6 + k, "available_gb": 2e6}))
        events.append(_ev("disk/sda/read_bytes", "C", ts + 5, cat="disk", args={"field_name": read_bytes}))
        events.append(_ev("network/eth0/kb_sent", "C", ts + 7, cat="net", args={"kb_sent": 100.0 * k}))
        oracle["cpu"].append(cpu)
        oracle["disk"].append(read_bytes)
        oracle["disk_t"].append(ts + 7)  # the row of a burst is stamped with its last reading
    return events, oracle


def write_like_composer(path, events, closed=True):
    # JSONTraceHandler: "[\n", events joined by ",\n", "\n]" at close.
    text = "[\n" + ",\n".join(json.dumps(e) for e in events) + ("\n]" if closed else "")
    path.write_text(text)


@pytest.fixture()
def composer_run(tmp_path):
    events, oracle = composer_events()
    run = tmp_path / "composer_run"
    (run / "profiler_traces").mkdir(parents=True)
    write_like_composer(run / "profiler_traces" / "rank_0.json", events)
    return run, oracle


def test_composer_trace_is_found_in_the_run_directory(composer_run):
    run, _ = composer_run
    assert [p.split("/")[-1] for p in find_pipeline_sources(str(run))["composer"]] == ["rank_0.json"]


def test_dataloader_share_and_callbacks(composer_run):
    run, oracle = composer_run
    tables = load_pipeline_run(str(run))
    r = report(tables)
    assert r["source"] == "composer" and r["split"]["steps"] == STEPS
    total_us = sum(e - s for s, e in oracle["step"])
    assert r["split"]["data_wait_pct"] == pytest.approx(100.0 * sum(oracle["wait"]) / total_us, rel=1e-6)
    assert tables.steps["data_wait_s"].tolist() == pytest.approx([w / 1e6 for w in oracle["wait"]], abs=1e-9)
    callbacks = {c["name"]: c for c in r["callbacks"]}
    for name, durs in oracle["cb"].items():
        assert callbacks[name]["calls"] == len(durs)
        assert callbacks[name]["total_s"] == pytest.approx(sum(durs) / 1e6, abs=1e-9)
    assert callbacks["BlurPool"]["kind"] == "algorithm" and callbacks["SpeedMonitor"]["kind"] == "callback"
    # The algorithm runs inside the batch span: it is not compute.
    s = tables.steps
    assert (s["data_wait_s"] + s["compute_s"] + s["callbacks_s"] + s["other_s"] - s["duration_s"]).abs().max() < 1e-9


def test_host_metrics_from_counter_events(composer_run):
    run, oracle = composer_run
    host = report(load_pipeline_run(str(run)))["host"]
    assert host["summary"]["samples"] == len(oracle["cpu"])
    assert host["summary"]["cpu_pct_mean"] == pytest.approx(np.mean(oracle["cpu"]))
    rates = np.diff(oracle["disk"]) / (np.diff(oracle["disk_t"]) / 1e6)
    got = [row["disk_read_bytes_per_s"] for row in host["series"]][1:]
    assert got == pytest.approx(rates.tolist(), rel=1e-6)
    # Composer writes bytes / 2**9 as "used_gb": read back as bytes.
    assert host["summary"]["mem_used_bytes_max"] == pytest.approx((1e6 + len(oracle["cpu"]) - 1) * 2**9)


def test_trace_cut_while_being_written(tmp_path):
    events, _ = composer_events()
    run = tmp_path / "cut"
    run.mkdir()
    write_like_composer(run / "rank_0.json", events, closed=False)
    data = (run / "rank_0.json").read_bytes()
    (run / "rank_0.json").write_bytes(data[: len(data) - 40])  # mid-event
    r = report(load_pipeline_run(str(run)))
    assert r["split"]["steps"] == STEPS
    assert r["warnings"]
