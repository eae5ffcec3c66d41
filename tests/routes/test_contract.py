"""One contract: the OpenAPI document is generated from the Python Structs,
and every route answers what that document declares."""
from __future__ import annotations

import json
import shutil
import time
import subprocess
import time
import sys
from urllib.parse import urlencode

import msgspec
import pytest

from conftest import PLUGIN_PREFIX, still_loading, wait_ready
from tb_pipeline_plugin.server import openapi
from tb_pipeline_plugin.server.routes import ROUTES


def test_openapi_document_is_up_to_date(repo_root):
    out = subprocess.run([sys.executable, "-m", "tb_pipeline_plugin.server.openapi", "--check"],
                         cwd=repo_root, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_openapi_lists_every_route_with_its_schema():
    doc = openapi.document()
    assert set(doc["paths"]) == {r.path for r in ROUTES}
    schemas = doc["components"]["schemas"]
    for route in ROUTES:
        ok = doc["paths"][route.path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
        assert ok["$ref"].rsplit("/", 1)[1] == route.response.__name__ in schemas
    # No dangling references anywhere in the document.
    refs = {ref.rsplit("/", 1)[1] for ref in _refs(doc)}
    assert refs <= set(schemas)


def _refs(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref":
                yield v
            else:
                yield from _refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from _refs(v)


@pytest.fixture(scope="module")
def served(recorded_logdir, diagnostic_logdir, tmp_path_factory):
    from conftest import build_tb_app
    from werkzeug.test import Client

    # The traced runs and the diagnostic-mode runs in one logdir, so every route has data.
    logdir = tmp_path_factory.mktemp("contract_logdir")
    for source in (recorded_logdir, diagnostic_logdir):
        for run in source.iterdir():
            shutil.copytree(run, logdir / run.name)
    app, plugin = build_tb_app(logdir)
    client = Client(app)
    for run in ("baseline", "experimental"):
        assert wait_ready(client, run)["status"] == "ready"
    yield client
    plugin.close()


def _query(route_path: str) -> dict:
    if route_path == "/runs":
        return {}
    if route_path == "/diagnostic":
        return {"run": "diag_baseline"}
    if route_path == "/diff/diagnostic":
        return {"baseline": "diag_baseline", "experimental": "diag_experimental"}
    if route_path.startswith("/diff/") or route_path == "/distributed":
        return {"baseline": "baseline", "experimental": "experimental"}
    return {"run": "baseline"}


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.path)
def test_every_route_answers_its_declared_shape(served, route):
    url = f"{PLUGIN_PREFIX}{route.path}?{urlencode(_query(route.path))}"
    deadline = time.monotonic() + 60
    # Routes over every rank of a run answer with the ranks ready until every one is.
    while still_loading(resp := served.get(url)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    msgspec.json.decode(resp.get_data(), type=route.response)


@pytest.mark.parametrize("route", [r for r in ROUTES if r.path != "/runs"], ids=lambda r: r.path)
def test_errors_answer_the_error_shape(served, route):
    from tb_pipeline_plugin.contract import ErrorResponse

    resp = served.get(f"{PLUGIN_PREFIX}{route.path}?bogus_parameter=1")
    assert resp.status_code == 400
    err = msgspec.json.decode(resp.get_data(), type=ErrorResponse)
    assert err.status == 400 and "bogus_parameter" in err.error


def test_a_drifting_response_fails_validation(served):
    """The check the route tests rely on can fail: an undeclared field is rejected."""
    from tb_pipeline_plugin.contract import RunsResponse

    body = json.loads(served.get(f"{PLUGIN_PREFIX}/runs").get_data())
    body["runs"][0]["surprise"] = 1
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(json.dumps(body).encode(), type=RunsResponse)


def test_contract_names_are_defined_once():
    """Annotations are resolved by name when the schema is built: a second
    `Verdict = ...` further down would silently retype every earlier field,
    and one in another module of the package would make the re-export in
    contract/__init__.py say one of the two. Each module stays one subject
    of a readable size."""
    import ast
    from pathlib import Path

    from tb_pipeline_plugin import contract

    names = []
    for path in sorted(Path(contract.__file__).parent.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert len(text.splitlines()) < 500, f"{path.name}: split it by subject"
        tree = ast.parse(text)
        names += [t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets
                  if isinstance(t, ast.Name)]
        names += [node.name for node in tree.body if isinstance(node, ast.ClassDef)]
    assert len(names) == len(set(names)), sorted({n for n in names if names.count(n) > 1})


def test_every_route_documents_its_parameters():
    """Routes sharing a parameter Struct (overview, kernels, modules: RunParams) each list all of them."""
    import msgspec as _msgspec

    doc = openapi.document()
    for route in ROUTES:
        listed = {p["name"] for p in doc["paths"][route.path]["get"]["parameters"]}
        declared = {f.name for f in _msgspec.structs.fields(route.params)}
        assert listed == declared, route.path
