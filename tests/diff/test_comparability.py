"""Comparable or not: per-sample answers when batches differ, and the list of
differences before every verdict (diff/units.py, diff/comparability.py).

A small transformer encoder is recorded as the README says (`tb-pipeline
record --profile -- python train.py --batch 16`, then `--batch 32`): the
verdict is per sample, and its sign and size are the pipeline statistics'
samples-per-second ratio computed straight from the JSONL. Equal batches
(the H200 pairs) read per step, as before, and list no false difference.
Profiler options on one side only, another device, other step counts and a
busier host are each listed; the first takes the verdict away.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from urllib.parse import urlencode

import pytest

from conftest import PLUGIN_PREFIX, get_when_ready
from support.json_oracle import duration_by_name, load_events, settled_steps
from support.recordings import recording
from tb_pipeline_plugin import cli
from tb_pipeline_plugin.compare import compare
from tb_pipeline_plugin.diff import comparability as C
from tb_pipeline_plugin.diff.significance import method as S

H200 = Path(__file__).resolve().parents[3] / "shared" / "traces" / "h200"
STEPS = 16
SCHEDULE = "wait=2,warmup=1,active=3"

# Token ids (batch x sequence, int64) through an encoder: the recorder sees
# the batch's samples and its tokens.
TRAIN = textwrap.dedent(f"""
    import argparse, torch
    from torch.utils.data import DataLoader, TensorDataset

    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=16)
    a = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    SEQ, VOCAB = 16, 500
    n = {STEPS} * a.batch
    data = TensorDataset(torch.randint(0, VOCAB, (n, SEQ)), torch.randint(0, 2, (n,)))

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(VOCAB, 32)
            layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)
            self.encoder = torch.nn.TransformerEncoder(layer, 2)
            self.head = torch.nn.Linear(32, 2)

        def forward(self, ids):
            return self.head(self.encoder(self.embed(ids)).mean(1))

    model = Encoder()
    opt = torch.optim.AdamW(model.parameters(), 1e-3)
    for ids, y in DataLoader(data, batch_size=a.batch):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(ids), y).backward()
        opt.step()
""")

# The same few steps under torch.profiler, stacks on or off: trace-only runs.
PROFILED = textwrap.dedent("""
    import sys, torch
    out, with_stack, batch = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3])
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    sched = torch.profiler.schedule(wait=1, warmup=1, active=5)
    with torch.profiler.profile(schedule=sched, with_stack=with_stack, record_shapes=True,
                                on_trace_ready=torch.profiler.tensorboard_trace_handler(out)) as prof:
        for _ in range(7):
            x = torch.randn(batch, 64)
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
            prof.step()
