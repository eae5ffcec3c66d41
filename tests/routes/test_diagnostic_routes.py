"""`diagnostic` and `diff/diagnostic` through the real TensorBoard app, on
results the real diagnose engine wrote in this session (conftest's
diagnostic_logdir), checked against an independent read of the JSON lines;
plus results being appended to, torn, corrupt or missing."""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from urllib.parse import urlencode

import pytest

from conftest import PLUGIN_PREFIX
from tb_pipeline_plugin.analysis.diagnostic.report import VERDICT_LABELS

RESULTS = Path("diagnostic") / "diagnostic.jsonl"


def _lines(path: Path) -> list[dict]:
    """The oracle: json.loads of every complete line, nothing of ours."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _get(client, route: str, timeout_s: float = 30, **params):
    """GET, retrying while the server answers 409 (results still loading)."""
    deadline = time.monotonic() + timeout_s
    while True:
        resp = client.get(f"{PLUGIN_PREFIX}/{route}?{urlencode(params)}")
        if resp.status_code != 409 or time.monotonic() > deadline:
            return resp
        time.sleep(0.05)


def _best(points: list[dict]) -> tuple[int, float]:
    """Smallest level within 5 % of the best QPS (docs/diagnostic_format.md)."""
    top = max(p["qps"] for p in points)
    pick = min((p for p in points if p["qps"] >= 0.95 * top), key=lambda p: p["concurrency"])
    return pick["concurrency"], pick["qps"]


@pytest.fixture
def client(diagnostic_logdir, make_tb_client):
    return make_tb_client(diagnostic_logdir)


def test_runs_lists_diagnostic_only_runs(client):
    runs = {r["name"]: r for r in client.get(f"{PLUGIN_PREFIX}/runs").get_json()["runs"]}
    assert set(runs) == {"diag_baseline", "diag_experimental"}
    for r in runs.values():
        # Pickable: listed as ready (nothing to parse up front), with no trace workers.
        assert r["kinds"] == ["diagnostic"] and r["workers"] == [] and r["status"] == "ready"


@pytest.mark.parametrize("run", ["diag_baseline", "diag_experimental"])
def test_diagnostic_matches_the_records(client, diagnostic_logdir, run):
    lines = _lines(diagnostic_logdir / run / RESULTS)
    resp = _get(client, "diagnostic", run=run)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    body = resp.get_json()
    env = lines[0]
    assert env["type"] == "environment" and lines[-1]["type"] == "end"
    assert body["complete"] and not body["cut_short"] and body["warnings"] == []
    assert body["environment"]["cores"] == env["cpu_count"]
    assert body["environment"]["python"] == env["python"] and body["environment"]["levels"] == [1, 2, 4]
    assert body["elapsed_s"] == pytest.approx(lines[-1]["elapsed_s"])

    summaries = sorted((r for r in lines if r["type"] == "stage"), key=lambda r: r["index"])
    assert [s["stage"] for s in body["stages"]] == [s["stage"] for s in summaries] == ["decode", "fetch", "augment"]
    sweeps = [r for r in lines if r["type"] == "sweep"]
    gils = {r["stage"]: r for r in lines if r["type"] == "gil"}
    for stage, summary in zip(body["stages"], summaries):
        name = stage["stage"]
        assert stage["verdict"] in VERDICT_LABELS and stage["label"] == VERDICT_LABELS[stage["verdict"]]
        assert stage["reason"], name
        assert stage["inputs"] == summary["inputs"] and stage["kind"] == "map"
        mine = [r for r in sweeps if r["stage"] == name]
        assert stage["items"] == sum(r["items"] for r in mine)
        assert stage["peak_memory_bytes"] == max(r["peak_memory_bytes"] for r in mine)
        assert [c["executor"] for c in stage["curves"]] == ["thread", "process"]
        for curve in stage["curves"]:
            expected = sorted((r for r in mine if r["executor"] == curve["executor"]), key=lambda r: r["concurrency"])
            assert [p["concurrency"] for p in curve["points"]] == [r["concurrency"] for r in expected] == [1, 2, 4]
            for p, r in zip(curve["points"], expected):
                for key in ("qps", "p50_latency_s", "p90_latency_s", "cpu_pct", "machine_cpu_pct", "duration_s"):
                    assert p[key] == pytest.approx(r[key]), (name, curve["executor"], key)
                assert len(r["slice_qps"]) == 8 and sum(r["slice_qps"]) / 8 == pytest.approx(r["qps"])
                assert p["qps_low"] < p["qps"] < p["qps_high"]
                assert (p["items"], p["errors"], p["peak_memory_bytes"]) == (
                    r["items"], r.get("errors", 0), r["peak_memory_bytes"])
                assert p["speedup"] == pytest.approx(r["qps"] / expected[0]["qps"])
            level, qps = _best(expected)
            assert (curve["best_concurrency"], curve["best_qps"]) == (level, pytest.approx(qps))
            assert (stage[f"best_{curve['executor']}_concurrency"], stage[f"best_{curve['executor']}_qps"]) == (
                level, pytest.approx(qps))
        gil = gils[name]
        if gil.get("skipped"):
            assert stage["gil"]["skipped"] == gil["skipped"] and stage["gil"]["top"] == []
        else:
            assert stage["gil"]["concurrency"] == gil["concurrency"] == summary["gil_concurrency"]
            assert stage["gil"]["held_share"] == pytest.approx(gil["held_share"])
            assert [(h["function"], h["file"], h["line"], h["samples"]) for h in stage["gil"]["top"]] == [
                (f["function"], f["file"], f["line"], f["samples"]) for f in gil.get("top", [])]


def test_gil_holder_of_the_python_loop_is_named(client, diagnostic_logdir):
    """The baseline's decode stage is a pure-Python loop: py-spy must name it, with its file and a line inside it."""
    body = _get(client, "diagnostic", run="diag_baseline").get_json()
    decode = body["stages"][0]
    if decode["gil"]["skipped"]:
        pytest.skip(f"GIL sampling impossible here: {decode['gil']['skipped']}")
    holder = decode["gil"]["top"][0]
    assert holder["function"] == "decode_python" and holder["file"].endswith("diagnostic_sample.py")
    source = (Path(__file__).resolve().parents[2] / "samples" / "diagnostic_sample.py").read_text().splitlines()
    start = next(i for i, line in enumerate(source, 1) if line.startswith("def decode_python"))
    assert start < holder["line"] <= start + 4


