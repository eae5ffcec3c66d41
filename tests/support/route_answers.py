"""A plugin route's status and JSON body through a test client, asked again while it answers 409 (the store
still loading what it needs)."""
from __future__ import annotations

import time
from urllib.parse import quote

from conftest import PLUGIN_PREFIX


def answer(client, route: str, **params):
    query = "&".join(f"{k}={quote(v)}" for k, v in params.items())
    resp = client.get(f"{PLUGIN_PREFIX}/{route}?{query}")
    return resp.status_code, resp.get_json()


def answer_when_ready(client, route: str, timeout_s: float = 60, **params):
    """The answer once the store has loaded what the route needs (409 until then)."""
    deadline = time.monotonic() + timeout_s
    while True:
        status, body = answer(client, route, **params)
        if status != 409 or time.monotonic() > deadline:
            return status, body
        time.sleep(0.05)
