"""python -m tb_pipeline_plugin.diagnose module:factory [options]

`factory()` returns (stages, source) or {"stages": ..., "source": ...}, where
stages are (name, fn) pairs or Stage objects. Exit status: 0 when the sweep
finished, 3 when it was cut short (Ctrl-C, SIGTERM, --time-limit-s), 2 on bad usage.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import time

from . import diagnose
from .env_options import options_from_env
from .session import DEFAULT_LEVELS


def _load(spec: str):
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"expected module:factory, got {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # like `python -m`, find the user's modules here
    factory = getattr(importlib.import_module(module_name), attr)
    made = factory()
    if isinstance(made, dict):
        return made["stages"], made["source"]
    stages, source = made
    return stages, source


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tb_pipeline_plugin.diagnose", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("factory", help="module:function returning (stages, source)")
    parser.add_argument("--logdir", help="default: $TB_PIPELINE_LOGDIR or ./tb_pipeline_logs")
    parser.add_argument("--run", help="run name; default: $TB_PIPELINE_RUN or <module>-<time>")
    parser.add_argument("--out-dir", help="write diagnostic.jsonl here instead of {logdir}/{run}/diagnostic")
    parser.add_argument("--levels", type=_ints,
                        help=f"concurrency levels (default {','.join(map(str, DEFAULT_LEVELS))})")
    parser.add_argument("--executors", type=lambda t: t.split(","), help="thread,process (default both)")
    parser.add_argument("--duration-s", type=float, help="measured seconds per level (default 2)")
    parser.add_argument("--warmup-s", type=float, help="warm-up seconds per level (default 0.3)")
    parser.add_argument("--max-items", type=int, help="stop a level after this many calls (default: time only)")
    parser.add_argument("--num-inputs", type=int, help="source items to cache (default 256)")
    parser.add_argument("--time-limit-s", type=float,
                        help="the sweep's time budget, shared among the stages (default 180; 0: none)")
    parser.add_argument("--memory-limit-bytes", type=int,
                        help="memory the sweep may use (default: what the machine has free)")
    parser.add_argument("--no-gil", action="store_true", help="skip py-spy GIL sampling")
    parser.add_argument("--start-method", choices=["fork", "spawn", "forkserver"],
                        help="how worker processes start (default fork where available)")
    args = parser.parse_args(argv)
    try:
        options = options_from_env()
        for key in ("levels", "executors", "duration_s", "warmup_s", "max_items", "num_inputs", "time_limit_s",
                    "start_method", "memory_limit_bytes"):
            if getattr(args, key) is not None:
                options[key] = getattr(args, key)
        if args.no_gil:
            options["gil"] = False
        stages, source = _load(args.factory)
    except (ValueError, ImportError, AttributeError, TypeError) as exc:
        print(f"diagnose: {exc}", file=sys.stderr)
        return 2
    out_dir = args.out_dir
    if out_dir is None:
        from ..formats.diagnostic import DIAGNOSTIC_DIR
        logdir = args.logdir or os.environ.get("TB_PIPELINE_LOGDIR") or "tb_pipeline_logs"
        run = args.run or os.environ.get("TB_PIPELINE_RUN") or \
            f"{args.factory.partition(':')[0].rpartition('.')[2]}-{time.strftime('%Y%m%d-%H%M%S')}"
        out_dir = os.path.join(logdir, run, DIAGNOSTIC_DIR)
    try:
        result = diagnose(stages, source, out_dir=out_dir, source_label="cli", **options)
    except (ValueError, TypeError) as exc:
        print(f"diagnose: {exc}", file=sys.stderr)
        return 2
    return 3 if result.cut_short else 0


if __name__ == "__main__":
    sys.exit(main())
