"""`tb-pipeline`: the plugin's engine on the command line.

    tb-pipeline diff BASELINE EXPERIMENTAL [--top N] [--fail-if METRIC>PCT ...] [--require-significance]
                         [--between-run-pct PCT]
    tb-pipeline record --logdir DIR [--run NAME] [--headspace N] [--repeat N] [--profile [SCHEDULE]] -- python train.py ...
    tb-pipeline summarize LOGDIR [--scheduler tcp://HOST:8786] [--processes N] [--cache-dir DIR] [--summaries-only]
    tb-pipeline noise RUN RUN [RUN ...]

BASELINE / EXPERIMENTAL are trace files or run directories. `diff` prints
the explanation (one sentence: how much slower or faster per step, and
which contributors, with their significance), the overview deltas and the
operators / kernels with the largest absolute deltas; `--fail-if
avg_step_time_us>5` makes it exit 1 when the average step time grows by
more than 5 %, so CI can gate on it (`<` gates a drop, e.g.
`gpu_utilization_pct<-10`). With `--require-significance` a gate on a
per-step metric (step time, breakdown categories) trips only when its
delta is also `significant` (outside the runs' step-to-step noise); a
tripped gate whose delta is within noise (or rests on too few steps) is
reported as NOT SIGNIFICANT and does not fail. `--between-run-pct` says
how far two recordings of one configuration land apart on this machine
(default 2 %, a dedicated machine's), which widens every noise band. Gates on other metrics
(memory, GPU utilisation) have no per-step samples and are unaffected.
`record` runs a training command with the pipeline-statistics hooks
installed and exits with the command's status; with `--repeat N` it runs it
N times into RUN/r1 ... RUN/rN, a group of recordings (RUN/recordings.json),
and exits non-zero if any recording failed; with `--profile` torch.profiler
traces a few steps into the run too (SCHEDULE: `wait=1,warmup=1,active=3,repeat=1`
by default; a script running its own profiler keeps it).
`noise` measures, from recordings of one configuration, how far runs land
apart on this machine, and prints the `--between-run-pct` that covers it.
`summarize` parses every trace of a logdir into the plugin's cache (on a
Dask cluster with `--scheduler`), so TensorBoard serves them without
parsing; `--summaries-only` writes only each rank's record for the
Distributed tab (a few hundred bytes a trace); exit 1 if a file failed.

Exit status: 0 fine, 1 a `--fail-if` gate tripped, 2 bad usage or input,
or a gate that cannot be evaluated because its metric is null on either side
(e.g. `memory.peak_bytes` for a trace without memory events); 2 wins over 1,
since the verdict is incomplete.
"""
from __future__ import annotations

import argparse
import math
import numbers
import os
import re
import sys
from dataclasses import dataclass

import pandas as pd

from .diff.delta import pct_name
from .diff.significance import SIGNIFICANT, TOO_FEW_STEPS
from .errors import MissingExtra, PluginError
from .diff.overview import OVERVIEW_METRICS

EXIT_OK, EXIT_REGRESSION, EXIT_USAGE = 0, 1, 2
EXIT_CANNOT_EVALUATE = EXIT_USAGE
_NUMERIC_METRICS = [m for m, _, unit in OVERVIEW_METRICS if unit is not None]
_GATE = re.compile(r"^\s*([\w.]+)\s*([<>])\s*([-+]?\d+(?:\.\d+)?)\s*%?\s*$")


@dataclass(frozen=True)
class Gate:
    metric: str
    op: str  # ">" fails on a rise above pct, "<" on a fall below pct
    pct: float

    def unavailable(self, row: dict) -> str | None:
        """Why the gate cannot be evaluated (its metric is null on a side), else None."""
        missing = [side for side in ("baseline", "experimental") if not _is_value(row.get(side))]
        if not missing and row.get("delta") is not None:
            return None
        sides = " and ".join(missing) or "either side"
        return f"--fail-if {self.metric}{self.op}{self.pct:g}: {self.metric} is null for the {sides} (the trace does not record it)"

    def check(self, row: dict) -> str | None:
        """A message when the gate trips, else None (also when it cannot be
        evaluated: ask `unavailable` first). With a baseline of 0 the change
        is unbounded: any rise trips `>`, any fall trips `<`."""
        delta, pct = row["delta"], row["delta_pct"]
        if delta is None:
            return None
        change = pct if pct is not None else math.copysign(math.inf, delta) if delta else 0.0
        tripped = change > self.pct if self.op == ">" else change < self.pct
        if not tripped:
            return None
        shown = f"{change:+.2f}%" if math.isfinite(change) else f"{delta:+g} from a baseline of 0"
        return f"{self.metric} changed {shown}, limit {self.op}{self.pct:g}%"


