"""Run user scripts under TB_PIPELINE_DIAGNOSTIC_MODE=1 exactly as a user
would, with no code change: a sitecustomize on PYTHONPATH calls
tb_pipeline_plugin.diagnose.hooks.install() at interpreter start (what the
launcher's auto-hook does), and the env vars say where to write."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).resolve().parents[1] / "diagnose_scripts"
SHIM = "from tb_pipeline_plugin.diagnose import hooks\nhooks.install()\n"


def diagnostic_env(tmp_path: Path, run: str, **options) -> dict:
    shim = tmp_path / "shim"
    shim.mkdir(exist_ok=True)
    (shim / "sitecustomize.py").write_text(SHIM)
    env = dict(os.environ)
    env.update({
        "PYTHONPATH": os.pathsep.join([str(shim), str(REPO_ROOT), str(SCRIPTS)]),
        "TB_PIPELINE_DIAGNOSTIC_MODE": "1",
        "TB_PIPELINE_LOGDIR": str(tmp_path / "logs"),
        "TB_PIPELINE_RUN": run,
        "PYTHONUNBUFFERED": "1",
    })
    env.update({f"TB_PIPELINE_DIAGNOSTIC_{k.upper()}": str(v) for k, v in options.items()})
    return env


def run_script(script: str, env: dict, timeout_s: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPTS / script)], env=env, capture_output=True, text=True,
                          timeout=timeout_s, cwd=str(REPO_ROOT))
