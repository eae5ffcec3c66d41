"""The reports of `tb-pipeline diff` (tb_pipeline_plugin/report/) on recorded
pairs: every format of a pair recorded with torch.profiler, of a pair of
groups of recordings and of HTA's GPU pair, read back with a reader's tools
(markdown-it's tables, a JSON Schema validator, xml.etree); gates, exit
statuses, signs and words; what an inconclusive answer advises, checked
against the significance it describes. The demo pair in chromium and the
numbers of every format against the routes: tests/e2e/test_e2e_report.py."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import jsonschema_rs
import msgspec
import numpy as np
import pytest

from support.group_runs import recorded_groups, tb_client, get_ready
from support.report_parsing import html_tables, junit_cases, markdown_headings, markdown_tables
from tb_pipeline_plugin import cli
from tb_pipeline_plugin.diff.significance import conclusive
from tb_pipeline_plugin.diff.significance import method as S
from tb_pipeline_plugin.report import FORMATS, render
from tb_pipeline_plugin.report.json_format import decode
from tb_pipeline_plugin.report.model import Report
from tb_pipeline_plugin.report.words import headline, signed

GATES = ["--fail-if", "breakdown_us.data_loading>100", "--fail-if", "avg_step_time_us>1000000"]


def diff(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main(["diff", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def every_format(capsys, *argv) -> tuple[dict[str, str], set[int]]:
    outputs, codes = {}, set()
    for fmt in FORMATS:
        code, out, err = diff(capsys, *argv, "--format", fmt)
        assert "Traceback" not in err, err
        outputs[fmt], codes = out, codes | {code}
    return outputs, codes


def schema(repo_root) -> jsonschema_rs.Validator:
    return jsonschema_rs.validator_for(json.loads((repo_root / "docs" / "report.schema.json").read_text()))


def test_every_format_of_a_recorded_pair(capsys, recorded_logdir, repo_root):
    base, slow = str(recorded_logdir / "baseline"), str(recorded_logdir / "slow_loader")
    out, codes = every_format(capsys, base, slow, "--top", "4", *GATES)
    assert codes == {cli.EXIT_REGRESSION}  # the same exit status in every format

    data = json.loads(out["json"])
    schema(repo_root).validate(data)
    report = msgspec.convert(data, Report)
    # The loader's 20 ms sleep per batch: data loading far beyond +100 % whatever the machine's load
    # (the step time as a whole may still drown in a busy machine's noise: its verdict is not asserted).
    assert [(g.gate, g.outcome) for g in report.gates] == [
        ("breakdown_us.data_loading>100", "failed"), ("avg_step_time_us>1000000", "passed")]
    assert report.exit_status == cli.EXIT_REGRESSION

    # Text: the verdict, then the sentence; every gate's outcome, passed ones too.
    lines = out["text"].splitlines()
    assert lines[3] == headline(report) and lines[4] == report.sentence
    assert "REGRESSION: breakdown_us.data_loading changed +" in out["text"]
    assert "PASSED: avg_step_time_us changed +" in out["text"]

    # Markdown: the verdict is the first line; tables a parser reads; the marks explained once.
    md = out["markdown"]
    assert markdown_headings(md)[0] == lines[3]
    assert md.count("● significant · ≈ within noise · ? too few steps to judge") == 1
    tables = markdown_tables(md)
    gates = next(t for t in tables if t["header"][0] == "Gate")
    assert [(r[0], r[1]) for r in gates["rows"]] == [("breakdown_us.data_loading>100", "REGRESSION"),
                                                      ("avg_step_time_us>1000000", "PASSED")]
    contributors = next(t for t in tables if t["rows"] and t["rows"][0][0] == "Step time")
    assert len(contributors["rows"]) == 1 + len(report.contributors) == 5
    assert [r[0] for r in contributors["rows"][1:]] == [c.name for c in report.contributors]
    assert {t["title"].split(" (")[0] for t in tables if t["title"]} >= {
        "Overview", "Waterfall: from the baseline's step to the experimental's", "Step times of the profiled steps"}
    assert md.count("<details>") == md.count("</details>")

    # JUnit: the verdict's case, passing, then one case per gate, the tripped one a failure with its numbers.
    root, cases = junit_cases(out["junit"])
    assert root.get("tests") == "3" and root.get("failures") == "1" and root.get("errors") == "0"
    verdict, failed, passed = cases
    assert verdict["classname"] == "tb_pipeline.verdict" and verdict["failure"] is None and verdict["error"] is None
    assert verdict["out"].splitlines()[:2] == [headline(report), report.sentence]
    assert failed["failure"] is not None and failed["failure"].get("type") == "regression"
    assert "REGRESSION: breakdown_us.data_loading changed +" in failed["failure"].get("message")
    row = next(m for m in report.overview if m.name == "breakdown_us.data_loading")
    assert float(failed["properties"]["delta"]) == row.delta and float(failed["properties"]["delta_pct"]) == row.delta_pct
    assert signed(row.delta, "us") in failed["failure"].text
    assert passed["failure"] is None and passed["error"] is None and passed["properties"]["outcome"] == "passed"

    # HTML: one file, nothing to fetch, the sentence, both charts, the tables.
    page = out["html"]
    tables_html, text_of = html_tables(page)
    assert text_of["sentence"] == report.sentence and text_of["verdict"] == lines[3]
    assert page.count("<svg") == 2 and "http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'" in page
    assert not any(f'{attr}="http' in page for attr in ("src", "href"))
    assert {"gates-table", "contributors-table", "overview-table", "operators-table"} <= set(tables_html)


def test_a_gate_that_cannot_be_evaluated_is_an_error_in_every_format(capsys, recorded_logdir):
    base, exp = str(recorded_logdir / "baseline"), str(recorded_logdir / "experimental")
    out, codes = every_format(capsys, base, exp, "--fail-if", "gpu_utilization_pct<-10")
    assert codes == {cli.EXIT_CANNOT_EVALUATE}
    _, (verdict, gate) = junit_cases(out["junit"])
    assert verdict["error"] is None and verdict["failure"] is None
    assert gate["error"] is not None and gate["failure"] is None
    assert "CANNOT EVALUATE: --fail-if gpu_utilization_pct<-10" in out["text"]
    assert json.loads(out["json"])["gates"][0]["outcome"] == "cannot_evaluate"


def test_signs_and_words_agree(capsys, recorded_logdir):
    """A pair both ways round: the words flip with the signs, "slower" with
    +, "faster" with −, in the verdict of every format and in every Δ cell."""
    base, slow = str(recorded_logdir / "baseline"), str(recorded_logdir / "slow_loader")
    directions = []
    for pair in ((base, slow), (slow, base)):
        out, _ = every_format(capsys, *pair)
        report = decode(out["json"].encode())
        step, sig = report.step, report.step.significance
        sign = "+" if step.delta_us >= 0 else "−"
        directions.append(step.direction)
        assert step.direction == ("slower" if step.delta_us > 0 else "faster")
        verdict = out["text"].splitlines()[3]
        if sig.verdict == S.SIGNIFICANT:
            assert verdict.startswith(f"{step.direction.capitalize()}: {sign}")
        else:
            assert verdict.startswith(f"No significant change: {sign}")
        assert verdict == headline(report) == markdown_headings(out["markdown"])[0]
        assert f'data-direction="{step.direction}"' in out["html"]
        assert f'name="verdict" value="{verdict}"' in out["junit"]
        # Every Δ cell of the markdown: + exactly where the number is positive, − where negative.
        overview = next(t for t in markdown_tables(out["markdown"]) if (t["title"] or "").startswith("Overview"))
        for row, metric in zip(overview["rows"], report.overview, strict=True):
            if metric.delta:
                assert row[3][0] == ("+" if metric.delta > 0 else "−") and row[4][0] in "+−—", row
        step_line = next(line.split() for line in out["text"].splitlines() if line.startswith("avg_step_time_us "))
        assert step_line[4].startswith("-") == (step.delta_us < 0)
    assert sorted(directions) == ["faster", "slower"]


def test_an_inconclusive_answer_says_what_would_make_it_conclusive(capsys, recorded_logdir):
    base = str(recorded_logdir / "baseline")
    out, codes = every_format(capsys, base, base, "--fail-if", "avg_step_time_us>-1", "--require-significance")
    assert codes == {cli.EXIT_OK}
    report = decode(out["json"].encode())
    assert report.step.significance.verdict == S.WITHIN_NOISE and report.conclusive is not None
    advice = report.conclusive.text
    assert advice in out["text"] and advice in json.loads(out["json"])["conclusive"]["text"]
    assert "What would make it conclusive" in out["markdown"]
    assert html_tables(out["html"])[1]["conclusive"].endswith(advice)
    assert report.gates[0].outcome == "not_significant"
    assert "NOT SIGNIFICANT: avg_step_time_us changed +0.00%" in out["text"]


@pytest.mark.parametrize("spread", [4.0, 10.0])
def test_the_steps_advised_narrow_the_band_as_advised(spread, monkeypatch):
    """The advice checked against the significance it describes: runs whose
    steps spread by `spread` % around a 3 % slower mean are within noise at
    5 steps; at the steps advised the real bootstrap's band is under the
    delta, and at a third of them it is not."""
    monkeypatch.setenv(S.BETWEEN_RUN_ENV, "0.5")

    def runs(n: int):
        z = np.random.default_rng(7).standard_normal(n)
        z = (z - z.mean()) / z.std(ddof=1)  # exactly the spread asked for, at every n
        return 100.0 + spread * z, 103.0 + spread * z[::-1]

    def step(b, e) -> dict:
        sig = S.step_time(b, e, noise=S.NoisePolicy.from_environment())
        return {"baseline_us": b.mean(), "experimental_us": e.mean(), "delta_us": e.mean() - b.mean(),
                "significance": sig}

    b, e = runs(5)
    first = step(b, e)
    assert first["significance"]["verdict"] == S.WITHIN_NOISE
    advice = conclusive.advice(first, b, e)
    n = advice["steps_per_run"]
    assert advice["reason"] == conclusive.MORE_DATA and n > 5 and f"--profile active={n}" in advice["text"]
    assert S.half_width(step(*runs(n))["significance"]) < 3.0 * 1.05  # bootstrap quantiles: 5 % of play
    assert S.half_width(step(*runs(max(n // 3, 6)))["significance"]) > 3.0


def test_too_few_steps_and_out_of_reach():
    two = step_of(np.array([100.0, 101.0]), np.array([110.0, 111.0]))
    advice = conclusive.advice(two, None, None)
    assert advice["reason"] == conclusive.TOO_FEW_STEPS and advice["steps_per_run"] == S.MIN_STEPS
    assert f"at least {S.MIN_STEPS} steps per run (this pair has 2 vs 2)" in advice["text"]
    # A delta a thousandth of the assumed between-run spread: no amount of recording resolves it.
    b = np.array([100.0, 101.0, 99.0, 100.5, 99.5])
    same = step_of(b, b + 0.0001)
    assert conclusive.advice(same, b, b + 0.0001)["reason"] == conclusive.OUT_OF_REACH


def step_of(b, e) -> dict:
    return {"baseline_us": b.mean(), "experimental_us": e.mean(), "delta_us": e.mean() - b.mean(),
            "significance": S.step_time(b, e, noise=S.NoisePolicy.from_environment())}


def test_the_report_schema_is_up_to_date(repo_root):
    done = subprocess.run([sys.executable, "-m", "tb_pipeline_plugin.report.schema", "--check"], cwd=repo_root,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_saved_report_renders_as_the_diff_does(capsys, recorded_logdir, tmp_path):
    base, slow = str(recorded_logdir / "baseline"), str(recorded_logdir / "slow_loader")
    saved = tmp_path / "report.json"
    code, _, err = diff(capsys, base, slow, *GATES, "--format", "json", "--output", str(saved))
    assert code == cli.EXIT_REGRESSION and f"wrote {saved}" in err
    report = decode(saved.read_bytes())
    for fmt in FORMATS:
        assert cli.main(["report", str(saved), "--format", fmt]) == cli.EXIT_OK
        assert capsys.readouterr().out == render(report, fmt)
    # What is not a report: exit 2 with the reason, never a traceback.
    (tmp_path / "other.json").write_text('{"report_version": 99}')
    for bad, why in ((tmp_path / "other.json", "not a tb-pipeline report of version 1"),
                     (tmp_path / "missing.json", "No such file")):
        assert cli.main(["report", str(bad)]) == cli.EXIT_USAGE
        assert why in capsys.readouterr().err
    (tmp_path / "broken.json").write_text(saved.read_text()[:-40])
    assert cli.main(["report", str(tmp_path / "broken.json")]) == cli.EXIT_USAGE
    assert "not JSON" in capsys.readouterr().err
    # An --output that cannot be written: exit 2, the reason.
    code, _, err = diff(capsys, base, slow, "--format", "html", "--output", str(tmp_path / "no" / "such" / "r.html"))
    assert code == cli.EXIT_USAGE and "tb-pipeline: error:" in err and "Traceback" not in err


def test_kernels_of_a_gpu_pair_are_the_routes(capsys, shared_traces, tmp_path, make_tb_client):
    """HTA's V100 pair (CPU pairs have no kernels): the kernel rows of the
    report are the `diff/kernels` route's first rows, number for number."""
    logdir = tmp_path / "gpu"
    for run, name in (("control", "control.json.gz"), ("test", "test.json.gz")):
        (logdir / run).mkdir(parents=True)
        shutil.copy(shared_traces / "trace_diff" / name, logdir / run / name)
    code, out, _ = diff(capsys, str(logdir / "control"), str(logdir / "test"), "--top", "5", "--format", "json")
    report = decode(out.encode())
    route = get_ready(make_tb_client(logdir), "diff/kernels", baseline="control", experimental="test", limit=5)
    assert report.kernels.total == route["total"] and len(report.kernels.rows) == 5
    for mine, theirs in zip(report.kernels.rows, route["rows"]):
        assert (mine.name, mine.baseline_calls, mine.experimental_calls) == (
            theirs["name"], theirs["baseline_calls"], theirs["experimental_calls"])
        assert (mine.baseline_us, mine.experimental_us, mine.delta_us, mine.delta_pct) == (
            theirs["baseline_total_us"], theirs["experimental_total_us"], theirs["delta_total_us"],
            theirs["delta_total_pct"])
        assert msgspec.to_builtins(mine.significance) == theirs["significance"]
    assert report.device_present and report.operators.measure == "device_self_us"


