"""A compiled region read as the modules it replaces (diff/compiled_region.py), on the H200 compile pair
(../shared/traces/h200/compile: eager against `torch.compile(model)`) through the real TensorBoard app.

The experimental run's `LM_0` runs one Inductor graph (`## Call CompiledFxGraph <hash> ##`) where the
baseline runs Embedding_0, Sequential_0 and Linear_16: the module diff compares them as one piece, both
sides' time, the graph named by its module, its kernels by family; the oracle is the trace JSON (the device
time of the kernels launched inside the graph's annotation on the step thread)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import get_when_ready
from support.json_oracle import category, launches_by_correlation, load_events

H200 = Path(__file__).resolve().parents[3] / "shared" / "traces" / "h200" / "compile"
PAIR = "baseline=baseline&experimental=experimental"

pytestmark = pytest.mark.skipif(not H200.is_dir(), reason=f"H200 compile traces not found at {H200}")


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    from conftest import build_tb_app
    from werkzeug.test import Client

    logdir = tmp_path_factory.mktemp("compile_pair")
    for side in ("baseline", "experimental"):
        shutil.copytree(H200 / side, logdir / side)
    app, plugin = build_tb_app(logdir)
    yield Client(app)
    close = getattr(plugin, "close", None)
    if callable(close):
        close()


def _get(client, url: str) -> dict:
    resp = get_when_ready(client, url)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    return resp.get_json()


def _modules(client, path: str) -> dict:
    return _get(client, f"diff/modules?{PAIR}&path={path}")


def _lm_path(client, step: str = "1") -> str:
    kids = _modules(client, step)["children"]
    return next(k["path"] for k in kids if k["name"] == "LM_0")


def _graph_oracle_us() -> tuple[float, str]:
    """Device µs of the kernels launched inside the experimental step 1's graph annotation, from the JSON."""
    _, events = load_events(next((H200 / "experimental").glob("*.pt.trace.json.gz")))
    steps = sorted((e for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")),
                   key=lambda e: e["ts"])
    step = steps[1]
    s0, s1 = step["ts"], step["ts"] + step["dur"]
    graphs = [e for e in events if e.get("ph") == "X" and category(e) == "user_annotation"
              and str(e.get("name", "")).startswith("## Call CompiledFxGraph") and s0 <= e["ts"] < s1
              and e.get("tid") == step.get("tid")]
    assert len(graphs) == 1, graphs
    g = graphs[0]
    launches = launches_by_correlation(events)
    total = 0.0
    for e in events:
        if e.get("ph") == "X" and category(e) in ("kernel", "gpu_memcpy", "gpu_memset"):
            launch = launches.get((e.get("args") or {}).get("correlation"))
            if launch is not None and g["ts"] <= launch["ts"] < g["ts"] + g["dur"]:
                total += e["dur"]
    return total, g["name"]


def test_the_compiled_region_is_one_piece_against_the_eager_modules_it_replaced(client):
    lm = _lm_path(client)
    level = _modules(client, lm)
    kids = level["children"]
    # No eager module listed against nothing, no graph drawn one-sided: one region and the unknown time.
    assert [k["kind"] for k in kids] == ["compiled_region", "unknown"], [k["name"] for k in kids]
    region = kids[0]
    assert region["status"] == "matched" and region["compiled"] == "experimental"
    assert region["name"] == "LM_0 (compiled graph)"  # named by its module, not its hash
    info = region["compiled_region"]
    assert info["module"] == "LM_0" and info["side"] == "experimental"
    assert info["eager_pieces"] == ["Embedding_0", "Sequential_0", "Linear_16"]
    assert len(info["graphs"]) == 1 and info["graphs"][0].startswith("## Call CompiledFxGraph")
    assert info["graph_ids"][0] in info["graphs"][0] and "#" not in info["graph_ids"][0]
    assert info["graph_ids"][0] in region["note"]  # the hash is in the tooltip's text, not the name
    # Both sides measured: the eager modules' device time against the graph's.
    oracle_us, graph_name = _graph_oracle_us()
    assert graph_name == info["graphs"][0]
    assert region["experimental_device_us"] == pytest.approx(oracle_us, rel=1e-6, abs=1.0)
    assert region["baseline_device_us"] > 0.5 * region["experimental_device_us"]
    # The region's sides hold the level's time but its unknown piece: the parent's numbers still add up.
    node = level["node"]
    for side in ("baseline", "experimental"):
        assert region[f"{side}_device_us"] + kids[1][f"{side}_device_us"] == pytest.approx(
            node[f"{side}_device_us"], abs=0.01)
        assert region[f"{side}_host_us"] + kids[1][f"{side}_host_us"] <= node[f"{side}_host_us"] + 0.01


def test_its_kernels_are_grouped_by_fused_op_family(client):
    region = _modules(client, _lm_path(client))["children"][0]
    families = {f["family"]: f for f in region["compiled_region"]["kernel_families"]}
    for fused in ("triton_poi", "triton_per"):
        assert families[fused]["experimental_us"] > 0 and families[fused]["experimental_kernels"] > 0
        assert families[fused]["baseline_us"] == 0 and families[fused]["baseline_kernels"] == 0
    assert families["gemm"]["baseline_us"] > 0 and families["gemm"]["experimental_us"] > 0
    assert families["pointwise"]["baseline_us"] > 0 and families["pointwise"]["experimental_us"] == 0
    for side in ("baseline", "experimental"):
        assert sum(f[f"{side}_us"] for f in families.values()) == pytest.approx(region[f"{side}_device_us"], abs=0.1)
    # The region's kernels table holds the same device time.
    kernels = _get(client, f"diff/kernels?{PAIR}&path={region['path']}&limit=10000")
    for side in ("baseline", "experimental"):
        total = sum(r[f"{side}_total_us"] for r in kernels["rows"])
        assert total == pytest.approx(region[f"{side}_device_us"], abs=0.1)
    assert all(r["short_name"] for r in kernels["rows"])


def test_zooming_in_lists_each_sides_own_pieces(client):
    region = _modules(client, _lm_path(client))["children"][0]
    inside = _modules(client, region["path"])
    assert inside["breadcrumb"][-1]["name"] == "LM_0 (compiled graph)"
    names = [(k["name"], k["status"]) for k in inside["children"]]
    assert names == [("Embedding_0", "inside_compiled"), ("Sequential_0", "inside_compiled"),
                     ("Linear_16", "inside_compiled"), ("LM_0 (compiled graph)", "inside_compiled")]
    graph = inside["children"][-1]
    assert graph["experimental_name"].startswith("## Call CompiledFxGraph")  # the hash, for the tooltip
    assert sum(k["baseline_device_us"] for k in inside["children"]) == pytest.approx(region["baseline_device_us"],
                                                                                     abs=0.01)
    # The region's other views answer: its operators and both runs' Timeline.
    assert _get(client, f"diff/operators?{PAIR}&path={region['path']}")["total"] > 0
    timeline = _get(client, f"diff/timeline?{PAIR}&path={region['path']}")
    assert timeline["baseline"] and timeline["experimental"]
