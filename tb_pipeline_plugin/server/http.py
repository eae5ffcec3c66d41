"""JSON responses and the route wrapper: parameters in, JSON out, every failure as JSON."""
from __future__ import annotations

import functools
import logging
import os

import msgspec
import numpy as np
from werkzeug import wrappers

from ..errors import PluginError
from .deep_json import encode_deep
from . import params as Q
from .routes import ROUTES

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


# Set by the test suite: every answer is decoded with its contract type, so
# a response that drifts from the declared shape fails the test that got it.
_VALIDATE = os.environ.get("TB_PIPELINE_VALIDATE_RESPONSES") == "1"


def static_response(body: bytes, content_type: str) -> wrappers.Response:
    response = wrappers.Response(body, content_type=content_type)
    # TensorBoard requires nosniff on everything a plugin serves (an error from its 3.0 on).
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


def json_response(obj, status: int = 200) -> wrappers.Response:
    return _json_bytes(encode_json(obj), status)


def _json_bytes(body: bytes, status: int) -> wrappers.Response:
    # nosniff also matters here: names from traces are data, never HTML.
    response = static_response(body, "application/json; charset=utf-8")
    response.status_code = status
    return response


def json_route(path: str):
    """Route wrapper for the route `path` of `routes.ROUTES`:
    `method(self, params) -> dict`, where `params` is the route's parameter
    Struct parsed from the query string; errors become JSON.

    Typed errors carry their status. Anything else is a failure inside an
    analysis of one run: 422 with the reason, never a 500 that would hide it.
    """
    route = next(r for r in ROUTES if r.path == path)

    def wrap(method):
        @wrappers.Request.application
        @functools.wraps(method)
        def handler(self, request):
            try:
                body = encode_json(method(self, Q.parse(route.params, request.args)))
                if _VALIDATE:
                    try:
                        msgspec.json.decode(body, type=route.response)
                    except RecursionError:  # deeper than msgspec decodes: shape checked at shallower depths
                        pass
                return _json_bytes(body, 200)
            except PluginError as exc:
                return json_response(exc.to_json(), exc.status)
            except Exception as exc:  # noqa: BLE001 - the point is never to 500
                if _VALIDATE and isinstance(exc, msgspec.ValidationError):
                    raise
                logger.exception("tb_pipeline: %s failed", request.path)
                message = f"analysis failed: {type(exc).__name__}: {exc}"
                return json_response({"error": message, "status": 422}, 422)

        return handler

    return wrap
