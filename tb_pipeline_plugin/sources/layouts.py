"""Training jobs that write their profiler output into folders of their run directory, read as one run.

Composer's `Profiler` writes its own events through `JSONTraceHandler` into one folder (default
`{run_name}/traces`; users set `composer_traces`, `profiler_traces`, ...) and the torch profiler's traces into
another (`torch_prof_folder`, default `{run_name}/torch_traces`, files `rank{rank}.{batch}.pt.trace.json`).
Each folder alone looks like a run of its own; the job is their parent directory. Discovery (`logdir.py`) asks
`folds_into_parent` which data folders below a directory belong to it.

Only folders whose evidence is Composer's are joined (a folder of Composer traces, the torch traces beside or
below one, or a torch folder named and filled as Composer's defaults), and only when nothing else below the
directory holds data: a logdir of several plain runs, or a group of recordings, keeps its runs.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

COMPOSER_TORCH_FOLDER = "torch_traces"
COMPOSER_TORCH_FILE = re.compile(r"^rank\d+\.\d+\.pt\.trace\.json(\.gz)?$")
# A lone Composer trace folder (no torch traces beside it) is an output folder,
# not the job, when its name says so (`traces`, `composer_traces`, `profiler`).
_OUTPUT_FOLDER_NAME = re.compile(r"trace|prof", re.IGNORECASE)


@dataclass(frozen=True)
class Folder:
    """What discovery saw in one data folder directly below a directory."""

    name: str
    composer_files: int  # Composer traces (pipeline statistics)
    kineto_files: list[str]  # *.pt.trace.json[.gz] names
    other_data: bool  # our statistics, diagnostic results, other traces, a group manifest


def _is_composer_folder(f: Folder) -> bool:
    return f.composer_files > 0 and not f.kineto_files and not f.other_data


def _is_torch_folder(f: Folder) -> bool:
    return bool(f.kineto_files) and not f.composer_files and not f.other_data


def folds_into_parent(parent_has_composer: bool, children: list[Folder]) -> list[str]:
    """Names of the folders below a directory that are parts of its run (empty: each stays a run of its own)."""
    composer = [f for f in children if _is_composer_folder(f)]
    torch = [f for f in children if _is_torch_folder(f)]
    if len(composer) + len(torch) != len(children) or len(composer) > 1 or len(torch) > 1:
        return []
    if composer and (torch or _OUTPUT_FOLDER_NAME.search(composer[0].name)):
        return [f.name for f in composer + torch]
    if torch and (parent_has_composer or _composer_torch_defaults(torch[0])):
        return [torch[0].name]
    return []


def _composer_torch_defaults(f: Folder) -> bool:
    return f.name == COMPOSER_TORCH_FOLDER and all(COMPOSER_TORCH_FILE.match(n) for n in f.kineto_files)
