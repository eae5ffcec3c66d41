"""Decoding Kineto / Chrome traces into a columnar EventTable."""
from .decode import decode_trace, load_trace
from .table import EventTable, Kind

__all__ = ["EventTable", "Kind", "decode_trace", "load_trace"]
