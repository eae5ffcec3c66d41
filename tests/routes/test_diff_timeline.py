"""`diff/timeline` through the real TensorBoard app, checked against the
trace JSON: every event of the window is drawn or declared merged, and
events are matched only inside pieces the alignment paired (operators by
name inside the same module class, kernels through matched operators)."""
from __future__ import annotations

import collections

import numpy as np
import pytest

from support.json_oracle import category, launches_by_correlation, load_events
# The logdir (recorded runs and HTA's GPU pair as gpu_control / gpu_test) and the app over it.
from test_diff_routes import client, get, logdir, trace_file  # noqa: F401 - fixtures

TIMELINE_RUNS = ("baseline", "experimental", "gpu_control", "gpu_test")


@pytest.fixture(scope="module")
def events(logdir):
    return {run: load_events(trace_file(logdir / run))[1] for run in TIMELINE_RUNS}


def timeline(client, b, e, **params):
    return get(client, "diff/timeline", baseline=b, experimental=e, **params)


def drawn(side: dict, kinds: list[str]) -> list[dict]:
    """The side's events as dicts (columns zipped)."""
    ev = side["events"]
    return [
        {"name": side["names"][ev["name"][i]], "kind": kinds[ev["kind"][i]], "ts": ev["ts_us"][i],
         "dur": ev["dur_us"][i], "lane": ev["lane"][i], "match": ev["match"][i], "delta": ev["delta_us"][i]}
        for i in range(len(ev["ts_us"]))
    ]


def x_events(evs, cats):
    return [e for e in evs if e.get("ph") == "X" and category(e) in cats]


def json_step(evs, index: int) -> dict:
    steps = sorted((e for e in x_events(evs, ("user_annotation",)) if e["name"].startswith("ProfilerStep#")),
                   key=lambda e: e["ts"])
    return steps[index]


def key(name: str, rel_ts: float) -> tuple:
    # np.round as the server rounds: the same doubles give the same key.
    return name, float(np.round(rel_ts, 3))


# ------------------------------------------------------------ drawn or merged


@pytest.mark.parametrize("b,e", [("baseline", "experimental"), ("gpu_control", "gpu_test")])
def test_every_operator_of_the_step_is_drawn_at_full_detail(client, events, b, e):
    out = timeline(client, b, e, path="0", width_px=0)
    assert out["path"] == "0" and out["status"] == "matched" and out["kind"] == "step"
    for run, side in ((b, out["baseline_side"]), (e, out["experimental_side"])):
        step = json_step(events[run], 0)
        assert side["start_us"] == pytest.approx(step["ts"], abs=1e-3)
        assert side["end_us"] == pytest.approx(step["ts"] + step["dur"], abs=1e-3)
        want = collections.Counter(key(x["name"], x["ts"] - step["ts"]) for x in x_events(events[run], ("cpu_op",))
                                   if step["ts"] <= x["ts"] < step["ts"] + step["dur"])
        got = collections.Counter(key(x["name"], x["ts"]) for x in drawn(side, out["kinds"])
                                  if x["kind"] == "operator" and x["ts"] >= 0)
        assert want and got == want
        assert side["merged_count"] == 0 and side["events_total"] == len(side["events"]["ts_us"])
        # The step's own annotation is drawn, at 0.
        assert any(x["name"] == step["name"] and x["ts"] == 0 for x in drawn(side, out["kinds"]))


