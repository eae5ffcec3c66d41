"""The README as a newcomer reads it: its recording snippet runs as written
(the Recorder's signature included), every file it links or shows exists, and
the sentence it quotes is the one its overview picture shows."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()

# What the snippet leaves to the user: a loader, a step, a logger.
PRELUDE = """
import torch
from torch.utils.data import DataLoader
loader = DataLoader(list(zip(torch.randn(64, 8), torch.randn(64, 1))), batch_size=8)
model = torch.nn.Linear(8, 1)
def train_step(x, y):
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    return loss
def log(loss):
    pass
"""


def test_the_in_code_recording_snippet_runs_as_written(tmp_path):
    snippet = re.search(r"### Or in your code\n\n```python\n(.*?)```", README, re.S)
    assert snippet, "README lost its 'Or in your code' snippet"
    script = tmp_path / "train.py"
    script.write_text(PRELUDE + snippet[1])
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = tmp_path / "runs" / "baseline"
    [trace] = run.glob("*.pt.trace.json")
    # schedule(wait=1, warmup=1, active=3): three profiled steps, stepped by the Recorder.
    assert trace.read_text().count('"name": "ProfilerStep#') == 3
    assert list((run / "pipeline").glob("*.jsonl")), sorted(p.name for p in run.rglob("*"))


def test_every_linked_file_and_picture_exists():
    targets = re.findall(r"\]\(((?!https?:)[^)#\s]+)", README)
    assert targets and any(t.startswith("docs/screenshots/") for t in targets)
    missing = [t for t in targets if not (REPO / t).exists()]
    assert not missing, missing


def test_the_quoted_sentence_is_the_one_the_overview_picture_shows():
    from support.readme_quote import quoted, read_both

    # Both read now: tests/e2e/test_e2e_demo.py may have rewritten them since this module read the README.
    readme, sentence = read_both()
    said = quoted(readme)
    assert said, "README lost its quote of the demo's sentence (or its markers)"
    # Written with docs/screenshots/overview.png by tests/e2e/test_e2e_demo.py, from one demo run.
    assert said == " ".join(sentence.split())
    assert "per step" in said  # the explanation's form: how much slower or faster per step, and why