# ------------------------------------------------------------------ groups of recordings

@pytest.fixture(scope="module")
def groups(tmp_path_factory):
    """Two groups of three recordings (tests/support/group_runs.py), the
    second's block 4x wider, laid out as `tb-pipeline record --repeat 3` leaves them: `base` and `wide` of the
    groups tests/diff/test_groups.py reads, recorded once (support/recordings.py); the others removed."""
    root = recorded_groups.copy_to(tmp_path_factory.mktemp("report_groups"))["_logdir"]
    for other in sorted(set(p.name for p in root.iterdir() if p.is_dir()) - {"base", "wide"}):
        shutil.rmtree(root / other)
    return root


def test_every_format_of_a_group_pair(capsys, groups, repo_root):
    out, codes = every_format(capsys, str(groups / "base"), str(groups / "wide"), "--fail-if", "avg_step_time_us>5",
                              "--require-significance")
    data = json.loads(out["json"])
    schema(repo_root).validate(data)
    report = msgspec.convert(data, Report)
    sig = report.step.significance
    assert (report.baseline.recordings, report.experimental.recordings) == (3, 3)
    assert report.noise.source == "measured" and "measured across 3 + 3 recordings" in report.noise.note
    assert report.step_times.baseline_recording == sorted(report.step_times.baseline_recording)
    assert set(report.step_times.baseline_recording) == {1, 2, 3}
    assert len(report.step_times.baseline_us) == sig.baseline_steps
    failed = report.gates[0].outcome == "failed"
    assert codes == {cli.EXIT_REGRESSION if failed else cli.EXIT_OK}
    if sig.verdict != S.SIGNIFICANT:  # then the advice speaks of recordings, measured
        assert report.conclusive.repeat is None or f"--repeat {report.conclusive.repeat}" in report.conclusive.text
    assert "3 + 3 recordings" in out["text"] and report.sentence in out["text"]
    tables = markdown_tables(out["markdown"])
    steps = next(t for t in tables if t["title"] == "Step times of the profiled steps")
    assert len(steps["rows"]) == max(len(report.step_times.baseline_us), len(report.step_times.experimental_us))
    _, cases = junit_cases(out["junit"])
    assert len(cases) == 2 and cases[0]["failure"] is None and (cases[1]["failure"] is not None) == failed
    assert html_tables(out["html"])[1]["sentence"] == report.sentence

    # The advice's samples are the verdict's own: judged again, they give the same verdict.
    from tb_pipeline_plugin.compare import compare

    (b, b_rec), (e, e_rec) = compare(groups / "base", groups / "wide").step_samples_us
    assert S.step_time(b, e, (b_rec, e_rec), noise=S.NoisePolicy.from_environment()) == msgspec.to_builtins(sig)

    # The routes name the groups as runs and answer the same step verdict and contributors.
    with tb_client(groups) as client:
        ex = get_ready(client, "diff/explain", baseline="base", experimental="wide")
    assert ex["sentence"] == report.sentence
    assert ex["step"]["significance"] == msgspec.to_builtins(sig)
    assert [c["delta_us"] for c in ex["contributors"][:report.top]] == [c.delta_us for c in report.contributors]


