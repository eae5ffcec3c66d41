"""docs/development.md's map of tests/ follows from the folders: tests/ mirrors the code, one folder per layer or
subject; every folder holding test modules is on the map with what it covers, every folder on the map exists,
and no test module sits outside one (helpers live in tests/support/, never a test)."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"


def _map_folders() -> set[str]:
    text = (REPO / "docs" / "development.md").read_text()
    section = text.split("## Which tests cover what", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `tests/(\w+)/` \|", section, re.M))


def test_every_test_folder_is_on_the_map_and_only_those():
    listed = _map_folders()
    with_tests = {p.parent.relative_to(TESTS).as_posix() for p in TESTS.rglob("test_*.py")}
    assert not with_tests - listed, f"not on the map in docs/development.md: {sorted(with_tests - listed)}"
    assert not (listed - {"support"}) - with_tests, f"on the map without tests: {sorted(listed - with_tests)}"
    assert "support" in listed and not list((TESTS / "support").glob("test_*.py")), "tests/support/ holds helpers only"


def test_no_test_module_sits_outside_a_folder():
    assert not sorted(p.name for p in TESTS.glob("test_*.py")), "a test module goes in the folder of what it covers"
    deeper = sorted(str(p.relative_to(TESTS)) for p in TESTS.glob("*/*/**/test_*.py"))
    assert not deeper, f"one level of folders: {deeper}"


def test_test_module_names_are_unique():
    """pytest imports every module by its file name (tests/ has no packages but support/)."""
    names = [p.name for p in TESTS.rglob("test_*.py")]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
