"""Delta tables (diff/operators, diff/kernels, diff/overview) and the
notebook API, on real recorded traces and the HTA GPU pair."""
from __future__ import annotations

import glob
import math

import pytest

from support.json_oracle import duration_by_name, load_events
from tb_pipeline_plugin.diff.significance.method import NoisePolicy
from tb_pipeline_plugin.compare import compare
from support import diff_calls as api
from tb_pipeline_plugin.diff import overview as O
from tb_pipeline_plugin.diff import tables as C
from tb_pipeline_plugin.errors import BadRequest
from tb_pipeline_plugin.analysis.processor import TraceProcessor


def trace_file(run_dir) -> str:
    (path,) = glob.glob(str(run_dir / "*.pt.trace.json*"))
    return path


@pytest.fixture(scope="module")
def cpu(recorded_logdir):
    return {name: TraceProcessor.load(trace_file(recorded_logdir / name)) for name in ("baseline", "experimental")}


@pytest.fixture(scope="module")
def gpu(shared_traces):
    return {side: TraceProcessor.load(str(shared_traces / "trace_diff" / f"{side}.json.gz")) for side in ("control", "test")}


def key_average_counts(prof) -> dict[str, int]:
    return {ev.key: ev.count for ev in prof.key_averages()}


# ------------------------------------------------------------ joins


def test_operator_join_matches_key_averages(cpu, recorded_profiles):
    out = api.diff_operators_impl(cpu["baseline"], cpu["experimental"], {"limit": "10000"})
    rows = {r["name"]: r for r in out["rows"]}
    b_counts = key_average_counts(recorded_profiles["baseline"])
    e_counts = key_average_counts(recorded_profiles["experimental"])
    ops = {name for name in rows}
    assert ops and ops <= set(b_counts) | set(e_counts)
    for name in ops:
        r = rows[name]
        assert r["baseline_calls"] == b_counts.get(name, 0)
        assert r["experimental_calls"] == e_counts.get(name, 0)
        assert r["delta_calls"] == r["experimental_calls"] - r["baseline_calls"]
        assert r["input_shape"] is None
    assert out["total"] == len(rows)
    assert out["primary"] == "host_self_us" and out["device_present"] is False
    assert out["columns"] == C.OPERATOR_COLUMNS


def test_rows_of_one_side_are_kept_and_pct_is_null_on_a_zero_baseline(gpu):
    b, e = gpu["control"], gpu["test"]
    rows = api.diff_operators_impl(b, e, {"limit": "10000"})["rows"]
    b_names = set(b.operators("name")["name"])
    e_names = set(e.operators("name")["name"])
    assert {r["name"] for r in rows} == b_names | e_names
    only_e = [r for r in rows if r["name"] not in b_names]
    only_b = [r for r in rows if r["name"] not in e_names]
    assert only_e and only_b
    for r in only_e:
        assert r["baseline_calls"] == 0 and r["baseline_host_self_us"] == 0
        assert r["delta_calls_pct"] is None and r["delta_host_self_pct"] is None
    for r in only_b:
        assert r["experimental_calls"] == 0 and r["delta_calls_pct"] == -100.0


def test_group_by_shape_joins_on_name_and_shape(cpu):
    b, e = cpu["baseline"], cpu["experimental"]
    out = api.diff_operators_impl(b, e, {"group_by": "name_and_shape", "filter": "aten::addmm", "limit": "10000"})
    assert out["group_by"] == "name_and_shape"
    shapes = {r["input_shape"]: r for r in out["rows"] if r["name"] == "aten::addmm"}
    b_table = b.operators("name_and_shape")
    e_table = e.operators("name_and_shape")
    want = {s for s in b_table[b_table["name"] == "aten::addmm"]["input_shape"]} | \
           {s for s in e_table[e_table["name"] == "aten::addmm"]["input_shape"]}
    assert set(shapes) == want and len(want) >= 2
    # The hidden->hidden addmm runs once more per step in the 5-block model.
    hidden = [s for s, r in shapes.items() if r["delta_calls"] != 0]
    assert len(hidden) == 1 and shapes[hidden[0]]["delta_calls"] == 3
    with pytest.raises(BadRequest):
        api.diff_operators_impl(b, e, {"group_by": "shape"})


