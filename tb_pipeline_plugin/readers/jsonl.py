"""Tolerant reader of statistics files that may still be being written.

A file is read from the last complete line onwards on every `update()`, so
polling a growing file costs only its new bytes. A last line without its
newline is a record being written: it is left for the next update, never
reported. A damaged line elsewhere is skipped with its line number in
`warnings`; records of unknown type, unknown fields and newer schema
versions are read as far as they are understood, with a warning. Lines in
SPDL's own stats shape (`"kind": "task" | "queue"`) are read too (spdl_jsonl).
"""
from __future__ import annotations

import os
from collections import Counter, defaultdict

import msgspec

from ..formats.pipeline import RECORD_TYPES, SCHEMA_VERSION, Record
from ..struct_types import built
from . import spdl_jsonl

_FAST = msgspec.json.Decoder(list[Record])
_LINE = msgspec.json.Decoder()
_MAX_LINES_LISTED = 5
_FIELDS = {tag: set(cls.__struct_fields__) | {"type"} for tag, cls in RECORD_TYPES.items()}


class JsonlTail:
    def __init__(self, path: str):
        self.path = path
        self.records: list = []
        self._offset = 0
        self._lines = 0  # complete lines consumed
        self._bad: dict[str, list[int]] = defaultdict(list)
        self._unknown_types: Counter = Counter()
        self._unknown_fields: Counter = Counter()
        self._newer = 0

    def update(self) -> int:
        """Reads what was appended since the last call; returns the number of
        new records. A file that shrank (rewritten) is read again from the start."""
        try:
            size = os.path.getsize(self.path)
        except OSError as exc:
            raise ValueError(f"cannot read {self.path}: {exc.strerror}") from None
        if size < self._offset:
            self.__init__(self.path)
        with open(self.path, "rb") as f:
            f.seek(self._offset)
            data = f.read()
        end = data.rfind(b"\n") + 1  # 0 when no complete line yet
        if not end:
            return 0
        lines = data[:end].split(b"\n")[:-1]
        first_line = self._lines + 1
        self._offset += end
        self._lines += len(lines)
        before = len(self.records)
        self._decode(lines, first_line)
        return len(self.records) - before

    def _decode(self, lines: list[bytes], first_line: int) -> None:
        body = [ln for ln in lines if ln.strip()]
        if not body:
            return
        try:
            self.records.extend(_FAST.decode(b"[" + b",".join(body) + b"]"))
            self._check_versions(len(body))
            return
        except (msgspec.DecodeError, msgspec.ValidationError):
            pass
        for i, line in enumerate(lines):
            if line.strip():
                self._decode_line(line, first_line + i)

    def _check_versions(self, n: int) -> None:
        for rec in self.records[-n:]:
            if rec.schema > SCHEMA_VERSION:
                self._newer += 1

    def _decode_line(self, line: bytes, number: int) -> None:
        try:
            raw = _LINE.decode(line)
        except msgspec.DecodeError:
            self._bad["not valid JSON"].append(number)
            return
        if isinstance(raw, dict) and "type" not in raw and "kind" in raw:
            self._decode_spdl(raw, number)
            return
        if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
            self._bad['not a record (a JSON object with a "type")'].append(number)
            return
        fields = _FIELDS.get(raw["type"])
        if fields is None:
            self._unknown_types[raw["type"]] += 1
            return
        extra = [k for k in raw if k not in fields]
        for k in extra:
            self._unknown_fields[f"{raw['type']}.{k}"] += 1
            del raw[k]
        try:
            rec = msgspec.convert(raw, built(Record))
        except msgspec.ValidationError as exc:
            self._bad[f"invalid {raw['type']} record ({exc})"].append(number)
            return
        if rec.schema > SCHEMA_VERSION:
            self._newer += 1
        self.records.append(rec)

    def _decode_spdl(self, raw: dict, number: int) -> None:
        if raw["kind"] not in spdl_jsonl.SPDL_KINDS:
            self._unknown_types[f"spdl {raw['kind']}"] += 1
            return
        try:
            self.records.append(spdl_jsonl.convert(raw))
        except (KeyError, TypeError, ValueError) as exc:
            self._bad[f"invalid SPDL {raw['kind']} stats ({exc!r})"].append(number)

    @property
    def warnings(self) -> list[str]:
        name = os.path.basename(self.path)
        out = []
        for reason, numbers in self._bad.items():
            shown = ", ".join(str(n) for n in numbers[:_MAX_LINES_LISTED])
            more = f" and {len(numbers) - _MAX_LINES_LISTED} more" if len(numbers) > _MAX_LINES_LISTED else ""
            out.append(f"{name}: line{'s' if len(numbers) > 1 else ''} {shown}{more} skipped: {reason}")
        if self._unknown_types:
            kinds = ", ".join(f"{k!r} ({n})" for k, n in self._unknown_types.most_common())
            out.append(f"{name}: records of unknown type ignored: {kinds}")
        if self._unknown_fields:
            fields = ", ".join(f"{k} ({n})" for k, n in self._unknown_fields.most_common())
            out.append(f"{name}: unknown fields ignored: {fields}")
        if self._newer:
            out.append(f"{name}: {self._newer} records use a newer schema than {SCHEMA_VERSION}; "
                       "fields this version does not know are ignored")
        return out
