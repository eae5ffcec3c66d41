"""JSON responses and the route wrapper: parameters in, JSON out, every failure as JSON."""
from __future__ import annotations

import logging
import os
import time

import msgspec
from werkzeug import wrappers

from ..contract.common import numpy_hook
from ..errors import Conflict, PluginError
from .deep_json import encode_deep
from . import params as Q
from .routes import ROUTES, Route

logger = logging.getLogger(__name__)


_ENCODER = msgspec.json.Encoder(enc_hook=numpy_hook)


def encode_json(obj) -> bytes:
    """An answer (a contract Struct, or builtins) as JSON. NaN and
    infinities become null: JSON has no spelling for them; numpy numbers and
    arrays go through `contract.common.numpy_hook`."""
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


def json_routes(handlers: dict) -> dict:
    """WSGI apps for the routes of `routes.ROUTES`, from `handlers`: path ->
    `handler(params) -> answer` (the route's response Struct, or a
    `msgspec.Raw` of its shape), one for each route exactly."""
    declared = {r.path for r in ROUTES}
    if set(handlers) != declared:
        raise ValueError(f"handlers do not match routes.ROUTES: missing {sorted(declared - set(handlers))}, "
                         f"undeclared {sorted(set(handlers) - declared)}")
    return {r.path: json_route(r, handlers[r.path]) for r in ROUTES}


def json_route(route: Route, handler):
    """The WSGI app of one route: its parameter Struct parsed from the query
    string, `handler(params) -> answer` (its response Struct), JSON out,
    every error as JSON.

    Typed errors carry their status. Anything else is a failure inside an
    analysis of one run: 422 with the reason, never a 500 that would hide it.
    """
    # Built now, before TensorBoard serves: no request thread builds it (struct_types.py).
    response_decoder = msgspec.json.Decoder(route.response) if _VALIDATE else None

    @wrappers.Request.application
    def app(request):
        try:
            body = encode_json(_answer(handler, Q.parse(route.params, request.args)))
            if response_decoder is not None:
                try:
                    response_decoder.decode(body)
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

    return app


def _answer(handler, params):
    """`handler(params)`; while what it reads is still loading, waits for
    that load up to `params.wait_ms` and asks again, so a page that passes
    `wait_ms` hears of a finished load at once instead of at its next ask,
    and asks less often (frontend/src/api.ts). A 409 whose load is not
    known (nothing to wait on) is answered at once."""
    deadline = time.monotonic() + params.wait_ms / 1000.0
    while True:
        try:
            return handler(params)
        except Conflict as exc:
            remaining = deadline - time.monotonic()
            if exc.ready is None or remaining <= 0:
                raise
            exc.ready.wait(remaining)