def test_diff_diagnostic_matches_both_files(client, diagnostic_logdir):
    resp = _get(client, "diff/diagnostic", baseline="diag_baseline", experimental="diag_experimental")
    assert resp.status_code == 200, resp.get_data(as_text=True)
    body = resp.get_json()
    assert body["baseline"]["run"] == "diag_baseline" and body["experimental"]["run"] == "diag_experimental"
    one = _get(client, "diagnostic", run="diag_baseline").get_json()
    assert {**body["baseline_report"], **body["baseline"]} == one
    assert [s["stage"] for s in body["stages"]] == ["decode", "fetch", "augment"]

    def best_qps(run, stage, executor):
        pts = [r for r in _lines(diagnostic_logdir / run / RESULTS)
               if r["type"] == "sweep" and r["stage"] == stage and r["executor"] == executor]
        return _best(pts)[1]

    for row, b, e in zip(body["stages"], body["baseline_report"]["stages"], body["experimental_report"]["stages"]):
        assert row["in_baseline"] and row["in_experimental"]
        assert (row["verdict_baseline"], row["verdict_experimental"]) == (b["verdict"], e["verdict"])
        # Verdicts that differ are a change only beyond noise (docs/diagnostic_format.md, "Spread and comparisons").
        assert (row["change"] == "same") == (b["verdict"] == e["verdict"]), row
        assert row["verdict_changed"] == (row["change"] == "changed") and row["change_reason"]
        for executor in ("thread", "process"):
            ratio = best_qps("diag_experimental", row["stage"], executor) / best_qps("diag_baseline", row["stage"], executor)
            assert row[f"best_{executor}_qps_ratio"] == pytest.approx(ratio)
            # Both runs were sliced: every ratio has its interval, around it.
            assert row[f"best_{executor}_qps_ratio_low"] < ratio < row[f"best_{executor}_qps_ratio_high"]
    # The experimental fetch sleeps 8 ms instead of 4: its best thread QPS must drop (a 2x effect, far above noise).
    fetch = body["stages"][1]
    assert fetch["best_thread_qps_ratio"] < 0.85 and fetch["best_thread_qps_ratio_high"] < 1
    # augment is the same function in both variants: whatever its two verdicts, it never reads changed.
    assert body["stages"][2]["change"] != "changed", body["stages"][2]["change_reason"]