def test_operators_inside_a_piece(cpu):
    b, e = cpu["baseline"], cpu["experimental"]
    step = api.diff_modules_impl(b, e, "0")
    loader = next(c for c in step["children"] if c["kind"] == "data_loading")
    rows = api.diff_operators_impl(b, e, {"path": loader["path"], "limit": "10000"})["rows"]
    assert rows and sum(r["baseline_calls"] for r in rows) == loader["baseline_calls"]
    assert sum(r["experimental_calls"] for r in rows) == loader["experimental_calls"]
    assert "aten::linear" not in {r["name"] for r in rows}
    # The root path is the whole trace.
    whole = api.diff_operators_impl(b, e, {"path": "", "limit": "10000"})
    assert sum(r["baseline_calls"] for r in whole["rows"]) == int(b.operators("name")["calls"].sum())
    with pytest.raises(BadRequest):
        api.diff_operators_impl(b, e, {"path": "0.42"})


# ------------------------------------------------------------ sort, filter, page


def _check_order(rows, sort, order, keys):
    values = [r[sort] for r in rows]
    nulls = [v is None for v in values]
    assert nulls == sorted(nulls), f"nulls must come last for {sort}"
    present = [v for v in values if v is not None]
    if sort in keys:
        present = [v.lower() for v in present]
    elif sort.startswith("delta_") and not sort.endswith("_pct"):
        present = [abs(v) for v in present]
    assert present == sorted(present, reverse=(order == "desc")), f"{sort} {order}"


@pytest.mark.parametrize("order", ["desc", "asc"])
@pytest.mark.parametrize("table", ["operators", "kernels"])
def test_sort_by_every_column_in_both_orders(gpu, table, order):
    b, e = gpu["control"], gpu["test"]
    impl = api.diff_operators_impl if table == "operators" else api.diff_kernels_impl
    keys = api.OPERATOR_KEYS if table == "operators" else api.KERNEL_KEYS
    columns = C.OPERATOR_COLUMNS if table == "operators" else C.KERNEL_COLUMNS
    sort_keys = C.sort_keys(keys, columns)
    assert len(sort_keys) == len(keys) + 4 * len(columns)
    for sort in sort_keys:
        out = impl(b, e, {"sort": sort, "order": order, "limit": "10000"})
        assert out["sort"] == sort and out["order"] == order
        assert len(out["rows"]) == out["total"]
        _check_order(out["rows"], sort, order, keys)


def test_default_order_is_largest_absolute_primary_delta(gpu, cpu):
    out = api.diff_operators_impl(gpu["control"], gpu["test"], {})
    assert out["sort"] == "delta_device_self_us" and out["order"] == "desc" and out["limit"] == C.DEFAULT_LIMIT
    deltas = [abs(r["delta_device_self_us"]) for r in out["rows"]]
    assert deltas == sorted(deltas, reverse=True) and deltas[0] > 0
    cpu_out = api.diff_operators_impl(cpu["baseline"], cpu["experimental"], {})
    assert cpu_out["sort"] == "delta_host_self_us"


def test_filter_is_a_case_insensitive_substring_not_a_regex(gpu):
    b, e = gpu["control"], gpu["test"]
    every = api.diff_operators_impl(b, e, {"limit": "10000"})["rows"]
    out = api.diff_operators_impl(b, e, {"filter": "ATEN::MM", "limit": "10000"})
    assert {r["name"] for r in out["rows"]} == {r["name"] for r in every if "aten::mm" in r["name"].lower()}
    assert out["total"] == len(out["rows"]) >= 1
    assert api.diff_operators_impl(b, e, {"filter": "aten::.*"})["total"] == 0
    assert api.diff_kernels_impl(b, e, {"filter": "(("})["total"] == 0  # not compiled as a regex
    nccl = api.diff_kernels_impl(b, e, {"filter": "nccl", "limit": "10000"})
    assert nccl["total"] > 0 and all("nccl" in r["name"].lower() for r in nccl["rows"])


def test_paging_walks_the_same_order(gpu):
    b, e = gpu["control"], gpu["test"]
    every = api.diff_operators_impl(b, e, {"limit": "10000"})
    total = every["total"]
    pages, offset = [], 0
    while offset < total:
        page = api.diff_operators_impl(b, e, {"offset": str(offset), "limit": "37"})
        assert page["total"] == total and page["offset"] == offset and page["limit"] == 37
        pages += page["rows"]
        offset += 37
    assert [r["name"] for r in pages] == [r["name"] for r in every["rows"]]
    assert api.diff_operators_impl(b, e, {"offset": str(total + 5)})["rows"] == []
    assert api.diff_operators_impl(b, e, {"limit": "0"})["rows"] == []