def _percentage(text: str) -> float:
    from .diff.significance import percentage

    pct = percentage(text)
    if pct is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage from 0 to 100")
    return pct


def parse_gate(text: str) -> Gate:
    m = _GATE.match(text)
    if not m:
        raise argparse.ArgumentTypeError(f"expected METRIC>PCT or METRIC<PCT (e.g. avg_step_time_us>5), got {text!r}")
    metric, op, pct = m.group(1), m.group(2), float(m.group(3))
    if metric not in _NUMERIC_METRICS:
        raise argparse.ArgumentTypeError(f"unknown metric {metric!r}; one of: {', '.join(_NUMERIC_METRICS)}")
    return Gate(metric, op, pct)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tb-pipeline", description="Why is one PyTorch training run slower than another?")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    d = sub.add_parser("diff", help="compare a baseline and an experimental run",
                       description="Compare two runs (trace files or run directories).")
    d.add_argument("baseline", help="baseline trace file or run directory")
    d.add_argument("experimental", help="experimental trace file or run directory")
    d.add_argument("--b-worker", help="baseline worker (run directories; default: the first)")
    d.add_argument("--b-span", help="baseline span (default: the last)")
    d.add_argument("--e-worker", help="experimental worker")
    d.add_argument("--e-span", help="experimental span")
    d.add_argument("--top", type=int, default=10, metavar="N", help="operators / kernels to list (default 10)")
    d.add_argument("--group-by", choices=("name", "name_and_shape"), default="name", help="operator grouping")
    d.add_argument("--fail-if", type=parse_gate, action="append", default=[], metavar="METRIC>PCT",
                   help=f"exit 1 if METRIC's delta %% is above PCT (or below, with <); METRIC: {', '.join(_NUMERIC_METRICS)}")
    d.add_argument("--require-significance", action="store_true",
                   help="a --fail-if gate on a per-step metric trips only when its delta is significant "
                        "(outside the step-to-step noise; see docs/http_api.md, Significance)")
    d.add_argument("--between-run-pct", type=_percentage, metavar="PCT",
                   help="how far two recordings of one configuration land apart on this machine, in %% of a "
                        "quantity (one standard deviation; default 2, or TB_PIPELINE_BETWEEN_RUN_PCT): part of "
                        "every noise band (docs/http_api.md, Significance)")
    d.set_defaults(run=run_diff)
    r = sub.add_parser("record", help="run a training command and record its pipeline statistics (and traces)",
                       description="Run CMD with recording hooks installed (DataLoader iteration, SPDL stage "
                                   "stats, host metrics); statistics go to LOGDIR/RUN/pipeline/, with --profile "
                                   "torch.profiler traces to LOGDIR/RUN/. No code change.")
    r.add_argument("--logdir", required=True, help="TensorBoard logdir to write into")
    r.add_argument("--run", dest="run_name", help="run name (default: timestamp and host name)")
    r.add_argument("--headspace", type=int, default=0, metavar="N",
                   help="cache the loader's first N batches and replay them: the step rate without data loading")
    r.add_argument("--host-interval", type=float, default=1.0, metavar="SECONDS",
                   help="host metrics sampling period (default 1; 0 disables)")
    r.add_argument("--spdl-interval", type=float, default=1.0, metavar="SECONDS",
                   help="SPDL stage statistics period (default 1)")
    r.add_argument("--repeat", type=int, metavar="N",
                   help="record CMD N times, one process after the other, into RUN/r1 ... RUN/rN: a group "
                        "of recordings (RUN/recordings.json); torch.profiler's tensorboard_trace_handler "
                        "traces go into each recording's directory")
    r.add_argument("--profile", nargs="?", const="", metavar="SCHEDULE",
                   help="also trace a few steps with torch.profiler (CPU, and CUDA when available; shapes, stacks, "
                        "modules) into the run, stepped at the step boundaries the recorder sees. SCHEDULE: "
                        "comma-separated KEY=N of torch.profiler.schedule (skip_first, wait, warmup, active, repeat; "
                        "default wait=1,warmup=1,active=3,repeat=1) and memory=1 for profile_memory. A script that "
                        "starts its own torch.profiler keeps it and gets no second one")
    r.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD ...", help="the training command")
    r.set_defaults(run=run_record)
    s = sub.add_parser("summarize", help="parse every trace of a logdir into the plugin's cache",
                       description="Write the cache entries the TensorBoard plugin maps instead of parsing.")
    s.add_argument("logdir", help="the logdir TensorBoard will serve (local, gs://, s3://)")
    s.add_argument("--scheduler", help="Dask distributed scheduler address (default: a local process pool)")
    s.add_argument("--processes", type=int, help="local pool size (default: TB_PIPELINE_PARSE_WORKERS or cores)")
    s.add_argument("--cache-dir", help="cache directory (default: TB_PIPELINE_CACHE_DIR or the user cache dir)")
    s.add_argument("--summaries-only", action="store_true",
                   help="only each rank's record for the Distributed tab (the rank roll-up), no cache entries: "
                        "a few hundred bytes a trace instead of several times its size; other tabs parse on request")
    s.set_defaults(run=run_summarize)
    n = sub.add_parser("noise", help="measure how far recordings of one configuration land apart",
                       description="Given two or more recordings of the same configuration on this machine "
                                   "(trace files or run directories), print the between-run spread of the step "
                                   "time and of each part of the step, and the --between-run-pct that covers it.")
    n.add_argument("replicas", nargs="+", metavar="RUN", help="recordings of one configuration (at least 2; 3+ is better)")
    n.set_defaults(run=run_noise)
    return parser