def test_results_being_written_are_read_as_far_as_they_go(diagnostic_logdir, make_tb_client, tmp_path):
    """A sweep still running: complete lines are served, a torn last line is
    dropped silently, and the file is read again once it grows."""
    full = (diagnostic_logdir / "diag_baseline" / RESULTS).read_bytes()
    lines = full.splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if b'"executor":"process"' in line)  # the thread curve of decode and more
    target = tmp_path / "logs" / "live" / RESULTS
    target.parent.mkdir(parents=True)
    target.write_bytes(b"".join(lines[:cut]) + lines[cut][: len(lines[cut]) // 2])
    client = make_tb_client(tmp_path / "logs")

    resp = _get(client, "diagnostic", run="live")
    assert resp.status_code == 200, resp.get_data(as_text=True)
    body = resp.get_json()
    assert not body["complete"] and body["cut_short"]
    assert any("no end record" in w for w in body["warnings"]) and not any("skipped" in w for w in body["warnings"])
    decode = body["stages"][0]
    assert [c["executor"] for c in decode["curves"]] == ["thread"] and decode["index"] is None
    expected = [json.loads(line) for line in lines[:cut] if b'"sweep"' in line]
    assert [p["qps"] for p in decode["curves"][0]["points"]] == pytest.approx([r["qps"] for r in expected])

    time.sleep(0.01)
    target.write_bytes(full)
    body = _get(client, "diagnostic", run="live").get_json()
    assert body["complete"] and [s["stage"] for s in body["stages"]] == ["decode", "fetch", "augment"]


def test_corrupt_results_give_warnings_or_a_reason(diagnostic_logdir, make_tb_client, tmp_path):
    lines = (diagnostic_logdir / "diag_baseline" / RESULTS).read_bytes().splitlines(keepends=True)
    logs = tmp_path / "logs"
    cases = {
        "bad_middle_line": b"".join(lines[:3]) + b'{"type": "sweep", "stage": \n' + b"".join(lines[3:]),
        "garbage": b"\x00\xffnot json at all\n<html>\n",
        "empty": b"",
        "unknown_type": b'{"type": "bogus", "schema": 1}\n',
    }
    for run, data in cases.items():
        (logs / run / "diagnostic").mkdir(parents=True)
        (logs / run / RESULTS).write_bytes(data)
    client = make_tb_client(logs)

    resp = _get(client, "diagnostic", run="bad_middle_line")
    assert resp.status_code == 200, resp.get_data(as_text=True)
    body = resp.get_json()
    assert body["complete"] and any("line 4: skipped" in w for w in body["warnings"]), body["warnings"]
    assert len(body["stages"]) == 3

    for run, why in (("garbage", "line 1: skipped"), ("empty", "empty"), ("unknown_type", "line 1: skipped")):
        resp = _get(client, "diagnostic", run=run)
        assert resp.status_code == 422, (run, resp.get_data(as_text=True))
        assert "no diagnostic record could be read" in resp.get_json()["error"] and why in resp.get_json()["error"]
    # The diff of a readable and an unreadable side says which side failed.
    resp = _get(client, "diff/diagnostic", baseline="bad_middle_line", experimental="garbage")
    assert resp.status_code == 422 and "'garbage'" in resp.get_json()["error"]


def test_bad_requests(client, diagnostic_logdir, recorded_logdir, make_tb_client, tmp_path):
    assert client.get(f"{PLUGIN_PREFIX}/diagnostic").status_code == 400
    assert client.get(f"{PLUGIN_PREFIX}/diagnostic?run=../etc").status_code == 400
    assert client.get(f"{PLUGIN_PREFIX}/diff/diagnostic?baseline=diag_baseline").status_code == 400
    resp = client.get(f"{PLUGIN_PREFIX}/diagnostic?run=nope")
    assert resp.status_code == 404 and "unknown run" in resp.get_json()["error"]
    # A trace-only run: 404 saying how to record diagnostic results; its trace routes are unaffected.
    logs = tmp_path / "logs"
    shutil.copytree(recorded_logdir / "baseline", logs / "traced")
    shutil.copytree(diagnostic_logdir / "diag_baseline" / "diagnostic", logs / "both" / "diagnostic")
    shutil.copytree(recorded_logdir / "baseline", logs / "both", dirs_exist_ok=True)
    other = make_tb_client(logs)
    resp = other.get(f"{PLUGIN_PREFIX}/diagnostic?run=traced")
    assert resp.status_code == 404 and "TB_PIPELINE_DIAGNOSTIC_MODE" in resp.get_json()["error"]
    kinds = {r["name"]: r["kinds"] for r in other.get(f"{PLUGIN_PREFIX}/runs").get_json()["runs"]}
    assert kinds == {"traced": ["trace"], "both": ["trace", "diagnostic"]}
    assert _get(other, "diagnostic", run="both").status_code == 200