@pytest.mark.parametrize("b,e", [("baseline", "experimental"), ("gpu_control", "gpu_test")])
def test_what_is_too_small_to_draw_is_declared_merged(client, b, e):
    full = timeline(client, b, e, path="0", width_px=0)
    lod = timeline(client, b, e, path="0", width_px=400, max_events=300)
    for which in ("baseline_side", "experimental_side"):
        f, s = full[which], lod[which]
        shown = drawn(s, lod["kinds"])
        assert len(shown) <= 300 and s["events_total"] == f["events_total"]
        assert len(shown) + s["merged_count"] == s["events_total"]
        assert s["merged_count"] == sum(s["merged"]["count"]) > 0
        assert all(x["dur"] >= s["min_draw_us"] - 1e-3 for x in shown)
        # The merged time is the time of the events not drawn.
        all_dur = sum(f["events"]["dur_us"])
        assert s["merged_us"] == pytest.approx(all_dur - sum(x["dur"] for x in shown), rel=1e-6, abs=0.05)
        # Each aggregate covers its events: at least as long as the time merged into it, per lane.
        m = s["merged"]
        assert all(d + 1e-3 >= 0 for d in m["dur_us"])
        assert all(lane < len(s["lanes"]) for lane in m["lane"])


def test_the_event_asked_for_is_drawn_however_short(client, events):
    coarse = timeline(client, "gpu_control", "gpu_test", path="0", width_px=100, max_events=5)
    side = coarse["baseline_side"]
    shown = {x["name"] for x in drawn(side, coarse["kinds"])}
    step = json_step(events["gpu_control"], 0)
    ops = sorted((x for x in x_events(events["gpu_control"], ("cpu_op",))
                  if step["ts"] <= x["ts"] < step["ts"] + step["dur"]), key=lambda x: x["ts"])
    name = next(x["name"] for x in ops if x["name"] not in shown)
    first = next(x for x in ops if x["name"] == name)
    out = timeline(client, "gpu_control", "gpu_test", path="0", width_px=100, max_events=5, find=name)
    mine = [x for x in drawn(out["baseline_side"], out["kinds"]) if x["name"] == name]
    assert [key(x["name"], x["ts"]) for x in mine] == [key(name, first["ts"] - step["ts"])]
    assert out["baseline_side"]["events_total"] == len(out["baseline_side"]["events"]["ts_us"]) + out["baseline_side"]["merged_count"]


# ------------------------------------------------------------ matches


def innermost_module(evs: list[dict], op: dict) -> str | None:
    """The class of the innermost `nn.Module` call enclosing `op` on its thread (JSON only)."""
    best = None
    for m in evs:
        if (m.get("ph") == "X" and m["name"].startswith("nn.Module: ") and m.get("tid") == op.get("tid")
                and m["ts"] <= op["ts"] and op["ts"] + op["dur"] <= m["ts"] + m["dur"] + 1e-3):
            if best is None or m["ts"] >= best["ts"]:
                best = m
    return None if best is None else best["name"][len("nn.Module: "):].rsplit("_", 1)[0]


def by_key(evs, start: float, cats) -> dict:
    out = {}
    for x in x_events(evs, cats):
        out.setdefault(key(x["name"], x["ts"] - start), x)
    return out


def test_operators_are_matched_by_name_inside_the_same_module(client, events):
    out = timeline(client, "baseline", "experimental", path="0", width_px=0)
    kinds = out["kinds"]
    sides = {}
    for run, which in (("baseline", "baseline_side"), ("experimental", "experimental_side")):
        side = out[which]
        ops = by_key(events[run], side["start_us"], ("cpu_op",))
        sides[run] = {x["match"]: (x, ops.get(key(x["name"], x["ts"]))) for x in drawn(side, kinds)
                      if x["match"] is not None and x["kind"] == "operator"}
    common = set(sides["baseline"]) & set(sides["experimental"])
    assert len(common) > 50
    in_modules = 0
    for m in common:
        (bx, bj), (ex, ej) = sides["baseline"][m], sides["experimental"][m]
        assert bx["name"] == ex["name"]
        assert ex["delta"] == pytest.approx(ex["dur"] - bx["dur"], abs=2e-3) and bx["delta"] == ex["delta"]
        assert bj is not None and ej is not None
        bm, em = innermost_module(events["baseline"], bj), innermost_module(events["experimental"], ej)
        assert bm == em, (bx["name"], bm, em)
        in_modules += bm is not None
    assert in_modules > 10
    # Every match id is on both sides, once each.
    for which in ("baseline_side", "experimental_side"):
        ids = [i for i in out[which]["events"]["match"] if i is not None]
        assert len(ids) == len(set(ids))
    assert out["matched"] >= len(common)


