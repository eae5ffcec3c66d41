"""The plugin's names as TensorBoard knows them: a leaf of server/ that the
entry point (loader.py) and the plugin (plugin.py) both import, so neither
imports the other for them (the loader imports the plugin in `load`)."""
from __future__ import annotations

PLUGIN_NAME = "tb_pipeline"  # the routes' prefix: /data/plugin/tb_pipeline/
TAB_NAME = "Pipeline Diff"
