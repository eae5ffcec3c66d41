"""The verdict table printed at the end of a diagnose run."""
from __future__ import annotations

from typing import TextIO


def threads_line(row) -> str:
    """"torch intra-op threads: 2 a thread worker, 1 a process worker"; "" when unknown (no torch)."""
    parts = [f"{n} a {what} worker" for n, what in ((row.thread_intra_op_threads, "thread"),
                                                    (row.process_intra_op_threads, "process")) if n]
    return f"torch intra-op threads: {', '.join(parts)}" if parts else ""


def print_summary(result, out: TextIO) -> None:
    # Lazy: the writing side must not import the reading side at import time.
    from ..analysis.diagnostic.report import verdicts

    table = verdicts(result.records)
    print(f"\n[diagnose] results: {result.path}" + ("  (CUT SHORT: " + result.reason + ")" if result.cut_short
                                                   else ""), file=out)
    for row in table.itertuples():
        best = []
        if row.best_thread_concurrency:
            best.append(f"threads x{row.best_thread_concurrency} {row.best_thread_qps:.1f} QPS")
        if row.best_process_concurrency:
            best.append(f"processes x{row.best_process_concurrency} {row.best_process_qps:.1f} QPS")
        errors = f"  errors {row.errors}/{row.items}" if row.errors else ""
        print(f"  {row.stage}: {row.label.upper()}  best: {', '.join(best) or '-'}{errors}", file=out)
        print(f"      {row.reason}", file=out)
        if threads_line(row):
            print(f"      {threads_line(row)}", file=out)
        for skip in row.skipped_levels:
            print(f"      not run: {skip['executor']} x{skip['concurrency']} ({skip['cause']}: {skip['reason']})",
                  file=out)
    out_dir = result.path.resolve().parent
    if out_dir.name == "diagnostic":  # {logdir}/{run}/diagnostic/diagnostic.jsonl
        logdir = out_dir.parent.parent
        print(f"[diagnose] view: tensorboard --logdir {logdir}  (Pipeline plugin, Diagnostic view)",
              file=out)
    out.flush()
