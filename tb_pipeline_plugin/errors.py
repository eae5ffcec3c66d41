"""Typed request errors.

Pure code (discovery, analyses) raises these; the HTTP layer maps `status`
to the response code, so no route ever needs its own try/except ladder and
nothing unexpected turns into a 500.
"""
from __future__ import annotations


class PluginError(Exception):
    status: int = 500

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def to_json(self) -> dict:
        return {"error": self.message, "status": self.status}


class BadRequest(PluginError):
    """A missing or malformed parameter."""

    status = 400


class NotFound(PluginError):
    """An unknown run, worker or span."""

    status = 404


class Conflict(PluginError):
    """The run is still loading; the client should retry later. `ready`,
    when known: set once the load this request waits for has finished
    (a route asked with `wait_ms` waits on it: server/http.py)."""

    status = 409

    def __init__(self, message: str, ready=None):
        super().__init__(message)
        self.ready = ready

    def to_json(self) -> dict:
        return {**super().to_json(), "run_status": "loading"}


class Unprocessable(PluginError):
    """The run's trace could not be parsed; the message says why."""

    status = 422


class MissingExtra(ImportError):
    """An optional package a feature needs is not installed: the message names
    our extra, which installs it at the version we test against (pip adds
    an installed package's extras without asking an index for the package)."""

    def __init__(self, package: str, extra: str, feature: str):
        super().__init__(f"{feature} needs {package}, which is not installed: {install_hint(extra)}")


def install_hint(extra: str) -> str:
    """The command that installs one of setup.py's extras into this environment."""
    return f'pip install "tb_pipeline_plugin[{extra}]"'