def test_the_readmes_ci_step_runs_as_written(recorded_logdir, repo_root, tmp_path):
    """README's "Compare and gate" step, under bash as GitHub Actions runs it
    (`-eo pipefail`), on a recorded pair: the job exits with the gate's
    verdict, the summary holds the markdown, the artifacts are there."""
    import os
    import re

    readme = (repo_root / "README.md").read_text()
    found = re.search(r"- name: Compare and gate\n(\s+)run: \|\n((?:\1  .*\n)+)", readme)
    assert found, "README lost its 'Compare and gate' step"
    script = "".join(line[len(found.group(1)) + 2:] + "\n" for line in found.group(2).splitlines())
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "baseline").symlink_to(recorded_logdir / "baseline")
    (tmp_path / "runs" / "experimental").symlink_to(recorded_logdir / "slow_loader")
    summary = tmp_path / "summary.md"
    env = dict(os.environ, GITHUB_STEP_SUMMARY=str(summary),
               PATH=os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]))
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    report = decode((tmp_path / "report.json").read_bytes())
    # Whether +5 % is beyond this machine's noise today is the recording's business: the job
    # exits with the gate's verdict, whichever it is, and every file says the same.
    assert done.returncode == report.exit_status == (1 if report.gates[0].outcome == "failed" else 0), done.stderr
    assert markdown_headings(summary.read_text())[0] == headline(report)
    assert html_tables((tmp_path / "report.html").read_text())[1]["sentence"] == report.sentence
    _, cases = junit_cases((tmp_path / "report.xml").read_text())
    assert [c["failure"] is not None for c in cases] == [False, report.exit_status == 1]


