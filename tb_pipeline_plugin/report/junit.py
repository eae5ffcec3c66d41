"""`--format junit`: JUnit XML, which CI systems (GitHub Actions test
reporters, GitLab, Jenkins) list as tests.

The verdict is a test case of its own, first (`tb_pipeline.verdict`): it
always passes, so a report without `--fail-if` is one passing test, not
`tests="0"`, which several reporters treat as a failed run; its text is the
verdict and the sentence. Then one test case per `--fail-if` gate: a failed
gate is a `<failure>` whose message and text carry the numbers, a gate that
cannot be evaluated an `<error>`, a passed or not-significant gate passes
(its message says which). Only the gates judge: a tripped gate fails its
own case and no other, so a regression is counted once. Each case's
`<properties>` hold its numbers as the report has them; the suite's hold
the verdict and the sentence. The exit status is the diff's (0, 1, 2),
whatever the format.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET

from .gates import CANNOT_EVALUATE, FAILED, OUTCOME_WORDS
from .model import Report
from .words import headline, signed, signed_pct, value

SUITE = "tb-pipeline diff"
VERDICT_CLASS = "tb_pipeline.verdict"
GATE_CLASS = "tb_pipeline.gates"


def render(r: Report) -> str:
    failures = sum(g.outcome == FAILED for g in r.gates)
    errors = sum(g.outcome == CANNOT_EVALUATE for g in r.gates)
    counts = {"tests": str(1 + len(r.gates)), "failures": str(failures), "errors": str(errors), "skipped": "0"}
    root = ET.Element("testsuites", name=SUITE, **counts)
    suite = ET.SubElement(root, "testsuite", name=f"{SUITE} {r.baseline.source} {r.experimental.source}", **counts)
    lines = [headline(r), r.sentence] + ([f"What would make it conclusive: {r.conclusive.text}"]
                                          if r.conclusive else [])
    _properties(suite, {"baseline": r.baseline.source, "experimental": r.experimental.source,
                        "verdict": lines[0], "sentence": r.sentence, "exit_status": r.exit_status})
    _verdict_case(suite, r, lines)
    for g in r.gates:
        case = ET.SubElement(suite, "testcase", classname=GATE_CLASS, name=g.gate, time="0")
        _properties(case, {"metric": g.name, "limit_pct": g.limit_pct, "unit": g.unit, "baseline": g.baseline,
                           "experimental": g.experimental, "delta": g.delta, "delta_pct": g.delta_pct,
                           "outcome": g.outcome,
                           "verdict": g.significance.verdict if g.significance else None})
        numbers = (f"{g.name}: baseline {value(g.baseline, g.unit)}, experimental {value(g.experimental, g.unit)}, "
                   f"Δ {signed(g.delta, g.unit)} ({signed_pct(g.delta_pct)}); limit {g.gate[len(g.name):]} %")
        message = f"{OUTCOME_WORDS[g.outcome]}: {g.message}"
        if g.outcome == FAILED:
            ET.SubElement(case, "failure", message=message, type="regression").text = numbers
        elif g.outcome == CANNOT_EVALUATE:
            ET.SubElement(case, "error", message=message, type="cannot_evaluate").text = numbers
        else:
            ET.SubElement(case, "system-out").text = f"{message}\n{numbers}"
    ET.SubElement(suite, "system-out").text = "\n".join(lines)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _verdict_case(suite: ET.Element, r: Report, lines: list[str]) -> None:
    step = r.step
    case = ET.SubElement(suite, "testcase", classname=VERDICT_CLASS, name=f"step time per {step.unit}", time="0")
    _properties(case, {"verdict": step.significance.verdict, "direction": step.direction, "unit": "us",
                       "baseline": step.baseline_us, "experimental": step.experimental_us, "delta": step.delta_us,
                       "delta_pct": step.delta_pct, "gates": len(r.gates),
                       # The CUDA memory snapshots' figures (bytes: baseline, experimental, delta), when any.
                       **{m.name: f"{m.baseline} {m.experimental} {m.delta}" for m in r.memory.snapshot_rows}})
    ET.SubElement(case, "system-out").text = "\n".join(lines)


def _properties(parent: ET.Element, values: dict) -> None:
    props = ET.SubElement(parent, "properties")
    for name, v in values.items():
        if v is not None:
            ET.SubElement(props, "property", name=name, value=repr(v) if isinstance(v, float) else str(v))
