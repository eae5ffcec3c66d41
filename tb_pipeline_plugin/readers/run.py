"""Find and read a run's pipeline statistics: our JSONL under
`{run}/pipeline/`, else Composer's traces in the run directory or the
folders below it (Composer's layout: `{run}/traces/`, `{run}/composer_traces/`, ...)."""
from __future__ import annotations

import glob
import os

from ..formats.pipeline import FILE_SUFFIX, PIPELINE_DIR
from .composer import composer_kind, read_composer_traces, statistics_files
from .jsonl import JsonlTail
from .records import tables_from_records
from .tables import PipelineTables

_KINETO_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz")
_COMPOSER_DEPTH = 2


def find_pipeline_sources(run_dir: str) -> dict:
    """{"jsonl": [files], "composer": {file: "rank" or "merged"}}: what this run directory holds."""
    jsonl = sorted(glob.glob(os.path.join(run_dir, PIPELINE_DIR, "*" + FILE_SUFFIX)))
    composer = {}
    for depth in range(_COMPOSER_DEPTH + 1):
        pattern = os.path.join(run_dir, *(["*"] * depth), "*.json")
        for path in sorted(glob.glob(pattern)):
            if not path.endswith(_KINETO_SUFFIXES) and os.sep + PIPELINE_DIR + os.sep not in path:
                kind = composer_kind(path)
                if kind is not None:
                    composer[path] = kind
    return {"jsonl": jsonl, "composer": composer}


class PipelineReader:
    """Keeps one JsonlTail per file, so re-reading a growing run only decodes
    what was appended since the last call."""

    def __init__(self, run_dir: str):
        self.run_dir = run_dir
        self._tails: dict[str, JsonlTail] = {}

    def read(self) -> PipelineTables | None:
        sources = find_pipeline_sources(self.run_dir)
        if sources["jsonl"]:
            warnings: list[str] = []
            records: list = []
            for path in sources["jsonl"]:
                tail = self._tails.setdefault(path, JsonlTail(path))
                try:
                    tail.update()
                except ValueError as exc:
                    warnings.append(str(exc))
                records.extend(tail.records)
                warnings.extend(tail.warnings)
            return tables_from_records(records, warnings)
        if sources["composer"]:
            paths, note = statistics_files(sources["composer"])
            tables = read_composer_traces(paths)
            if note:
                tables.warnings.append(note)
            return tables
        return None


def load_pipeline_run(run_dir: str) -> PipelineTables | None:
    """The run's statistics, or None when it has none (a trace-only run: see
    analysis.statistics.from_trace.steps_from_trace for its data-wait split).
    Damaged JSONL lines become warnings; a Composer trace that cannot be
    decoded at all raises ValueError naming the file."""
    return PipelineReader(run_dir).read()
