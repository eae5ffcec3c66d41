"""Put on PYTHONPATH by `tb-pipeline record`: installs the recording hooks
before the user's script runs, then runs any sitecustomize it shadows."""
import importlib.util
import os
import sys


def _chain_shadowed_sitecustomize():
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        if not entry or os.path.abspath(entry) == here:
            continue
        candidate = os.path.join(entry, "sitecustomize.py")
        if os.path.isfile(candidate):
            spec = importlib.util.spec_from_file_location("_tb_pipeline_shadowed_sitecustomize", candidate)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return


try:
    from tb_pipeline_plugin.record.autohook import install

    install()
except Exception as exc:  # never break the user's script because recording failed
    print(f"tb-pipeline: recording hooks not installed: {exc!r}", file=sys.stderr)
_chain_shadowed_sitecustomize()
