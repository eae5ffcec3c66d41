"""`diff/pipeline` and `diff/diagnostic` answer from one `StatisticsPair` per comparison (diff/pair.py):
asked again, the comparison (its bootstrap: about 100 ms on the H200 pair) is not redone; a statistics
file that grows is a new pair, compared afresh with its new step."""
from __future__ import annotations

import glob
import json
import shutil
from pathlib import Path

from support.route_answers import answer_when_ready as _get_ready
from tb_pipeline_plugin.diff.impls import pipeline as impls


H200 = Path(__file__).resolve().parents[2].parent / "shared" / "traces" / "h200"


def _counting(monkeypatch, name: str) -> list:
    calls: list = []
    real = getattr(impls, name)

    def counted(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(impls, name, counted)
    return calls


def test_a_pipeline_comparison_is_made_once_until_a_file_changes(tmp_path, monkeypatch, make_tb_client):
    for side in ("baseline", "experimental"):
        shutil.copytree(H200 / "amp" / side / "pipeline", tmp_path / side / "pipeline")
    calls = _counting(monkeypatch, "compare_pipeline")
    client = make_tb_client(str(tmp_path))
    pair = dict(baseline="baseline", experimental="experimental")
    status, first = _get_ready(client, "diff/pipeline", **pair)
    assert status == 200, first
    for _ in range(3):
        assert _get_ready(client, "diff/pipeline", **pair) == (200, first)
    assert len(calls) == 1
    # One more step appended to the experimental run: a new comparison that counts it.
    [path] = glob.glob(str(tmp_path / "experimental" / "pipeline" / "*.jsonl"))
    lines = open(path, encoding="utf-8").read().splitlines()
    last = json.loads(next(line for line in reversed(lines) if json.loads(line)["type"] == "step"))
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps({**last, "step": last["step"] + 1, "wall_start_s": last["wall_start_s"] + 60}) + "\n")
    status, second = _get_ready(client, "diff/pipeline", **pair)
    assert status == 200 and len(calls) == 2
    split = [answer["experimental_report"]["split"]["steps"] for answer in (first, second)]
    assert split[1] == split[0] + 1


def test_a_diagnostic_comparison_is_made_once(diagnostic_logdir, monkeypatch, make_tb_client):
    calls = _counting(monkeypatch, "compare_diagnostic")
    client = make_tb_client(str(diagnostic_logdir))
    pair = dict(baseline="diag_baseline", experimental="diag_experimental")
    status, first = _get_ready(client, "diff/diagnostic", **pair)
    assert status == 200, first
    assert _get_ready(client, "diff/diagnostic", **pair) == (200, first)
    assert len(calls) == 1
