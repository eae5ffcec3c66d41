"""JSON responses and the route wrapper that turns every failure into JSON."""
from __future__ import annotations

import functools
import logging

import msgspec
import numpy as np
from werkzeug import wrappers

from .deep_json import encode_deep
from .errors import PluginError

logger = logging.getLogger(__name__)


def _enc_hook(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise NotImplementedError(f"cannot encode {type(obj).__name__}")


_ENCODER = msgspec.json.Encoder(enc_hook=_enc_hook)


def encode_json(obj) -> bytes:
    # NaN and infinities become null: JSON has no spelling for them.
    try:
        return _ENCODER.encode(obj)
    except RecursionError:  # nested deeper than msgspec goes (a deep module tree)
        return encode_deep(obj, _ENCODER.encode)


def json_response(obj, status: int = 200) -> wrappers.Response:
    response = wrappers.Response(encode_json(obj), status=status, content_type="application/json; charset=utf-8")
    # Names from traces are data: never let a browser sniff them into HTML.
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


def json_route(method):
    """Route wrapper: `method(self, request) -> dict`; errors become JSON.

    Typed errors carry their status. Anything else is a failure inside an
    analysis of one run: 422 with the reason, never a 500 that would hide it.
    """

    @wrappers.Request.application
    @functools.wraps(method)
    def handler(self, request):
        try:
            return json_response(method(self, request))
        except PluginError as exc:
            return json_response(exc.to_json(), exc.status)
        except Exception as exc:  # noqa: BLE001 - the point is never to 500
            logger.exception("tb_pipeline: %s failed", request.path)
            message = f"analysis failed: {type(exc).__name__}: {exc}"
            return json_response({"error": message, "status": 422}, 422)

    return handler
