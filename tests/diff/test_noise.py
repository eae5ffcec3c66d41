"""`tb-pipeline noise`: the between-run spread measured on recordings of one
configuration, against the same number computed straight from the trace
JSON, and consistent with the significance it feeds."""
from __future__ import annotations

from pathlib import Path

from itertools import combinations

import numpy as np
import pytest

from support import explain_runs as R
from support.recordings import recording
from support.json_oracle import load_events
from tb_pipeline_plugin import cli
from tb_pipeline_plugin.analysis.processor import TraceProcessor
from tb_pipeline_plugin.diff.significance import method as S
from tb_pipeline_plugin.diff.explain.contributors import explain
from tb_pipeline_plugin.diff.significance.between_runs import STEP, between_run_spread, recommended_pct


@recording(sources=["tests/support/explain_runs.py"])
def recorded_replicas(root: Path) -> list[str]:
    """Three recordings of one configuration after a warm-up, made once (support/recordings.py)."""
    R.record(str(root / "warmup"), steps=10)
    return [R.record(str(root / f"r{i}"), steps=10) for i in range(3)]


@pytest.fixture(scope="module")
def replicas(tmp_path_factory) -> list[str]:
    return [str(p) for p in recorded_replicas.copy_to(tmp_path_factory.mktemp("noise"))]


@pytest.fixture(scope="module")
def ledgers(replicas):
    return [TraceProcessor.load(p).ledger() for p in replicas]


def _json_step_us(path: str) -> np.ndarray:
    _, events = load_events(path)
    steps = sorted((e for e in events if e.get("ph") == "X" and e.get("cat") == "user_annotation"
                    and e["name"].startswith("ProfilerStep#")), key=lambda e: e["ts"])
    return np.array([float(e["dur"]) for e in steps])


def test_step_spread_matches_trace_json(replicas, ledgers):
    spread = between_run_spread(ledgers)
    assert spread.iloc[0]["quantity"] == STEP and spread.iloc[0]["pairs"] == 3
    runs = [_json_step_us(p) for p in replicas]
    terms = []
    for a, b in combinations(runs, 2):
        m = (a.mean() + b.mean()) / 2
        terms.append(((b.mean() - a.mean()) / m) ** 2 - (a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b)) / m**2)
    oracle_pct = 100 * np.sqrt(max(0.0, np.mean(terms)) / 2)
    assert spread.iloc[0]["spread_pct"] == pytest.approx(oracle_pct, abs=0.01)
    assert spread.iloc[0]["mean_us"] == pytest.approx(np.mean([r.mean() for r in runs]), rel=1e-6)
    # Parts below 5 % of the step are left out; the rest sorted by spread.
    parts = spread.iloc[1:]
    assert (parts["mean_us"] >= 0.05 * spread.iloc[0]["mean_us"]).all()
    assert list(parts["spread_pct"]) == sorted(parts["spread_pct"], reverse=True)
    assert any(k.endswith("Block_1/Linear_2") for k in parts["key"])


def test_the_recommended_setting_covers_the_replicas(ledgers, monkeypatch):
    pct = recommended_pct(between_run_spread(ledgers))
    monkeypatch.setenv(S.BETWEEN_RUN_ENV, repr(pct))
    for a, b in combinations(ledgers, 2):
        out = explain(a, b, noise=S.NoisePolicy.from_environment())
        significant = [c["name"] for c in out["contributors"] if c["significance"]["verdict"] == S.SIGNIFICANT]
        assert significant == [], (pct, out["sentence"])


def test_cli(capsys, replicas):
    assert cli.main(["noise", *replicas]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert out.splitlines()[2].startswith("step time")
    assert "Judge diffs on this machine with --between-run-pct" in out
    assert cli.main(["noise", replicas[0]]) == cli.EXIT_USAGE
    assert "at least 2 recordings" in capsys.readouterr().err


def test_long_runs_use_the_normal_limit_of_the_bootstrap(monkeypatch):
    """A run's pipeline statistics may hold 100,000 steps: past
    BOOTSTRAP_MAX_STEPS the resampled means come from their normal limit, and
    the interval agrees with the full bootstrap's (skewed step times, as a
    loader's are) to a few % of its width."""
    rng = np.random.default_rng(7)
    n = S.BOOTSTRAP_MAX_STEPS * 3
    b = rng.gamma(2.0, 10.0, size=(3, n))
    e = b[:, rng.permutation(n)] * 1.01 + rng.normal(0.0, 1.0, size=(3, n))
    limit = S.compare(b, e, noise=S.NoisePolicy.from_environment())
    monkeypatch.setattr(S, "BOOTSTRAP_MAX_STEPS", 10 * n)
    full = S.compare(b, e, noise=S.NoisePolicy.from_environment())
    for a, f in zip(limit, full):
        width = f["ci_high"] - f["ci_low"]
        assert abs(a["ci_low"] - f["ci_low"]) < 0.03 * width and abs(a["ci_high"] - f["ci_high"]) < 0.03 * width
        assert a["verdict"] == f["verdict"]


def test_an_interval_holds_the_delta_shown_beside_it():
    """Four steps say the experimental is ~300 µs slower; one stalled baseline
    step makes the plain mean ~300 µs faster. The step pulled in narrows the
    interval towards the four, but the number shown is the plain mean: the
    interval holds it, and the verdict cannot be 'significant' the other way."""
    b = np.array([1000.0, 1010.0, 990.0, 1005.0, 4000.0])
    e = np.array([1300.0, 1310.0, 1290.0, 1305.0, 1295.0])
    sig = S.compare_one(b, e, noise=S.NoisePolicy.from_environment())
    assert sig["delta"] == pytest.approx(e.mean() - b.mean(), abs=1e-3) and sig["delta"] < 0
    assert sig["ci_low"] <= sig["delta"] <= sig["ci_high"]
    assert sig["verdict"] == "within_noise"
