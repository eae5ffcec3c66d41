"""import_hook.when_imported, the leaf record/ and diagnose/ patch through."""
from __future__ import annotations

import sys

from tb_pipeline_plugin.import_hook import when_imported


def _module(tmp_path, monkeypatch, name: str):
    (tmp_path / f"{name}.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)


def test_runs_right_after_the_first_import_only(tmp_path, monkeypatch):
    _module(tmp_path, monkeypatch, "tb_hook_probe_later")
    seen = []
    when_imported("tb_hook_probe_later", lambda m: seen.append(m.VALUE))
    assert seen == [] and "tb_hook_probe_later" not in sys.modules  # nothing imported on our behalf
    import tb_hook_probe_later  # noqa: F401
    assert seen == [1]
    del sys.modules["tb_hook_probe_later"]
    import tb_hook_probe_later  # noqa: F401,F811
    assert seen == [1]


def test_runs_at_once_when_already_imported(tmp_path, monkeypatch):
    _module(tmp_path, monkeypatch, "tb_hook_probe_now")
    import tb_hook_probe_now  # noqa: F401
    seen = []
    when_imported("tb_hook_probe_now", lambda m: seen.append(m.__name__))
    assert seen == ["tb_hook_probe_now"]
