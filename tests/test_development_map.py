"""docs/development.md's map from each part of the package to its tests stays
true: every test module is listed, and every module listed exists."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_every_test_module_is_on_the_map_and_only_those():
    text = (REPO / "docs" / "development.md").read_text()
    section = text.split("## Which tests cover what", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"\btest_\w+", section))
    present = {p.stem for p in (REPO / "tests").glob("test_*.py")}
    assert not present - listed, f"not on the map in docs/development.md: {sorted(present - listed)}"
    assert not listed - present, f"on the map but not in tests/: {sorted(listed - present)}"
