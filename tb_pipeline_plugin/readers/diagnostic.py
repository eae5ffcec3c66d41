"""Reader for diagnostic-mode results: `{run_dir}/diagnostic/diagnostic.jsonl`.

Tolerant: a torn last line (the writer was killed mid-write, or is still
writing) is dropped silently; any other undecodable line, an unknown record
type or a newer schema version is skipped with a warning naming the line.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from ..formats import diagnostic as fmt

_DECODER = msgspec.json.Decoder(fmt.Record)


@dataclass
class DiagnosticRun:
    path: Path
    records: list = field(default_factory=list)  # formats.diagnostic Structs, in file order
    warnings: list = field(default_factory=list)
    complete: bool = False  # the End record was written
    cut_short: bool = False  # the sweep was stopped early (Ctrl-C, time limit) or never finished
    torn_tail: bool = False  # the last line was incomplete and dropped


def results_path(run_dir: str | os.PathLike) -> Path:
    return Path(run_dir) / fmt.DIAGNOSTIC_DIR / fmt.RESULTS_FILE


def read_diagnostic(path: str | os.PathLike) -> DiagnosticRun:
    """`path`: the results file, a run directory holding diagnostic/, or that
    diagnostic/ directory itself.

    Raises FileNotFoundError when there is no results file."""
    path = Path(path)
    if path.is_dir():
        direct = path / fmt.RESULTS_FILE
        path = direct if direct.is_file() else results_path(path)
    return parse_diagnostic(path.read_bytes(), path)


def parse_diagnostic(data: bytes, path: str | os.PathLike) -> DiagnosticRun:
    """The records of a results file's bytes, however they were read (the
    server reads them through the logdir's filesystem layer: gs://, s3://)."""
    path = Path(path)
    run = DiagnosticRun(path)
    lines = data.split(b"\n")
    last_index = len(lines) - 1
    if lines and lines[-1] == b"":
        lines.pop()
        last_index = len(lines) - 1
        ends_with_newline = True
    else:
        ends_with_newline = False
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:
            record = _DECODER.decode(raw)
        except msgspec.DecodeError as exc:
            if i == last_index and not ends_with_newline:
                run.torn_tail = True
                continue
            run.warnings.append(f"{path.name} line {i + 1}: skipped ({exc})")
            continue
        if record.schema > fmt.SCHEMA_VERSION:
            run.warnings.append(f"{path.name} line {i + 1}: schema {record.schema} is newer than "
                                f"{fmt.SCHEMA_VERSION}; read as far as understood")
        run.records.append(record)
    ends = [r for r in run.records if isinstance(r, fmt.End)]
    run.complete = bool(ends)
    run.cut_short = (ends[-1].cut_short if ends else True)
    if not run.records or not isinstance(run.records[0], fmt.Environment):
        run.warnings.append(f"{path.name}: no environment record first; core count unknown")
    if not ends:
        run.warnings.append(f"{path.name}: no end record: the sweep is still running or was killed")
    return run
