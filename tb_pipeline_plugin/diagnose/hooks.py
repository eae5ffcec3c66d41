"""TB_PIPELINE_DIAGNOSTIC_MODE=1: profile instead of training, no code change.

install() (called by the launcher's auto-hook, or by a sitecustomize) patches
- torch.utils.data.DataLoader.__iter__: the first iteration profiles the
  loader's stages (see dataloader_chains.py) instead of yielding batches;
- spdl.pipeline build_pipeline (behind PipelineBuilder.build): building a
  pipeline profiles its stages (see spdl_chain.py) instead of building it.
Either way the results go to {TB_PIPELINE_LOGDIR}/{TB_PIPELINE_RUN}/diagnostic/,
the terminal says where and how to view them, and the process exits with
status 1, as SPDL's diagnostic-mode RFC specifies. Modules not imported yet are
patched when they are imported (import_hook.when_imported).
"""
from __future__ import annotations

import os
import sys

from ..import_hook import when_imported

ENV_SWITCH = "TB_PIPELINE_DIAGNOSTIC_MODE"
EXIT_STATUS = 1

_installed = False


def enabled(environ=os.environ) -> bool:
    return environ.get(ENV_SWITCH, "").strip() == "1"


def _session_kwargs() -> dict:
    from .env_options import options_from_env
    return options_from_env()


def _run_and_exit(chains, source_label: str, note: str = "") -> None:
    from .session import Session
    from .terminal_summary import print_summary

    # Children forked by the sweep inherit the patches; only this process profiles.
    try:
        options = _session_kwargs()
    except ValueError as exc:
        print(f"[diagnose] bad option: {exc}", file=sys.stderr)
        sys.exit(2)
    # What the pipeline's own worker processes set (DataLoader: one intra-op thread), for the record.
    process_threads = max((getattr(s, "process_intra_op_threads", 0) for stages, _ in chains for s in stages),
                          default=0)
    session = Session(None, source=source_label, process_intra_op_threads=process_threads, **options)
    session.say(f"{ENV_SWITCH}=1: profiling the {source_label} stages instead of running")
    if note:
        session.say(note)
    try:
        session.run_chains(chains)
    finally:
        result = session.finish()
    print_summary(result, sys.stderr)
    print(f"[diagnose] diagnostic mode: results written to {result.path.parent}; exiting with status "
          f"{EXIT_STATUS} (unset {ENV_SWITCH} to train)", file=sys.stderr, flush=True)
    sys.exit(EXIT_STATUS)


# ---------------------------------------------------------------- torch


def _patch_torch(module) -> None:
    loader_cls = getattr(module, "DataLoader", None)
    if loader_cls is None or getattr(loader_cls.__iter__, "_tb_diagnostic", False):
        return

    def __iter__(self):
        from .session import Session  # noqa: F401  (fail here, not mid-way, if broken)
        from .dataloader_chains import chains_for_loader
        num_inputs = _session_kwargs().get("num_inputs", 256)
        _run_and_exit(chains_for_loader(self, num_inputs), "dataloader")

    __iter__._tb_diagnostic = True
    loader_cls.__iter__ = __iter__


# ---------------------------------------------------------------- spdl


def _patch_spdl_build(module) -> None:
    original = getattr(module, "build_pipeline", None)
    if original is None or getattr(original, "_tb_diagnostic", False):
        return

    def build_pipeline(pipeline_cfg, /, **_kwargs):
        from .spdl_chain import chain_from_config
        num_inputs = _session_kwargs().get("num_inputs", 256)
        stages, source, note = chain_from_config(pipeline_cfg, num_inputs)
        _run_and_exit([(stages, source)], "spdl", note)

    build_pipeline._tb_diagnostic = True
    build_pipeline.__wrapped__ = original
    module.build_pipeline = build_pipeline
    # Names bound by `from ._build import build_pipeline` before we got here.
    for name in ("spdl.pipeline._builder", "spdl.pipeline"):
        other = sys.modules.get(name)
        if other is not None and getattr(other, "build_pipeline", None) is original:
            other.build_pipeline = build_pipeline


_PATCHERS = {
    "torch.utils.data.dataloader": _patch_torch,
    "spdl.pipeline._build": _patch_spdl_build,
}


def install(force: bool = False) -> bool:
    """Patch DataLoader and SPDL when TB_PIPELINE_DIAGNOSTIC_MODE=1 (or `force`).
    Idempotent; returns whether diagnostic mode is on."""
    global _installed
    if not (force or enabled()):
        return False
    if _installed:
        return True
    _installed = True
    for name, patch in _PATCHERS.items():
        when_imported(name, patch)
    return True
