"""The parse cache keeps the operators' input types (`input_type_id`,
issue 45), and an entry written before that column existed (format 2) is
refused, so that it is parsed again rather than served without it."""
from __future__ import annotations

import json
import zlib

import numpy as np
import pytest

from tb_pipeline_plugin.trace import decode_trace, persist
from tb_pipeline_plugin.trace.link import link


def _doc() -> bytes:
    ops = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10.0 * i, "dur": 5.0,
            "args": {"External id": i, "Input type": ["c10::BFloat16" if i % 2 else "float", "float"],
                     "Input Dims": [[2, 3], [3, 4]]}} for i in range(6)]
    return json.dumps({"traceEvents": ops}).encode()


def test_a_persisted_trace_keeps_its_input_types(tmp_path):
    linked = link(decode_trace(_doc()))
    t = linked.table
    assert t.names(t.input_type_id).tolist() == ['["float", "float"]', '["c10::BFloat16", "float"]'] * 3
    persist.save_linked(linked, str(tmp_path))
    back = persist.load_linked(str(tmp_path)).table
    assert np.array_equal(back.input_type_id, t.input_type_id) and back.input_type_id.dtype == np.int32
    assert back.names(back.input_type_id).tolist() == t.names(t.input_type_id).tolist()


def test_an_entry_of_the_format_before_is_refused(tmp_path):
    assert persist.PARSER_VERSION.startswith("3-")
    persist.save_linked(link(decode_trace(_doc())), str(tmp_path))
    path = tmp_path / persist.MANIFEST
    body = json.loads(json.loads(path.read_text())["body"])
    # As format 2 wrote it: another parser version, and no input-type column.
    body["parser"] = "2-" + persist.PARSER_VERSION.split("-", 1)[1]
    body["tree"]["fields"]["table"]["fields"].pop("input_type_id")
    text = json.dumps(body)
    path.write_text(json.dumps({"crc32": zlib.crc32(text.encode()), "body": text}))
    with pytest.raises(persist.CorruptEntry, match="written by parser 2-"):
        persist.load_linked(str(tmp_path))
