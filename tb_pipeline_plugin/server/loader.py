"""TensorBoard's entry point for the plugin: a loader that fails alone.

TensorBoard imports every `tensorboard_plugins` entry point before it serves,
outside any `try` (`tensorboard.default.get_dynamic_plugins`): one plugin that
cannot be imported stops TensorBoard, and every other plugin with it. Errors
raised by a loader's `load` it does catch. So the entry point is this module,
which imports nothing but TensorBoard and werkzeug, and the plugin itself is
imported in `load`: when that fails (a broken install, a missing dependency, a
bad setting), the reason goes to TensorBoard's log and our tab shows it, while
the other plugins serve as usual.
"""
from __future__ import annotations

import json
import logging
import traceback

from tensorboard.plugins import base_plugin
from werkzeug import wrappers

from .names import PLUGIN_NAME, TAB_NAME

logger = logging.getLogger(__name__)


class PipelinePluginLoader(base_plugin.TBLoader):
    plugin_name = PLUGIN_NAME  # what launchers that filter plugins by name read (tests/support/tb_launcher.py)

    def load(self, context: base_plugin.TBContext) -> base_plugin.TBPlugin:
        try:
            if context.logdir:
                # First: a parse worker imports the parser while this process
                # imports the plugin (both take about a second), then parses
                # the first runs' traces, which the plugin adopts once
                # imported: the first parse waits for neither (sources/pool.py).
                from ..sources.pool import parse_early, warm_shared_pool

                warm_shared_pool()
                parse_early(context.logdir)
            from .plugin import PipelinePlugin

            return PipelinePlugin(context)
        except Exception as error:  # noqa: BLE001 - whatever it is, the user's other plugins must serve
            logger.error("tb_pipeline_plugin failed to load; TensorBoard serves without it", exc_info=True)
            return LoadFailedPlugin(error)


class LoadFailedPlugin(base_plugin.TBPlugin):
    """Our tab when the plugin could not load: the reason and what to do,
    instead of a tab that silently is not there."""

    plugin_name = PLUGIN_NAME

    def __init__(self, error: BaseException):
        self._reason = "".join(traceback.format_exception_only(type(error), error)).strip()

    def get_plugin_apps(self):
        return {"/index.js": self._serve_index_js, "/load_error": self._serve_load_error}

    def is_active(self) -> bool:
        return True

    def frontend_metadata(self):
        return base_plugin.FrontendMetadata(es_module_path="/index.js", tab_name=TAB_NAME)

    def message(self) -> dict:
        return {
            "error": "tb_pipeline_plugin failed to load",
            "reason": self._reason,
            "hint": "TensorBoard's log holds the traceback. A broken or partial install is the usual cause: "
                    "reinstall tb_pipeline_plugin (pip's --force-reinstall, from the checkout or wheel it came "
                    "from) and restart TensorBoard.",
        }

    @wrappers.Request.application
    def _serve_load_error(self, request):
        return wrappers.Response(json.dumps(self.message()), status=503, content_type="application/json")

    @wrappers.Request.application
    def _serve_index_js(self, request):
        # A module of its own: the real bundle may be what failed to install.
        # The message is set as text, never parsed as HTML.
        script = (
            "export async function render() {\n"
            f"  const message = {json.dumps(self.message())};\n"
            "  const box = document.createElement('div');\n"
            "  box.setAttribute('role', 'alert');\n"
            "  box.style.cssText = 'font: 14px sans-serif; margin: 24px; white-space: pre-wrap';\n"
            "  box.textContent = `${message.error}.\\n\\n${message.reason}\\n\\n${message.hint}`;\n"
            "  document.body.appendChild(box);\n"
            "}\n"
        )
        return wrappers.Response(script, content_type="text/javascript; charset=utf-8")
