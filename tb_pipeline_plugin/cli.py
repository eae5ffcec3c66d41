"""`tb-pipeline`: the plugin's engine on the command line.

    tb-pipeline diff BASELINE EXPERIMENTAL [--top N] [--fail-if METRIC>PCT ...] [--require-significance]
                         [--between-run-pct PCT] [--format text|markdown|html|json|junit] [--output FILE]
                         [--baseline-samples N] [--experimental-samples N] [--baseline-tokens N] [--experimental-tokens N]
    tb-pipeline report REPORT.json [--format FORMAT] [--output FILE]
    tb-pipeline record --logdir DIR [--run NAME] [--headspace N] [--repeat N] [--profile [SCHEDULE]] -- python train.py ...
    tb-pipeline summarize LOGDIR [--scheduler tcp://HOST:8786] [--processes N] [--cache-dir DIR] [--summaries-only]
    tb-pipeline noise RUN RUN [RUN ...]

BASELINE / EXPERIMENTAL are trace files or run directories. `diff` prints
how the runs differ besides the change (batch, device, profiler options,
versions, host load), the verdict, the explanation (one sentence: how much
slower or faster per step, or per sample / token when the runs' batches
differ, and which contributors, with their significance), what would make an
inconclusive answer conclusive, the overview deltas, the pipeline
statistics, memory, the operators / kernels with the largest absolute
deltas and every gate's outcome, in the `--format` asked for (text;
markdown for a pull request or $GITHUB_STEP_SUMMARY; one self-contained
HTML file; JSON of docs/report.schema.json; JUnit XML, a test case per
gate), to stdout or `--output FILE` (tb_pipeline_plugin/report/). `report`
renders a saved JSON report in another format. `--fail-if
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
since the verdict is incomplete. The same in every format.
"""
from __future__ import annotations

import argparse
import os
import sys

from .errors import MissingExtra, PluginError
# The gate's parsing and outcomes live with the report every format renders;
# these names stay importable from here (`tb_pipeline_plugin.cli.Gate`, ...).
from .report import FORMATS
from .report.gates import (  # noqa: F401 - re-exported
    CANNOT_EVALUATE, EXIT_CANNOT_EVALUATE, EXIT_OK, EXIT_REGRESSION, EXIT_USAGE, NUMERIC_METRICS, Gate, parse_gate,
)


def _percentage(text: str) -> float:
    from .diff.significance.method import percentage

    pct = percentage(text)
    if pct is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage from 0 to 100")
    return pct


def _per_step(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < 1e12:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive count per step")
    return value


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
                   help=f"exit 1 if METRIC's delta %% is above PCT (or below, with <); METRIC: {', '.join(NUMERIC_METRICS)}")
    d.add_argument("--require-significance", action="store_true",
                   help="a --fail-if gate on a per-step metric trips only when its delta is significant "
                        "(outside the step-to-step noise; see docs/http_api.md, Significance)")
    d.add_argument("--between-run-pct", type=_percentage, metavar="PCT",
                   help="how far two recordings of one configuration land apart on this machine, in %% of a "
                        "quantity (one standard deviation; default 2, or TB_PIPELINE_BETWEEN_RUN_PCT): part of "
                        "every noise band (docs/http_api.md, Significance)")
    for side in ("baseline", "experimental"):
        d.add_argument(f"--{side}-samples", type=_per_step, metavar="N",
                       help=f"samples per step of the {side} run, where its pipeline statistics do not say (a "
                            "trace-only run): when the runs' differ, the verdict is per sample")
        d.add_argument(f"--{side}-tokens", type=_per_step, metavar="N",
                       help=f"tokens per step of the {side} run: when both runs' are known and differ, the verdict "
                            "is per token")
    _format_options(d)
    d.set_defaults(run=run_diff)
    rep = sub.add_parser("report", help="render a saved JSON report (diff --format json) in another format",
                         description="Render a report written by `tb-pipeline diff --format json` as text, markdown, "
                                     "html, json or junit: compute once, share in every form.")
    rep.add_argument("report", help="the JSON report file")
    _format_options(rep)
    rep.set_defaults(run=run_report)
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


def _format_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=list(FORMATS), default="text",
                   help="text (default); markdown (a pull request, $GITHUB_STEP_SUMMARY); html (one self-contained "
                        "file); json (docs/report.schema.json); junit (a test case per --fail-if gate)")
    p.add_argument("--output", metavar="FILE", help="write the report to FILE instead of stdout")


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
    from .diff.significance.between_runs import between_run_spread, recommended_pct
    from .report.text import table

    out = out or sys.stdout
    spread = between_run_spread([load(r).ledger() for r in args.replicas])
    print(f"Between-run spread of one configuration over {len(args.replicas)} recordings "
          "(one standard deviation of a run's mean, % of it)", file=out)
    print(table(spread.to_dict("records"), ["quantity", "mean_us", "spread_pct"]), file=out)
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
    return _diff(args, out)


def _diff(args, out) -> int:
    from .snapshot_diff import is_snapshot_pair
    if is_snapshot_pair(args.baseline, args.experimental):
        return _diff_snapshots(args, out)
    from .compare import compare
    from .diff.significance.method import NoisePolicy
    from .report.build import build

    # The flag is this diff's policy; without it, the environment's (as the TensorBoard process reads it).
    noise = None if args.between_run_pct is None else NoisePolicy(args.between_run_pct)
    c = compare(args.baseline, args.experimental, b_worker=args.b_worker, b_span=args.b_span,
                e_worker=args.e_worker, e_span=args.e_span, group_by=args.group_by,
                baseline_samples=args.baseline_samples, experimental_samples=args.experimental_samples,
                baseline_tokens=args.baseline_tokens, experimental_tokens=args.experimental_tokens, noise=noise)
    for note in c.notes:  # a warning each, on one line: what was left out of a run
        print(f"tb-pipeline: {note}", file=sys.stderr)
    report = build(c, (args.baseline, args.experimental), args.top, args.fail_if, args.require_significance)
    for g in report.gates:
        if g.outcome == CANNOT_EVALUATE:
            print(f"tb-pipeline: cannot evaluate {g.message}", file=sys.stderr)
    _write(report, args.format, args.output, out)
    return report.exit_status


def _diff_snapshots(args, out) -> int:
    """Two CUDA memory snapshots, without their runs (tb_pipeline_plugin/snapshot_diff.py)."""
    from .snapshot_diff import render, snapshot_pair

    text = render(snapshot_pair(args.baseline, args.experimental), args.format)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        out.write(text)
    return EXIT_OK


def run_report(args, out=None) -> int:
    from .report.json_format import decode

    with open(args.report, "rb") as f:
        data = f.read()
    try:
        report = decode(data)
    except ValueError as exc:
        raise ValueError(f"{args.report}: {exc}") from None
    _write(report, args.format, args.output, out)
    return EXIT_OK


def _write(report, fmt: str, path: str | None, out) -> None:
    from .report import render

    text = render(report, fmt)
    if path is None:
        (out or sys.stdout).write(text)
        return
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"tb-pipeline: wrote {path} ({fmt}, {len(text.encode('utf-8')):,} bytes)", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
