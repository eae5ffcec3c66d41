"""A message about a missing optional package names our extra (setup.py's extras_require), which installs the
version we test against, never the bare package. Absence is made by hiding the installed package from import
(`sys.modules[name] = None`, Python's own way to block an import) or from the PATH."""
from __future__ import annotations

import ast
import re
import shutil
import sys
from pathlib import Path

import pytest

from tb_pipeline_plugin import cli
from tb_pipeline_plugin.diagnose import gil_sampler
from tb_pipeline_plugin.errors import MissingExtra
from tb_pipeline_plugin.record.recorder import Recorder

REPO = Path(__file__).resolve().parents[2]
EXTRAS = {extra for node in ast.walk(ast.parse((REPO / "setup.py").read_text()))
          if isinstance(node, ast.keyword) and node.arg == "extras_require"
          for extra in ast.literal_eval(node.value)}
OURS = re.compile(r'pip install "tb_pipeline_plugin\[(\w+)\]"')


def test_every_install_hint_in_the_sources_names_an_extra():
    sources = [*(REPO / "tb_pipeline_plugin").rglob("*.py"), *(REPO / "frontend" / "src").rglob("*.ts*")]
    for path in sources:
        if "generated" in path.parts:
            continue
        for line in path.read_text().splitlines():
            if "pip install" in line and "[{extra}]" not in line:  # but install_hint itself
                hint = OURS.search(line)
                assert hint is not None and hint.group(1) in EXTRAS, f"{path}: {line.strip()}"


def _says_extra(text: str, extra: str) -> None:
    assert f'pip install "tb_pipeline_plugin[{extra}]"' in text and extra in EXTRAS, text


def test_py_spy_missing_names_the_diagnose_extra(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert shutil.which("py-spy") is None
    _says_extra(gil_sampler.why_no_gil_sampling(), "diagnose")


def test_recorder_features_name_their_extras(tmp_path, monkeypatch):
    rec = Recorder(str(tmp_path), "run", host_interval_s=None)
    try:
        monkeypatch.setitem(sys.modules, "spdl.pipeline", None)
        with pytest.raises(MissingExtra) as spdl:
            rec.record_spdl()
        _says_extra(str(spdl.value), "spdl")
        monkeypatch.setitem(sys.modules, "torch.profiler", None)
        with pytest.raises(MissingExtra) as torch:
            rec.trace_handler()
        _says_extra(str(torch.value), "record")
    finally:
        rec.close()


def test_summarize_on_a_cluster_without_dask_names_the_cluster_extra(tmp_path, monkeypatch, capsys):
    run = tmp_path / "logs" / "run"
    run.mkdir(parents=True)
    [src] = (REPO / "tests" / "data" / "transformers" / "baseline").glob("*.pt.trace.json")
    shutil.copy(src, run / src.name)
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    code = cli.main(["summarize", str(tmp_path / "logs"), "--scheduler", "tcp://127.0.0.1:1",
                     "--cache-dir", str(tmp_path / "cache")])
    assert code == cli.EXIT_USAGE
    _says_extra(capsys.readouterr().err, "cluster")