def run_summarize(args, out=None) -> int:
    from .sources.cache import CacheConfig
    from .sources.summarize import summarize

    out = out or sys.stdout
    env = dict(os.environ, TB_PIPELINE_CACHE_DIR=args.cache_dir) if args.cache_dir else os.environ
    cache = CacheConfig.from_env(env)
    results = summarize(args.logdir, scheduler=args.scheduler, processes=args.processes, cache=cache,
                        summaries_only=args.summaries_only)
    for r in results:
        if r.status == "failed":
            print(f"failed: {r.path}: {r.error}", file=out)
    counts = {k: sum(1 for r in results if r.status == k) for k in ("parsed", "summarised", "cached", "failed")}
    print(f"{len(results)} trace files: {counts['parsed']} parsed, "
          + (f"{counts['summarised']} summarised (rank records only), " if counts["summarised"] else "")
          + f"{counts['cached']} already cached, {counts['failed']} failed; cache: {cache.root}", file=out)
    if results.cap_note:
        print(results.cap_note, file=out)
    return EXIT_REGRESSION if counts["failed"] else EXIT_OK


def run_noise(args, out=None) -> int:
    from .compare import load
    from .diff.noise import between_run_spread, recommended_pct

    out = out or sys.stdout
    spread = between_run_spread([load(r).ledger() for r in args.replicas])
    print(f"Between-run spread of one configuration over {len(args.replicas)} recordings "
          "(one standard deviation of a run's mean, % of it)", file=out)
    print(_table(spread, ["quantity", "mean_us", "spread_pct"]), file=out)
    pct = recommended_pct(spread)
    print(f"\nJudge diffs on this machine with --between-run-pct {pct:g} "
          f"(or TB_PIPELINE_BETWEEN_RUN_PCT={pct:g} for TensorBoard).", file=out)
    if len(args.replicas) < 3:
        print("Two recordings give one pair: record a third for a steadier estimate.", file=out)
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (OSError, ValueError, MissingExtra, PluginError) as exc:
        print(f"tb-pipeline: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


def run_record(args) -> int:
    from .record.launcher import run_recorded

    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    return run_recorded(cmd, args.logdir, args.run_name, args.headspace, args.host_interval, args.spdl_interval,
                        args.repeat, args.profile)


def run_diff(args, out=None) -> int:
    out = out or sys.stdout
    if args.top < 0:
        raise ValueError("--top must be >= 0")
    if args.between_run_pct is None:
        return _diff(args, out)
    from .diff.significance import BETWEEN_RUN_ENV

    # The significance module reads it from the environment on every
    # comparison, as it does in the TensorBoard process; set for this diff
    # only (a notebook or test calling `main` twice must not inherit it).
    before = os.environ.get(BETWEEN_RUN_ENV)
    os.environ[BETWEEN_RUN_ENV] = repr(args.between_run_pct)
    try:
        return _diff(args, out)
    finally:
        if before is None:
            del os.environ[BETWEEN_RUN_ENV]
        else:
            os.environ[BETWEEN_RUN_ENV] = before


def _diff(args, out) -> int:
    from .compare import compare
    from .diff.pair_impls import KERNEL_PRIMARY

    c = compare(args.baseline, args.experimental, b_worker=args.b_worker, b_span=args.b_span,
                e_worker=args.e_worker, e_span=args.e_span, group_by=args.group_by)
    print(f"baseline:     {args.baseline}\nexperimental: {args.experimental}\n", file=out)
    explanation = c.explanation
    print(explanation["sentence"], file=out)
    noise = explanation["noise"]
    if noise["source"] == "measured":
        print(f"({noise['note']}.)", file=out)
    else:
        print(f"(Noise bands assume recordings of one configuration land within ±{explanation['between_run_pct']:g} % "
              "of each other: --between-run-pct; `tb-pipeline record --repeat 3` records groups whose noise is "
              "measured.)", file=out)
    if explanation["note"]:
        print(f"({explanation['note']})", file=out)
    if explanation.get("pipeline"):
        _print_pipeline(explanation["pipeline"], out)
    memory = c.memory
    if memory["sentence"]:
        print(f"\nMemory: {memory['sentence']}", file=out)
    contributors = c.contributors
    if len(contributors):
        print(f"\nTop {args.top} contributors to the step-time delta (µs)", file=out)
        print(_table(contributors.head(args.top), ["name", "baseline_us", "experimental_us", "delta_us", "share_pct",
                                                   "verdict", "ci_low_us", "ci_high_us"]), file=out)
    overview = c.overview.reset_index()
    overview["verdict"] = [s["verdict"] if isinstance(s, dict) else None for s in overview["significance"]]
    print("\nOverview (delta = experimental - baseline)", file=out)
    print(_table(overview, ["metric", "unit", "baseline", "experimental", "delta", "delta_pct", "verdict"]), file=out)

    ops = c.operators
    primary = c.operator_primary
    print(f"\nTop {args.top} operators by |delta {primary}| (µs)", file=out)
    print(_table(ops.head(args.top), ["name"] + ([] if args.group_by == "name" else ["input_shape"]) + [
        "baseline_calls", "experimental_calls", *_delta_columns(primary)]), file=out)

    kernels = c.kernels
    print(f"\nTop {args.top} kernels by |delta {KERNEL_PRIMARY}| (µs)", file=out)
    if len(kernels):
        print(_table(kernels.head(args.top), ["name", "baseline_calls", "experimental_calls",
                                              *_delta_columns(KERNEL_PRIMARY)]), file=out)
    else:
        print("(no kernels in either trace)", file=out)

    rows = {r["metric"]: _clean(r) for r in overview.to_dict("records")}
    unknown = [msg for gate in args.fail_if if (msg := gate.unavailable(rows[gate.metric]))]
    failures, noise = [], []
    for gate in args.fail_if:
        msg = gate.check(rows[gate.metric])
        if msg is None:
            continue
        sig = rows[gate.metric].get("significance")
        # Metrics without per-step samples (memory, device) have no noise model: their gates stand.
        if args.require_significance and isinstance(sig, dict) and sig["verdict"] != SIGNIFICANT:
            noise.append(f"{msg}, but {_not_significant(sig)}")
        else:
            failures.append(msg)
    for msg in failures:
        print(f"REGRESSION: {msg}", file=out)
    for msg in noise:
        print(f"NOT SIGNIFICANT: {msg}", file=out)
    for msg in unknown:
        print(f"CANNOT EVALUATE: {msg}", file=out)
        print(f"tb-pipeline: cannot evaluate {msg}", file=sys.stderr)
    if unknown:
        return EXIT_CANNOT_EVALUATE
    return EXIT_REGRESSION if failures else EXIT_OK


def _not_significant(sig: dict) -> str:
    """Why a tripped gate's delta is not acted on, from its Significance."""
    if sig["verdict"] == TOO_FEW_STEPS:
        return (f"{sig['label']} ({sig['baseline_steps']} vs {sig['experimental_steps']} steps; "
                f"{sig['min_steps']} per run needed)")
    return (f"{sig['label']}: the delta is inside the runs' noise "
            f"({_confidence_pct(sig['confidence'])} interval {sig['ci_low']:g} to {sig['ci_high']:g})")


def _confidence_pct(confidence: float) -> str:
    """The level as a percentage, to two decimals at most (0.99375 -> "99.38 %")."""
    return f"{round(100 * confidence, 2):g} %"


def _print_pipeline(part: dict, out) -> None:
    """The explanation's pipeline part (both runs have recorded statistics)."""
    w, ib, st = part["data_wait"], part["input_bound"], part["stage"]
    sig = w["significance"]
    print("\nPipeline statistics (recorded steps)", file=out)
    print(_table(pd.DataFrame([{"metric": "data wait per step (µs)", "baseline": w["baseline_us"],
                                "experimental": w["experimental_us"], "delta": w["delta_us"],
                                "delta_pct": w["delta_pct"], "verdict": sig["verdict"],
                                "steps": f"{sig['baseline_steps']} vs {sig['experimental_steps']}"},
                               {"metric": "input-bound", "baseline": ib["baseline"], "experimental": ib["experimental"],
                                "delta": "changed" if ib["changed"] else "same", "delta_pct": None, "verdict": None,
                                "steps": None}]),
                 ["metric", "baseline", "experimental", "delta", "delta_pct", "verdict", "steps"]), file=out)
    if st is not None:
        print(f"stage changed most: {st['stage']} (qps {_cell(st['baseline_qps'])} -> {_cell(st['experimental_qps'])}, "
              f"{_cell(st['delta_qps_pct'])} %)", file=out)
    gil = part.get("gil")
    if gil is not None:
        print(f"GIL-bound ({gil['run']}): stage {gil['stage']} limits the pipeline; more threads will not help, "
              "processes or a GIL-releasing implementation would", file=out)
    loader = part.get("loader")
    if loader is not None:
        print(f"DataLoader ({loader['run']}): {loader['part']} limits loading ({loader['stage']})", file=out)


def _delta_columns(column: str) -> list[str]:
    return [f"baseline_{column}", f"experimental_{column}", f"delta_{column}", pct_name(column)]


def _clean(row: dict) -> dict:
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}


def _is_value(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and not math.isnan(v)


def _table(frame: pd.DataFrame, columns: list[str]) -> str:
    """Plain aligned text: numbers right-aligned, text left, '-' for null."""
    header = [_short(c) for c in columns]
    body = [[_cell(v) for v in frame[c].tolist()] for c in columns]
    widths = [max([len(h)] + [len(v) for v in col]) for h, col in zip(header, body)]
    numeric = [all(_is_num(v) for v in frame[c].tolist()) for c in columns]
    lines = ["  ".join(h.rjust(w) if n else h.ljust(w) for h, w, n in zip(header, widths, numeric))]
    for i in range(len(frame)):
        lines.append("  ".join(col[i].rjust(w) if n else col[i].ljust(w) for col, w, n in zip(body, widths, numeric)))
    return "\n".join(line.rstrip() for line in lines)


def _short(column: str) -> str:
    return column.replace("baseline_", "b_").replace("experimental_", "e_")


def _is_num(v) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))


def _cell(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:,.3f}".rstrip("0").rstrip(".") if abs(v) < 1e15 else f"{v:.3e}"
    if isinstance(v, str) and len(v) > 60:
        return v[:57] + "..."
    return str(v)


if __name__ == "__main__":
    sys.exit(main())