def test_kernels_are_matched_through_their_matched_operators(client, events):
    out = timeline(client, "gpu_control", "gpu_test", path="0", width_px=0)
    kinds = out["kinds"]
    owner_match = {}
    kernels = {}
    for run, which in (("gpu_control", "baseline_side"), ("gpu_test", "experimental_side")):
        side = out[which]
        evs = events[run]
        start = side["start_us"]
        launches = launches_by_correlation(evs)
        ops_by_ext, thread_ops = {}, collections.defaultdict(list)
        for op in x_events(evs, ("cpu_op",)):
            ops_by_ext.setdefault((op.get("args") or {}).get("External id"), []).append(op)
            if start <= op["ts"] < side["end_us"]:
                thread_ops[(op["pid"], op["tid"])].append(op)
        json_kernels = by_key(evs, start, ("kernel", "gpu_memcpy", "gpu_memset"))
        op_match = {key(x["name"], x["ts"]): x["match"] for x in drawn(side, kinds) if x["kind"] == "operator"}
        for x in drawn(side, kinds):
            if x["kind"] != "kernel" or x["match"] is None:
                continue
            j = json_kernels[key(x["name"], x["ts"])]
            launch = launches[(j.get("args") or {}).get("correlation")]
            args = launch.get("args") or {}
            # Kineto's link: the operator named by the launch's External id, else the innermost one enclosing it.
            ops = [o for o in ops_by_ext.get(args.get("External id"), []) if o["ts"] <= launch["ts"] <= o["ts"] + o["dur"]]
            if not ops:
                ops = [max((o for o in thread_ops[(launch["pid"], launch["tid"])]
                            if o["ts"] <= launch["ts"] <= o["ts"] + o["dur"]), key=lambda o: (o["ts"], -o["dur"]),
                           default=None)]
            if len(ops) != 1 or ops[0] is None:
                continue
            kernels.setdefault(x["match"], {})[run] = x["name"]
            owner_match.setdefault(x["match"], {})[run] = op_match.get(key(ops[0]["name"], ops[0]["ts"] - start))
    both = [m for m, sides in owner_match.items() if len(sides) == 2]
    assert len(both) > 100
    for m in both:
        assert owner_match[m]["gpu_control"] is not None
        assert owner_match[m]["gpu_control"] == owner_match[m]["gpu_test"]
        assert kernels[m]["gpu_control"] == kernels[m]["gpu_test"]
    # Device streams are lanes of their own.
    assert any(lane["device"] for lane in out["baseline_side"]["lanes"])


def test_a_piece_only_one_run_has_matches_nothing(client):
    step = get(client, "diff/modules", baseline="baseline", experimental="experimental", path="0")
    net = next(c for c in step["children"] if c["kind"] == "module" and c["status"] == "matched")
    blocks = get(client, "diff/modules", baseline="baseline", experimental="experimental", path=net["path"])
    def walk(rows):
        for r in rows:
            yield r
    extra = [c for c in walk(blocks["children"]) if c["status"] == "experimental_only"]
    if not extra:  # the extra block sits one level lower
        inner = next(c for c in blocks["children"] if c["has_children"] and c["kind"] == "module")
        extra = [c for c in get(client, "diff/modules", baseline="baseline", experimental="experimental",
                                path=inner["path"])["children"] if c["status"] == "experimental_only"]
    assert extra
    out = timeline(client, "baseline", "experimental", path=extra[0]["path"])
    assert out["status"] == "experimental_only" and out["baseline_side"] is None
    assert out["experimental_side"]["events_total"] > 0
    # Only the enclosing pieces' own events (step, modules above) are matched.
    mine = [x for x in drawn(out["experimental_side"], out["kinds"]) if x["ts"] >= 0 and x["match"] is not None]
    assert mine == []