@pytest.mark.parametrize("args", [
    {"sort": "bogus"}, {"sort": "delta_bogus_us"}, {"sort": "input_shape; drop"}, {"order": "up"},
    {"offset": "-1"}, {"offset": "x"}, {"limit": "-5"}, {"limit": "10001"}, {"limit": "1.5"},
    {"limit": "\u0663"}, {"offset": "+5"}, {"limit": "5_0"}, {"offset": "5 "}, {"limit": "\uff15"},
])
def test_bad_parameters_are_bad_requests(gpu, args):
    with pytest.raises(BadRequest) as info:
        api.diff_operators_impl(gpu["control"], gpu["test"], args)
    assert info.value.status == 400
    if "sort" in args:
        with pytest.raises(BadRequest):
            api.diff_kernels_impl(gpu["control"], gpu["test"], args)


def test_kernels_have_no_input_shape_sort(gpu):
    with pytest.raises(BadRequest):
        api.diff_kernels_impl(gpu["control"], gpu["test"], {"sort": "input_shape"})


def test_join_is_pure_and_keeps_both_sides():
    import pandas as pd

    b = pd.DataFrame({"name": ["a", "b"], "calls": [2, 4], "total_us": [10.0, 0.0]})
    e = pd.DataFrame({"name": ["b", "c"], "calls": [6, 1], "total_us": [5.0, 3.0]})
    out = C.join(b, e, ["name"], ["calls", "total_us"]).set_index("name")
    assert out.loc["a", "experimental_calls"] == 0 and out.loc["a", "delta_calls_pct"] == -100
    assert out.loc["b", "delta_calls"] == 2 and out.loc["b", "delta_calls_pct"] == 50
    assert math.isnan(out.loc["b", "delta_total_pct"])  # baseline 0 -> undefined
    assert out.loc["c", "baseline_total_us"] == 0 and math.isnan(out.loc["c", "delta_calls_pct"])


def test_delta_pct_names_drop_the_unit_and_mark_a_percentage_relative():
    from tb_pipeline_plugin.diff.delta import pct_name

    assert pct_name("host_self_us") == "delta_host_self_pct"
    assert pct_name("per_step_s") == "delta_per_step_pct"
    assert pct_name("calls") == "delta_calls_pct"
    assert pct_name("qps") == "delta_qps_pct"
    # `delta_busy_pct` is the difference in percentage points.
    assert pct_name("busy_pct") == "delta_busy_rel_pct"


# ------------------------------------------------------------ overview


def test_overview_rows_cover_every_metric(gpu, cpu):
    rows = api.diff_overview_impl(gpu["control"], gpu["test"])["rows"]
    assert [r["metric"] for r in rows] == [m for m, _, _ in O.OVERVIEW_METRICS]
    b_ov, e_ov = gpu["control"].overview(), gpu["test"].overview()
    by = {r["metric"]: r for r in rows}
    step = by["avg_step_time_us"]
    assert step["baseline"] == pytest.approx(b_ov["avg_step_time_us"], abs=1e-3)
    assert step["delta"] == pytest.approx(e_ov["avg_step_time_us"] - b_ov["avg_step_time_us"], abs=1e-2)
    assert step["delta_pct"] == pytest.approx(100 * step["delta"] / step["baseline"], abs=0.01)
    for cat, value in b_ov["breakdown_us"].items():
        assert by[f"breakdown_us.{cat}"]["baseline"] == pytest.approx(value, abs=1e-3)
    assert by["device"]["delta"] is None and by["device"]["delta_pct"] is None
    # A CPU trace against itself: zero deltas, null % where the baseline is 0 or null.
    same = api.diff_overview_impl(cpu["baseline"], cpu["baseline"])["rows"]
    for r in same:
        assert r["delta"] in (0, None)
        if r["baseline"] in (0, None) or isinstance(r["baseline"], str):
            assert r["delta_pct"] is None
        else:
            assert r["delta_pct"] == 0
    gpu_util = next(r for r in same if r["metric"] == "gpu_utilization_pct")
    assert gpu_util["baseline"] is None and gpu_util["delta_pct"] is None


