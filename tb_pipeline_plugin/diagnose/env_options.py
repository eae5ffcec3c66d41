"""Sweep options from the command line or the TB_PIPELINE_DIAGNOSTIC_* environment."""
from __future__ import annotations

import os

from .session import DEFAULT_LEVELS

# env var -> (diagnose() keyword, parser)
ENV_OPTIONS = {
    "TB_PIPELINE_DIAGNOSTIC_LEVELS": ("levels", lambda v: [int(x) for x in v.replace(" ", "").split(",") if x]),
    "TB_PIPELINE_DIAGNOSTIC_EXECUTORS": ("executors", lambda v: [x for x in v.replace(" ", "").split(",") if x]),
    "TB_PIPELINE_DIAGNOSTIC_DURATION_S": ("duration_s", float),
    "TB_PIPELINE_DIAGNOSTIC_WARMUP_S": ("warmup_s", float),
    "TB_PIPELINE_DIAGNOSTIC_MAX_ITEMS": ("max_items", int),
    "TB_PIPELINE_DIAGNOSTIC_NUM_INPUTS": ("num_inputs", int),
    "TB_PIPELINE_DIAGNOSTIC_TIME_LIMIT_S": ("time_limit_s", float),
    "TB_PIPELINE_DIAGNOSTIC_GIL": ("gil", lambda v: v.strip().lower() not in ("0", "false", "no", "off")),
    "TB_PIPELINE_DIAGNOSTIC_GIL_DURATION_S": ("gil_duration_s", float),
    "TB_PIPELINE_DIAGNOSTIC_START_METHOD": ("start_method", str),
    "TB_PIPELINE_DIAGNOSTIC_MEMORY_LIMIT_BYTES": ("memory_limit_bytes", int),
}


def options_from_env(environ=os.environ) -> dict:
    """Keyword arguments for diagnose()/Session from the environment; a bad
    value raises ValueError naming the variable."""
    out = {}
    for name, (key, parse) in ENV_OPTIONS.items():
        value = environ.get(name)
        if value is None or value.strip() == "":
            continue
        try:
            out[key] = parse(value)
        except ValueError as exc:
            raise ValueError(f"{name}={value!r}: {exc}") from None
    return out


__all__ = ["ENV_OPTIONS", "options_from_env", "DEFAULT_LEVELS"]