HOSTILE = ["<img src=x onerror=alert(1)>", "a|b *c* _d_ `e` [f](g) # h", "&amp; \\ ~"]


def _hostile_run(run_dir, op_us: float) -> None:
    """A one-step Chrome trace (the profiler's format) whose operators are
    named to break markdown tables and HTML."""
    run_dir.mkdir(parents=True)
    events = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0.0,
               "dur": 4000.0}]
    events += [{"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": 10.0 + i * 1000, "dur": op_us,
                "args": {"External id": i + 1}} for i, name in enumerate(HOSTILE)]
    trace = {"schemaVersion": 1, "deviceProperties": [], "traceEvents": events}
    (run_dir / "worker.1.pt.trace.json").write_text(json.dumps(trace))


def test_names_stay_text_and_one_step_is_inconclusive(capsys, tmp_path):
    _hostile_run(tmp_path / "a", 500.0)
    _hostile_run(tmp_path / "b", 800.0)
    out, codes = every_format(capsys, str(tmp_path / "a"), str(tmp_path / "b"), "--fail-if", "avg_step_time_us>-50",
                              "--require-significance")
    assert codes == {cli.EXIT_OK}  # one step a side: the gate trips but cannot be judged
    report = decode(out["json"].encode())
    assert report.step.significance.verdict == S.TOO_FEW_STEPS and report.gates[0].outcome == "not_significant"
    assert report.conclusive.reason == conclusive.TOO_FEW_STEPS
    assert out["text"].splitlines()[3].startswith(f"Inconclusive: +0 µs per step (+0.00 %), too few steps to judge "
                                                  f"(1 vs 1 steps; {S.MIN_STEPS} per run needed)")
    assert sorted(r.name for r in report.operators.rows) == sorted(HOSTILE)

    operators = next(t for t in markdown_tables(out["markdown"]) if t["title"] and "operators" in t["title"])
    assert sorted(r[0] for r in operators["rows"]) == sorted(HOSTILE)  # each name whole, in its own cell
    assert all(len(r) == len(operators["header"]) for r in operators["rows"])
    assert "<img" not in out["markdown"].replace("`<img src=x onerror=alert(1)>`", "")
    tables, _ = html_tables(out["html"])
    assert sorted(r[0]["text"] for r in tables["operators-table"][1:]) == sorted(HOSTILE)
    assert "<img" not in out["html"]
