"""tb_pipeline_plugin: why is one training run slower than another.

Public API (the TensorBoard plugin itself is `tb_pipeline_plugin.server`):

    from tb_pipeline_plugin import TraceProcessor        # one run's views
    from tb_pipeline_plugin.compare import compare       # two runs' diff, as DataFrames
"""
from __future__ import annotations


def __getattr__(name: str):
    # Lazy: TensorBoard imports the plugin entry point at start-up and must
    # not pay for pandas and the analyses until a trace is opened.
    if name == "TraceProcessor":
        from .analysis.processor import TraceProcessor

        return TraceProcessor
    raise AttributeError(f"module 'tb_pipeline_plugin' has no attribute {name!r}")


__all__ = ["TraceProcessor"]