def test_overview_rows_pure():
    b = {"device": {"type": "CPU", "name": None, "count": 0}, "steps": [{}] * 2, "avg_step_time_us": 0.0,
         "breakdown_us": {"kernel": 5.0}, "memory": {"avg_bytes": None, "peak_bytes": 10}}
    e = {"device": {"type": "GPU", "name": "A100", "count": 1}, "steps": [{}] * 3, "avg_step_time_us": 7.0,
         "breakdown_us": {"kernel": 2.5}, "memory": {"avg_bytes": 4.0, "peak_bytes": 15}}
    by = {r["metric"]: r for r in O.overview_rows(b, e, noise=NoisePolicy())}
    assert (by["device"]["baseline"], by["device"]["experimental"]) == ("CPU", "A100")
    assert by["steps"]["delta"] == 1 and by["steps"]["delta_pct"] == 50
    assert by["avg_step_time_us"]["delta"] == 7 and by["avg_step_time_us"]["delta_pct"] is None
    assert by["breakdown_us.kernel"]["delta_pct"] == -50
    assert by["memory.avg_bytes"]["delta"] is None
    assert by["memory.peak_bytes"]["delta_pct"] == 50


# ------------------------------------------------------------ notebook API


def test_compare_returns_dataframes(recorded_logdir, cpu):
    c = compare(recorded_logdir / "baseline", trace_file(recorded_logdir / "experimental"))
    assert c.overview.loc["steps", "baseline"] == 3
    assert c.overview.loc["avg_step_time_us", "delta"] == pytest.approx(
        c.overview.loc["avg_step_time_us", "experimental"] - c.overview.loc["avg_step_time_us", "baseline"], abs=1e-2)
    mods = c.modules
    assert {"path", "depth", "kind", "status", "baseline_host_us", "experimental_device_us", "delta_calls"} <= set(mods.columns)
    assert (mods["status"] == "experimental_only").any() and not (mods["status"] == "baseline_only").any()
    ops = c.operators
    assert list(ops["name"])[:1] == [api.diff_operators_impl(cpu["baseline"], cpu["experimental"], {"limit": "1"})["rows"][0]["name"]]
    linear = ops.set_index("name").loc["aten::linear"]
    assert linear["delta_calls"] == 3
    level = c.level("0")
    assert level["acc_baseline_host_us"].iloc[-1] == pytest.approx(level["baseline_host_us"].sum(), abs=1e-2)
    assert len(c.operators_at(level["path"].iloc[0])) > 0
    assert c.kernels.empty


def test_compare_selects_workers_of_a_run_dir(tmp_path, recorded_logdir):
    import shutil

    run = tmp_path / "two_workers"
    run.mkdir()
    shutil.copy(trace_file(recorded_logdir / "baseline"), run / "alpha.1.pt.trace.json")
    shutil.copy(trace_file(recorded_logdir / "experimental"), run / "beta.1.pt.trace.json")
    c = compare(run, run, b_worker="alpha", e_worker="beta")
    assert c.operators.set_index("name").loc["aten::linear", "delta_calls"] == 3
    with pytest.raises(ValueError):
        compare(run / "alpha.1.pt.trace.json", run, b_worker="alpha")
    with pytest.raises(FileNotFoundError):
        compare(tmp_path / "missing", run)


def test_gpu_kernels_in_the_notebook(gpu, shared_traces):
    c = compare(gpu["control"], gpu["test"])
    _, b_events = load_events(shared_traces / "trace_diff" / "control.json.gz")
    first = c.kernels.iloc[0]
    assert first["baseline_total_us"] == pytest.approx(duration_by_name(b_events, ("kernel",)).get(first["name"], 0.0))


@pytest.mark.parametrize("pair", ["cpu", "gpu"])
def test_every_rows_interval_holds_its_delta(pair, request):
    """A table row's mark is about the delta beside it: its interval holds the
    row's per-step delta, and a significant mark has that delta's sign (on the
    recorded CPU pair and HTA's GPU pair, every row of both tables)."""
    runs = list(request.getfixturevalue(pair).values())
    c = compare(*runs)
    for page in (c.operator_page(100000), c.kernel_page(100000)):
        for row in page["rows"]:
            sig = row["significance"]
            if sig is None or sig["ci_low"] is None:
                continue
            assert sig["ci_low"] <= sig["delta"] <= sig["ci_high"], row
            if sig["verdict"] == "significant":
                assert (sig["ci_low"] > 0) == (sig["delta"] > 0), row
