"""The explanation of a step-time delta, on recorded pairs with one known
cause each (tests/support/explain_runs.py), and its numbers against oracles computed
straight from the trace JSON."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from support import explain_runs as R
from support.recordings import recording
from support.json_oracle import category, load_events
from support.null_verdicts import assert_null
from tb_pipeline_plugin.analysis.processor import TraceProcessor
from tb_pipeline_plugin.diff.significance import method as S
from tb_pipeline_plugin.diff.explain.contributors import explain
from tb_pipeline_plugin.diff.explain.sentence import sentence

PAIRS = {
    "wide": ({}, dict(wide_block=1)),  # Block_1's hidden width x4
    "slow_loader": ({}, dict(loader_delay_s=0.02)),
    # Small layers: many short operators, so the time between them is most of
    # a step. Without stacks: to record an operator's Python stack the
    # profiler takes the GIL inside every operator.
    "gil": (dict(width=64, with_stack=False), dict(width=64, gil_hog=True, with_stack=False)),
    # The same configuration, recorded twice; last, so that neither side is
    # the process's first full-size recording after the warm-up.
    "replica": ({}, {}),
}


# Parts of one configuration's step moved by up to 17 % between two
# back-to-back recordings on this shared 2-core box (diff/significance/method.py):
# the tests judge every pair, the null pair and the known causes alike, with
# that machine's between-run spread, as a user of a shared machine would.
SHARED_BOX_BETWEEN_RUN_PCT = "10"
NOISE = S.NoisePolicy(float(SHARED_BOX_BETWEEN_RUN_PCT))


@pytest.fixture(autouse=True)
def shared_box_noise(monkeypatch):
    monkeypatch.setenv(S.BETWEEN_RUN_ENV, SHARED_BOX_BETWEEN_RUN_PCT)


STEPS = 20


@recording(sources=["tests/support/explain_runs.py"])
def recorded_pairs(root: Path) -> dict[str, tuple[str, str]]:
    """PAIRS, made once (support/recordings.py)."""
    # 20 steps a run: on a loaded box a few preempted steps among 10 widen
    # the band past the wide block's effect.
    return R.record_pairs(PAIRS, str(root), steps=STEPS)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[str, str]]:
    return {name: (str(b), str(e)) for name, (b, e) in
            recorded_pairs.copy_to(tmp_path_factory.mktemp("explain")).items()}


@pytest.fixture(scope="module")
def tps(runs) -> dict[str, tuple[TraceProcessor, TraceProcessor]]:
    return {name: (TraceProcessor.load(b), TraceProcessor.load(e)) for name, (b, e) in runs.items()}


def _explain(tps, pair: str) -> dict:
    b, e = tps[pair]
    return explain(b.ledger(), e.ledger(), noise=NOISE)


def _significant(out: dict) -> list[dict]:
    return [c for c in out["contributors"] if c["significance"]["verdict"] == S.SIGNIFICANT]


def test_injected_module_slowdown_is_that_module_forward_and_backward(tps):
    out = _explain(tps, "wide")
    first = out["contributors"][0]
    assert first["kind"] == "module" and first["name"] == "Block_1", out["sentence"]
    assert first["significance"]["verdict"] == S.SIGNIFICANT, out["sentence"]
    assert first["forward_delta_us"] > 0 and first["backward_delta_us"] > 0, first
    assert first["share_pct"] > 50

    assert "Block_1 (forward and backward)" in out["sentence"]


def test_same_configuration_has_no_significant_contributor(tps):
    out = _explain(tps, "replica")
    # At most one near miss: the 1 in 20 of a 95 % interval (null_verdicts.py).
    assert_null([c["significance"] for c in out["contributors"]], out["sentence"])


def test_slower_data_loader_is_data_loading(tps):
    out = _explain(tps, "slow_loader")
    first = out["contributors"][0]
    assert first["kind"] == "data_loading" and first["significance"]["verdict"] == S.SIGNIFICANT, out["sentence"]
    # 20 ms of sleep per batch: the delta is about that.
    assert first["delta_us"] > 18_000
    assert "data loading" in out["sentence"]


def test_gil_contention_is_host_time_waiting(tps):
    """The training thread waits for the GIL between operators (host time
    outside operators) and inside them: backward frees tensors, which takes
    the GIL (measured without the profiler on this model: 10 ms -> 35 ms per
    backward with the background thread), so a few calls of each backward
    operator stall for the hog's 10 ms. Host-side waiting leads, significant;
    both kinds together are most of the delta (the second may be within
    noise on a loaded box: host time comes in the hog's 10 ms quanta, a wide
    band over 20 steps); backward itself hardly moved."""
    out = _explain(tps, "gil")
    significant = _significant(out)
    if out["step"]["significance"]["verdict"] != S.SIGNIFICANT:
        # A loaded box can widen the step's band past the hog's few ms (a CI run at load 4-5 did): a change
        # not established is apportioned to no part, and the sentence says so; the waiting still moved most.
        assert all(c["share_pct"] is None for c in out["contributors"]), out["sentence"]
        assert out["sentence"].startswith("Experimental and baseline take the same time"), out["sentence"]
        assert max(out["contributors"], key=lambda c: c["delta_us"])["kind"] in ("host", "stall"), out["sentence"]
        return
    waiting = sum(c["share_pct"] for c in out["contributors"] if c["kind"] in ("host", "stall"))
    assert waiting >= 70, out["sentence"]
    if significant:
        assert significant[0]["kind"] in ("host", "stall"), out["sentence"]
        assert "operators stalled" in out["sentence"] or "host time outside operators" in out["sentence"]
    else:
        # A busy CI box once split the hog's quanta so that neither kind of waiting cleared its own band
        # (+3.4 ms ± 2.5 ms a step in all): the sentence then says no part is established, naming none.
        assert "no single part is significantly" in out["sentence"] or "though no part is" in out["sentence"], \
            out["sentence"]


def _stall_oracle(path: str) -> float:
    """Stalled time from the JSON: top-level operators of the step thread
    inside a step and outside DataLoader annotations; per (name, k-th call
    of that name in its step) the lower quartile over steps; a call over 3x
    it and 1 ms above it stalls for the excess."""
    _, events = load_events(path)
    steps = [e for e in _x(events, ("user_annotation",)) if e["name"].startswith("ProfilerStep#")]
    tid = steps[0]["tid"]
    loaders = [e for e in _x(events, ("user_annotation",))
               if e["tid"] == tid and e["name"].startswith("enumerate(DataLoader)#")]
    top = [o for o in _top_level([e for e in _x(events, ("cpu_op",)) if e["tid"] == tid])
           if any(s["ts"] <= o["ts"] < s["ts"] + s["dur"] for s in steps)
           and not any(d["ts"] <= o["ts"] < d["ts"] + d["dur"] for d in loaders)]
    by_name: dict[tuple, list[float]] = {}
    for s in steps:
        seen: dict[str, int] = {}
        for o in sorted((o for o in top if s["ts"] <= o["ts"] < s["ts"] + s["dur"]), key=lambda o: o["ts"]):
            k = seen.get(o["name"], 0)
            seen[o["name"]] = k + 1
            by_name.setdefault((o["name"], k), []).append(float(o["dur"]))
    total = 0.0
    for durs in by_name.values():
        med = float(np.percentile(durs, 25))
        if len(durs) >= 3:
            total += sum(d - med for d in durs if d > 3 * med and d - med >= 1000)
    return total


def test_stalls_match_trace_json(runs, tps):
    for side in (0, 1):
        ledger = tps["gil"][side].ledger()
        assert ledger.parts["stall_us"].sum() == pytest.approx(_stall_oracle(runs["gil"][side]), rel=1e-5, abs=0.05)
    # The hog's 10 ms stretches. (That uniformly slower calls are no stalls,
    # the wide block's, is in the wide pair's explanation: Block_1 leads.)
    assert tps["gil"][1].ledger().parts["stall_us"].sum() > 10_000


def test_contributors_add_up_to_the_step_delta(tps):
    for name in ("wide", "slow_loader", "gil", "replica"):
        out = _explain(tps, name)
        total = sum(c["delta_us"] for c in out["contributors"])
        assert total == pytest.approx(out["step"]["delta_us"], abs=0.05 * len(out["contributors"]))
        bars = out["waterfall"]
        assert bars[0]["end_us"] == out["step"]["baseline_us"] and bars[-1]["end_us"] == out["step"]["experimental_us"]
        assert bars[-2]["end_us"] == pytest.approx(out["step"]["experimental_us"], abs=0.05 * len(bars))


# ------------------------------------------------------------- JSON oracles


def _x(events, cats):
    return [e for e in events if e.get("ph") == "X" and category(e) in cats]


def _top_level(ops: list[dict]) -> list[dict]:
    """Operators not inside another operator of their thread (a stack walk)."""
    out, stack = [], []
    for e in sorted(ops, key=lambda e: (e["tid"], e["ts"], -e["dur"])):
        while stack and (stack[-1]["tid"] != e["tid"] or e["ts"] >= stack[-1]["ts"] + stack[-1]["dur"]):
            stack.pop()
        if not stack:
            out.append(e)
        stack.append(e)
    return out


def _oracle(path: str, module: str) -> dict:
    """Per run, from the JSON: step durations; data loading time; the
    module's forward (top-level operators inside its calls) and backward
    (top-level operators holding a fwdbwd flow end whose start lies inside
    one of its calls); host time outside operators and DataLoader
    annotations."""
    _, events = load_events(path)
    steps = sorted((e for e in _x(events, ("user_annotation",)) if e["name"].startswith("ProfilerStep#")),
                   key=lambda e: e["ts"])
    tid = steps[0]["tid"]
    ops = [e for e in _x(events, ("cpu_op",)) if e["tid"] == tid]
    loaders = [e for e in _x(events, ("user_annotation",))
               if e["tid"] == tid and e["name"].startswith("enumerate(DataLoader)#")]
    calls = [e for e in _x(events, ("python_function",)) if e["name"] == f"nn.Module: {module}" and e["tid"] == tid]
    top = [o for o in _top_level(ops) if not any(d["ts"] <= o["ts"] < d["ts"] + d["dur"] for d in loaders)]
    starts = {e["id"]: e for e in events if e.get("ph") == "s" and category(e) == "fwdbwd"}
    ends = [e for e in events if e.get("ph") == "f" and category(e) == "fwdbwd"]

    def inside(ts, spans):
        return any(c["ts"] <= ts < c["ts"] + c["dur"] for c in spans)

    backward_ops = {}
    for f in ends:
        s = starts.get(f["id"])
        if s is None or not inside(s["ts"], calls):
            continue
        holder = [o for o in top if o["tid"] == f["tid"] and o["ts"] <= f["ts"] < o["ts"] + o["dur"]]
        for o in holder:
            backward_ops[(o["ts"], o["name"])] = o["dur"]
    forward = sum(o["dur"] for o in top if inside(o["ts"], calls) and (o["ts"], o["name"]) not in backward_ops)
    covered = sorted([(e["ts"], e["ts"] + e["dur"]) for e in ops + loaders])
    host = 0.0
    for s in steps:
        lo, hi = s["ts"], s["ts"] + s["dur"]
        reach, busy = lo, 0.0
        for a, b in covered:
            a, b = max(a, reach), min(b, hi)
            if b > a:
                busy += b - a
                reach = b
        host += (hi - lo) - busy
    return {
        "steps": [s["dur"] for s in steps],
        "data_loading": sum(d["dur"] for d in loaders if inside(d["ts"], steps)),
        "forward": forward,
        "backward": sum(backward_ops.values()),
        "host": host,
    }


@pytest.mark.parametrize("side", [0, 1])
def test_ledger_matches_trace_json(runs, tps, side):
    oracle = _oracle(runs["wide"][side], "Block_1")
    ledger = tps["wide"][side].ledger()
    parts = ledger.parts
    # Timestamps are ns-precision decimals in the JSON: µs agree to a few ns.
    assert ledger.steps["host_us"].tolist() == pytest.approx(oracle["steps"], abs=5e-3)
    # CPU-only: the overview's step time is the host window, and the parts add up to it.
    sums = parts.groupby("step")["us"].sum().to_numpy()
    assert sums == pytest.approx(ledger.steps["step_us"].to_numpy(), abs=5e-3)
    block = parts[(parts["kind"] == "module") & parts["key"].str.contains(r"(?:^|/)Block_1(?:/|$)")]
    assert block[block["phase"] == "forward"]["us"].sum() == pytest.approx(oracle["forward"], rel=1e-5)
    assert block[block["phase"] == "backward"]["us"].sum() == pytest.approx(oracle["backward"], rel=1e-5)
    assert oracle["backward"] > 0
    assert parts[parts["kind"] == "data_loading"]["us"].sum() == pytest.approx(oracle["data_loading"], rel=1e-5)
    assert parts[parts["kind"] == "host"]["us"].sum() == pytest.approx(oracle["host"], rel=1e-5)


def test_spikiness_matches_numpy(tps):
    out = _explain(tps, "wide")
    for i, side in enumerate(("baseline", "experimental")):
        x = tps["wide"][i].ledger().steps["step_us"].to_numpy()
        sp = out["spikiness"][side]
        assert sp["steps"] == len(x) == STEPS
        assert sp["cv_pct"] == pytest.approx(100 * np.std(x, ddof=1) / np.mean(x), abs=0.01)
        assert sp["worst_to_median"] == pytest.approx(np.max(x) / np.median(x), abs=0.001)


# ------------------------------------------------------------- the method


def test_significance_method():
    rng = np.random.default_rng(0)
    b = 100 + rng.normal(0, 5, size=10)
    assert S.compare_one(b, b + 50, noise=NOISE)["verdict"] == S.SIGNIFICANT
    assert S.compare_one(b, b, noise=NOISE)["verdict"] == S.WITHIN_NOISE
    # Resolved by the bootstrap but below 1 % of the reference: not a finding.
    assert S.compare_one(b, b + 0.5, noise=NOISE)["verdict"] == S.WITHIN_NOISE
    few = S.compare_one(b[:2], b[:5] + 50, noise=NOISE)
    assert few["verdict"] == S.TOO_FEW_STEPS and few["ci_low"] is None and few["baseline_steps"] == 2
    # Fixed seed: the same answer every time.
    assert S.compare_one(b, b + 3, noise=NOISE) == S.compare_one(b, b + 3, noise=NOISE)
    # A family: the interval of each of k quantities is wider than alone.
    one = S.compare_one(b, b + 3, noise=NOISE)
    fam = S.compare(np.vstack([b] * 20), np.vstack([b + 3] * 20), noise=NOISE)[0]
    assert fam["ci_high"] - fam["ci_low"] > one["ci_high"] - one["ci_low"]


# Step times (ms) measured on this box, one recording each: a run that
# settled from 15 ms to 10.5 ms, a steady one, one that jumped a level
# mid-run; and the host time of a run where a thread holds the GIL in 10 ms
# stretches: spiky, but on one level.
DRIFTING = [14.3, 15.2, 14.6, 12.6, 12.6, 11.2, 10.7, 10.5, 10.6, 10.7]
STEADY = [10.1, 9.8, 9.8, 10.2, 9.8, 9.8, 9.9, 9.8, 9.8, 9.7]
JUMPED = [10.4, 9.8, 9.9, 9.9, 11.3, 11.5, 11.4, 11.4, 11.7, 11.8]
SPIKY = [13.4, 62.3, 43.6, 1.8, 12.1, 32.9, 42.6, 21.8]


def test_level_drift_is_counted_only_when_the_blocks_differ():
    lv = S.level_variance(np.array([DRIFTING, STEADY, JUMPED]))
    assert lv[0] > 1.0 and lv[2] > 0.3 and lv[1] == 0.0
    assert S.level_variance(np.array([SPIKY]))[0] == 0.0
    assert S.level_variance(np.array([DRIFTING[:5]]))[0] == 0.0  # too short to cut into blocks
    # A drifting run's band is wider than its steps' spread alone gives.
    drifting = S.compare_one(STEADY, DRIFTING, noise=NOISE)
    shuffled = S.compare_one(STEADY, sorted(DRIFTING, key=lambda v: (v * 7919) % 1), noise=NOISE)
    assert S.half_width(drifting) > S.half_width(shuffled)


def test_between_run_spread_setting(monkeypatch, caplog):
    b, e = np.array(STEADY), np.array(STEADY) * 1.05
    # The setting the TensorBoard process reads (diff/pair.py:pair_of reads it once per comparison).
    monkeypatch.setenv(S.BETWEEN_RUN_ENV, "0")
    assert S.compare_one(b, e, noise=S.NoisePolicy.from_environment())["verdict"] == S.SIGNIFICANT
    monkeypatch.setenv(S.BETWEEN_RUN_ENV, "10")
    assert S.compare_one(b, e, noise=S.NoisePolicy.from_environment())["verdict"] == S.WITHIN_NOISE
    monkeypatch.setenv(S.BETWEEN_RUN_ENV, "lots")
    assert S.NoisePolicy.from_environment() == S.NoisePolicy(S.BETWEEN_RUN_PCT)
    assert "not a percentage" in caplog.text


def test_sentence_when_no_single_part_moved():
    steady_us = np.array(STEADY) * 1000
    step = {"delta_us": 5000.0, "delta_pct": 50.0, "significance": S.compare_one(steady_us, steady_us + 5000, noise=NOISE)}
    quiet = {"kind": "module", "name": "Block_0", "status": "matched", "delta_us": 400.0, "share_pct": 20.0,
             "forward_delta_us": 400.0, "backward_delta_us": 0.0,
             "significance": {**step["significance"], "verdict": S.WITHIN_NOISE}}
    text = sentence(step, [quiet])
    assert text.startswith("Experimental is 50 % slower per step") and "no single part is significantly slower" in text
    # A part within noise that holds most of the delta is named, not established.
    most = {**quiet, "delta_us": 4500.0, "share_pct": 90.0}
    text = sentence(step, [most])
    assert "90 % of it is Block_0, though no part is significantly slower on its own" in text, text
    # A significant sliver of a large delta is "under 1 %", never "0 %".
    sliver = {**quiet, "delta_us": 20.0, "share_pct": 0.4, "significance": step["significance"]}
    assert "under 1 % of it is Block_0" in sentence(step, [sliver])


def test_notebook_api(tps):
    from tb_pipeline_plugin.compare import compare

    b, e = tps["slow_loader"]
    c = compare(b, e)
    assert c.explanation["sentence"] == _explain(tps, "slow_loader")["sentence"]
    table = c.contributors
    assert table.iloc[0]["kind"] == "data_loading" and table.iloc[0]["verdict"] == S.SIGNIFICANT
    assert {"delta_us", "share_pct", "ci_low_us", "ci_high_us"} <= set(table.columns)


def test_module_diff_carries_each_call_backward(tps, runs):
    """diff/modules: a module call's backward time is that of the backward
    operators its forward created; summed over the steps it is the JSON
    oracle's backward of that module."""
    from support.diff_calls import diff_modules_impl

    b, e = tps["wide"]
    got = [0.0, 0.0]
    for step in range(STEPS):
        path = str(step)
        for name in ("Net_0", "Sequential_0", "Block_1"):
            kids = diff_modules_impl(b, e, path)["children"]
            path = next(k["path"] for k in kids if k["name"] == name)
        node = diff_modules_impl(b, e, path)["node"]
        assert node["kind"] == "module"
        got[0] += node["baseline_backward_us"]
        got[1] += node["experimental_backward_us"]
        assert node["delta_backward_us"] == pytest.approx(node["experimental_backward_us"] - node["baseline_backward_us"], abs=2e-3)
    for side in (0, 1):
        assert got[side] == pytest.approx(_oracle(runs["wide"][side], "Block_1")["backward"], rel=1e-5)
    # Other pieces have no backward of their own to show.
    first = diff_modules_impl(b, e, "0")["children"][0]
    assert first["kind"] == "data_loading" and first["baseline_backward_us"] is None