def test_a_window_inside_the_piece(client, events):
    full = timeline(client, "gpu_control", "gpu_test", path="0", width_px=0)
    side = full["baseline_side"]
    length = side["end_us"] - side["start_us"]
    lo, hi = length * 0.25, length * 0.5
    out = timeline(client, "gpu_control", "gpu_test", path="0", width_px=0, from_us=f"{lo:.3f}", to_us=f"{hi:.3f}")
    part = out["baseline_side"]
    assert part["window_start_us"] == pytest.approx(side["start_us"] + lo, abs=1e-3)
    want = collections.Counter(key(x["name"], x["ts"] - side["start_us"]) for x in x_events(events["gpu_control"], ("cpu_op",))
                               if side["start_us"] + lo <= x["ts"] < side["start_us"] + hi)
    got = collections.Counter(key(x["name"], x["ts"]) for x in drawn(part, out["kinds"])
                              if x["kind"] == "operator" and x["ts"] >= lo - 1e-3)
    assert want and got == want
    # Match ids are the piece's: the same event keeps its id in the window.
    ids_full = collections.defaultdict(set)
    for x in drawn(side, full["kinds"]):
        ids_full[(key(x["name"], x["ts"]), x["dur"])].add(x["match"])
    for x in drawn(part, out["kinds"]):
        assert x["match"] in ids_full[(key(x["name"], x["ts"]), x["dur"])]


@pytest.mark.parametrize("params", [
    {"path": "0", "from_us": "50", "to_us": "10"},
    {"path": "0", "width_px": "999999"},
    {"path": "0", "max_events": "0"},
    {"path": "0", "from_us": "-1"},
    {"path": "0", "from_us": "abc"},
    {"path": "99"},
    {"path": "x.y"},
])
def test_bad_parameters_are_400(client, params):
    out = get(client, "diff/timeline", status=400, baseline="baseline", experimental="experimental", **params)
    assert out["error"]


# ------------------------------------------------------------ rows


def test_no_two_events_of_a_lane_overlap_on_one_row(tmp_path_factory):
    """The demo pair, recorded as `tb-pipeline record --profile` records (its ProfilerStep opens inside the
    loader's `next()` and closes after it, so the trace's nesting puts events it overlaps on its row): every
    step's events, at full detail and as a 1,100 px window draws them, never overlap another on their row
    (their bars and labels were drawn over each other), and each step is its lane's top row."""
    from conftest import build_tb_app
    from support.group_runs import get_ready
    from support.recorded import demo_pair
    from werkzeug.test import Client

    app, plugin = build_tb_app(demo_pair.copy_to(tmp_path_factory.mktemp("demo_rows")))
    pair = dict(baseline="baseline", experimental="experimental")
    try:
        client = Client(app)
        steps = get_ready(client, "diff/modules", **pair, path="")["children"]
        checked = 0
        for step in steps:
            for width in (0, 1100):
                out = get_ready(client, "diff/timeline", **pair, path=step["path"], width_px=width)
                for side in (out["baseline_side"], out["experimental_side"]):
                    ev = side["events"]
                    rows = sorted(zip(ev["lane"], ev["depth"], ev["ts_us"], ev["dur_us"], ev["name"]))
                    latest: dict = {}
                    for lane, depth, ts, dur, name in rows:
                        assert ts >= latest.get((lane, depth), -np.inf) - 1e-3, (step["name"], lane, depth, ts,
                                                                                  side["names"][name])
                        latest[(lane, depth)] = max(latest.get((lane, depth), -np.inf), ts + dur)
                        checked += 1
                    [own] = [i for i, n in enumerate(ev["name"]) if side["names"][n] == side["piece_name"]]
                    assert ev["depth"][own] == 0, (side["piece_name"], ev["depth"][own])
        assert checked > 1000
    finally:
        plugin.close()