""")

# One core kept busy while a run is recorded: another process's load on the host.
BURNER = "import time\nend = time.time() + 600\nwhile time.time() < end: pass\n"


def _record(logdir: Path, run: str, script: Path, *args: str) -> None:
    cmd = [sys.executable, "-m", "tb_pipeline_plugin.cli", "record", "--logdir", str(logdir), "--run", run,
           "--host-interval", "0.25", "--profile", SCHEDULE, "--", sys.executable, str(script), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]


@recording()
def recorded_runs(root: Path) -> Path:
    """Batches 16 and 32, and 16 beside a busy core, made once (support/recordings.py)."""
    script = root / "train.py"
    script.write_text(TRAIN)
    logdir = root / "runs"
    _record(logdir, "b16", script, "--batch", "16")
    _record(logdir, "b32", script, "--batch", "32")
    burner = subprocess.Popen([sys.executable, "-c", BURNER])
    try:
        _record(logdir, "b16_busy", script, "--batch", "16")
    finally:
        burner.kill()
        burner.wait()
    return logdir


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return recorded_runs.copy_to(tmp_path_factory.mktemp("comparability"))


@recording(one_core=True)  # one intra-op thread, no pipeline statistics, no timing asserted
def recorded_trace_only(root: Path) -> Path:
    """Trace-only runs: stacks on, stacks off, and a bigger batch; made once (support/recordings.py)."""
    script = root / "profiled.py"
    script.write_text(PROFILED)
    for run, stack, batch in (("stacks", "1", "32"), ("plain", "0", "32"), ("plain64", "0", "64")):
        subprocess.run([sys.executable, str(script), str(root / run), stack, batch], check=True, timeout=600,
                       capture_output=True)
    return root


@pytest.fixture(scope="module")
def trace_only(tmp_path_factory):
    return recorded_trace_only.copy_to(tmp_path_factory.mktemp("trace_only"))


def _records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for f in sorted((run_dir / "pipeline").glob("*.jsonl"))
            for line in f.read_text().splitlines() if line.strip()]


def _samples_per_s(run_dir: Path) -> float:
    """The oracle: samples over seconds of the judged steps, from the JSONL alone."""
    records = _records(run_dir)
    starts = tuple(r["wall_time_s"] for r in records if r["type"] == "profiler" and r["owner"] == "launcher")
    steps = settled_steps([r for r in records if r["type"] == "step"], profiler_starts=starts)
    return sum(s["batch_size"] for s in steps) / sum(s["duration_s"] for s in steps)


def test_a_bigger_batch_is_judged_per_sample(runs):
    c = compare(runs / "b16", runs / "b32")
    ex = c.explanation
    step = ex["step"]
    assert step["unit"] == "sample" and step["source"] == "recorded", ex["sentence"]
    b_rate, e_rate = _samples_per_s(runs / "b16"), _samples_per_s(runs / "b32")
    # Time per sample is 1 / samples per second: its change is the rates' ratio, sign and size.
    expected_pct = 100.0 * (b_rate / e_rate - 1.0)
    assert step["delta_pct"] == pytest.approx(expected_pct, abs=0.05), (step, b_rate, e_rate)
    assert (step["delta_us"] > 0) == (e_rate < b_rate)
    assert step["baseline_per_s"] == pytest.approx(b_rate, rel=1e-3)
    assert step["experimental_per_s"] == pytest.approx(e_rate, rel=1e-3)
    assert step["units"]["baseline"]["samples_per_step"] == 16 and step["units"]["experimental"]["samples_per_step"] == 32
    # Tokens too (a 2-D integer batch): 16 tokens a sample.
    assert step["units"]["baseline"]["tokens_per_step"] == 16 * 16
    # The per-step figures beside, against the same oracle (every judged step holds 16 or 32 samples). Not
    # "the 32-sample step is longer": the recordings share the machine with another test worker, and once the
    # 16-sample run, slowed by it, took 16.7 ms a step against 14.7 ms for 32 samples.
    assert step["per_step"]["baseline_us"] == pytest.approx(16 / b_rate * 1e6, rel=1e-3), step
    assert step["per_step"]["experimental_us"] == pytest.approx(32 / e_rate * 1e6, rel=1e-3), step
    sentence = ex["sentence"]
    assert "per sample" in sentence and "16 vs 32 samples a step" in sentence and "per step)" in sentence
    assert ex["comparability"][0]["key"] == "work_per_step" and ex["comparability"][0]["effect"] == C.PER_UNIT
    # The contributors are per sample too: they add up to the per-sample step of the profiled steps.
    profiled = step["profiled"]["delta_us"]
    assert sum(x["delta_us"] for x in ex["contributors"]) == pytest.approx(profiled, rel=1e-3, abs=1.0)
    # The Overview: time per sample judged as the explanation's step, samples/s the oracle's rates.
    rows = c.overview
    assert rows.loc["time_per_sample_us", "significance"] == step["significance"]
    assert rows.loc["samples_per_s", "baseline"] == pytest.approx(b_rate, rel=1e-3)
    assert rows.loc["tokens_per_s", "experimental"] == pytest.approx(e_rate * 16, rel=1e-3)
    assert "Time per sample" in rows.loc["avg_step_time_us", "caveat"]


def _per_sample_oracle(run_dir: Path, name: str, samples: int) -> float:
    """An operator's host time per sample, straight from the trace JSON: its
    events' durations over the profiled steps' samples."""
    (trace,) = run_dir.glob("*.pt.trace.json*")
    _, events = load_events(trace)
    steps = sum(1 for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#"))
    return duration_by_name(events, ("cpu_op",))[name] / (steps * samples)


def test_the_tables_are_per_sample_too(runs, make_tb_client):
    """The operator and kernel tables state deltas: per sample, as the verdict."""
    c = compare(runs / "b16", runs / "b32")
    page = c.operator_page(10000)
    assert page["per_unit"] == "sample" and "16 vs 32 samples a step" in page["per_unit_note"]
    row = next(r for r in page["rows"] if r["name"] == "aten::embedding")
    assert row["baseline_host_total_us"] == pytest.approx(_per_sample_oracle(runs / "b16", "aten::embedding", 16),
                                                          abs=1e-3)
    assert row["experimental_host_total_us"] == pytest.approx(
        _per_sample_oracle(runs / "b32", "aten::embedding", 32), abs=1e-3)
    assert row["baseline_calls"] == row["experimental_calls"]  # calls stay counts: one embedding a step
    # Every mark is about the per-sample delta beside it.
    for r in page["rows"]:
        sig = r["significance"]
        if sig is not None and sig["ci_low"] is not None:
            assert sig["ci_low"] <= sig["delta"] <= sig["ci_high"], r
    client = make_tb_client(runs)
    body = get_when_ready(client, "diff/operators?baseline=b16&experimental=b32&limit=3").get_json()
    assert body["per_unit"] == "sample" and body["rows"][0]["delta_host_self_us"] == page["rows"][0]["delta_host_self_us"]
    assert get_when_ready(client, "diff/kernels?baseline=b16&experimental=b32").get_json()["per_unit"] == "sample"
    # The module pieces stay one step's: the view says so rather than judging them per sample.
    modules = get_when_ready(client, "diff/modules?baseline=b16&experimental=b32").get_json()
    assert "16 vs 32 samples a step" in modules["per_unit_note"]


def test_the_cli_and_tensorboard_say_per_sample(runs, make_tb_client, capsys):
    code = cli.main(["diff", str(runs / "b16"), str(runs / "b32"), "--top", "3"])
    out = capsys.readouterr().out
    assert code == cli.EXIT_OK
    assert "per sample" in out
    assert "Samples per step: 16 vs 32" in out and "time_per_sample_us" in out
    client = make_tb_client(runs)
    body = get_when_ready(client, "diff/explain?baseline=b16&experimental=b32").get_json()
    assert body["step"]["unit"] == "sample"
    assert body["step"]["delta_us"] == compare(runs / "b16", runs / "b32").explanation["step"]["delta_us"]
    overview = get_when_ready(client, "diff/overview?baseline=b16&experimental=b32").get_json()
    assert [d["key"] for d in overview["comparability"]][0] == "work_per_step"


def test_an_equal_batch_pair_reads_per_step_and_lists_nothing_false():
    for pair in ("amp", "compile"):
        c = compare(H200 / pair / "baseline", H200 / pair / "experimental")
        ex = c.explanation
        assert ex["step"]["unit"] == "step" and ex["step"]["per_step"] is None
        assert "per step" in ex["sentence"] and "per sample" not in ex["sentence"]
        # The same 32 samples a step in both; nothing differs but the change: amp's precision (its casts
        # said with it) and kernels, compile's compiled side and its fused kernels (analysis/gpu_work.py,
        # analysis/precision.py).
        units = c.overview_answer["units"]
        assert units["baseline"]["samples_per_step"] == units["experimental"]["samples_per_step"] == 32
        keys = [d["key"] for d in c.overview_answer["comparability"]]
        assert keys == (["precision", "kernels_per_step"] if pair == "amp" else ["compiled", "kernels_per_step"])
        assert "time_per_sample_us" in c.overview.index
        assert c.operator_page(3)["per_unit"] is None and c.kernel_page(3)["per_unit"] is None  # totals, as before


def test_stacks_on_one_side_only_take_the_verdict_away(trace_only, make_tb_client):
    c = compare(trace_only / "stacks", trace_only / "plain")
    [d] = [d for d in c.overview_answer["comparability"] if d["key"] == "profiler_options"]
    assert d["effect"] == C.NO_VERDICT and "baseline run only" in d["text"] and "with_stack" in d["text"]
    ex = c.explanation
    assert ex["clock"] == "host" and ex["step"]["source"] == "profiled"
    assert ex["step"]["significance"]["verdict"] == S.NOT_COMPARABLE, ex["sentence"]
    assert ex["sentence"].startswith("No verdict: ")
    assert all(x["significance"]["verdict"] == S.NOT_COMPARABLE for x in ex["contributors"])
    assert ex["conclusive"]["reason"] == "not_comparable"
    # At the number: the Overview's host rows carry no verdict, and say why; device rows are untouched.
    rows = c.overview
    assert rows.loc["avg_step_time_us", "significance"]["verdict"] == S.NOT_COMPARABLE
    assert "with_stack" in rows.loc["breakdown_us.cpu_exec", "caveat"]
    assert not isinstance(rows.loc["breakdown_us.kernel", "caveat"], str)
    # The same options on both sides: a verdict again.
    same = compare(trace_only / "plain", trace_only / "plain64").explanation
    assert same["step"]["significance"]["verdict"] != S.NOT_COMPARABLE
    client = make_tb_client(trace_only)
    body = get_when_ready(client, "diff/explain?baseline=stacks&experimental=plain").get_json()
    assert body["step"]["significance"]["verdict"] == S.NOT_COMPARABLE


def test_samples_given_for_trace_only_runs(trace_only, make_tb_client, capsys):
    plain, bigger = trace_only / "plain", trace_only / "plain64"
    per_step = compare(plain, bigger).explanation["step"]
    c = compare(plain, bigger, baseline_samples=32, experimental_samples=64)
    step = c.explanation["step"]
    assert per_step["unit"] == "step" and step["unit"] == "sample"
    assert step["units"]["baseline"]["samples_source"] == "given"
    # The profiled steps' own times, divided by the counts given.
    assert step["baseline_us"] == pytest.approx(per_step["baseline_us"] / 32, rel=1e-3)
    assert step["experimental_us"] == pytest.approx(per_step["experimental_us"] / 64, rel=1e-3)
    assert cli.main(["diff", str(plain), str(bigger), "--baseline-samples", "32", "--experimental-samples", "64"]) == 0
    assert "per sample" in capsys.readouterr().out
    client = make_tb_client(trace_only)
    query = urlencode({"baseline": "plain", "experimental": "plain64", "baseline_samples": 32,
                       "experimental_samples": 64})
    body = get_when_ready(client, f"diff/explain?{query}").get_json()
    assert body["step"]["unit"] == "sample" and body["step"]["delta_us"] == step["delta_us"]
    bad = client.get(f"{PLUGIN_PREFIX}/diff/explain?baseline=plain&experimental=plain64&baseline_samples=-1")
    assert bad.status_code == 400 and "baseline_samples" in bad.get_json()["error"]


def test_another_device_and_other_step_counts_are_listed(runs, trace_only):
    c = compare(H200 / "amp" / "baseline", next((runs / "b16").glob("*.pt.trace.json*")))
    items = {d["key"]: d for d in c.overview_answer["comparability"]}
    assert items["device"]["baseline"] == "NVIDIA H200" and items["device"]["experimental"] == "CPU"
    assert items["device"]["effect"] == C.CAVEAT
    # 3 profiled steps against the CPU run's 3: not listed; against a 5-step trace: listed.
    assert "profiled_steps" not in items
    other = compare(H200 / "amp" / "baseline", trace_only / "plain")
    steps = {d["key"]: d for d in other.overview_answer["comparability"]}["profiled_steps"]
    assert (steps["baseline"], steps["experimental"]) == ("3", "5") and steps["effect"] == C.NOTE
    # Versions recorded in the statistics: torch 2.11 on the H200 against this machine's.
    assert items["torch"]["baseline"] == "2.11.0" and items["torch"]["effect"] == C.NOTE


def _others_cores(run_dir: Path) -> float:
    """The oracle of other processes' load: machine minus training tree, per host sample, in cores."""
    host = [r for r in _records(run_dir) if r["type"] == "host"][1:]
    return sum(max(r["system_cpu_pct"] - r["cpu_pct"], 0.0) for r in host) / len(host) / 100.0


def test_a_busier_host_is_listed_when_it_was(runs):
    quiet, busy = _others_cores(runs / "b16"), _others_cores(runs / "b16_busy")
    # The burner kept a core busy for the whole recording.
    assert busy >= 0.5, busy
    c = compare(runs / "b16", runs / "b16_busy")
    items = {d["key"]: d for d in c.overview_answer["comparability"]}
    cores = json.loads(next((runs / "b16").glob("pipeline/*.jsonl")).read_text().splitlines()[0])["cpu_count"]
    listed = abs(busy - quiet) >= C.LOAD_CORES and 100.0 * abs(busy - quiet) / cores >= C.LOAD_SHARE_PCT
    assert ("host_load" in items) == listed, (quiet, busy, items.get("host_load"))
    if listed:
        assert items["host_load"]["effect"] == C.CAVEAT and "experimental run was recorded" in items["host_load"]["text"]
    # Same batch: per step, and nothing else differs.
    assert c.explanation["step"]["unit"] == "step"
    assert set(items) <= {"host_load"}
