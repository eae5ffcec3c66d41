"""The DataLoader iterator `tb-pipeline record` hands an unmodified script is, to the script, the loader's own:
`isinstance(it, _BaseDataLoaderIter)`, and the attributes and methods code reads from it (`_num_yielded`,
`_dataset`, `_num_workers`, `_index_sampler`, `_next_index`) are the real iterator's. A real script checks
them under the launcher, with worker processes and with --headspace, and its steps are still recorded."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tb_pipeline_plugin.analysis.statistics.report import report
from tb_pipeline_plugin.readers import load_pipeline_run

REPO = Path(__file__).resolve().parents[2]
BATCHES = 6

SCRIPT = textwrap.dedent(f"""
    import sys, torch
    from torch.utils.data import DataLoader, TensorDataset
    from torch.utils.data.dataloader import _BaseDataLoaderIter

    workers = int(sys.argv[1])
    dataset = TensorDataset(torch.arange({BATCHES} * 4, dtype=torch.float32).reshape(-1, 1))
    loader = DataLoader(dataset, batch_size=4, num_workers=workers)
    it = iter(loader)
    assert isinstance(it, _BaseDataLoaderIter), type(it).__mro__
    assert type(it).__module__ != "torch.utils.data.dataloader", "the launcher's hooks are not installed"
    assert it._dataset is dataset and it._num_workers == workers and len(it) == {BATCHES}
    assert it._num_yielded == 0
    assert list(it._index_sampler) == [[4 * b + i for i in range(4)] for b in range({BATCHES})]
    seen = []
    for n, (batch,) in enumerate(it, start=1):
        seen.append(int(batch[0, 0]))
        if workers == 0 and n < {BATCHES}:
            # Not cached by --headspace: the real iterator counted the batch.
            assert it._num_yielded >= 1
    assert it._num_yielded >= 1
    it._num_yielded = 0  # written through to the real iterator, as resumable loaders do
    assert it._num_yielded == 0
    print("CHECKED", type(it).__name__, seen)
""")


def _launch(tmp_path: Path, run: str, workers: int, *extra: str) -> str:
    script = tmp_path / "check_iterator.py"
    script.write_text(SCRIPT)
    cmd = [sys.executable, "-m", "tb_pipeline_plugin.cli", "record", "--logdir", str(tmp_path / "logs"), "--run", run,
           *extra, "--", sys.executable, str(script), str(workers)]
    done = subprocess.run(cmd, env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.parametrize("workers, extra, steps", [
    (0, (), BATCHES),
    (2, (), BATCHES),
    (0, ("--headspace", "2"), BATCHES - 2),  # the two cache-filling steps are left out
])
def test_wrapped_iterator_is_the_loaders_own(tmp_path, workers, extra, steps):
    out = _launch(tmp_path, "run", workers, *extra)
    checked = next(line for line in out.splitlines() if line.startswith("CHECKED"))
    if not extra:
        assert checked.endswith(str([4 * b for b in range(BATCHES)]))
    split = report(load_pipeline_run(str(tmp_path / "logs" / "run")))["split"]
    # Every batch is a step: the slow first ones (worker start-up) are counted as warm-up.
    assert split["steps"] + split["warmup_steps"] + split["epilogue_steps"] == steps
