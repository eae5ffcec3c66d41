"""The layering of docs/architecture.md, checked on the source (no import side effects).

formats/ and trace/ import nothing of ours; pipeline/ (statistics readers) only
formats/ and trace/; analysis/ only those; diff/ only analysis/; the writing
side (record/, diagnose/) only formats/ (diagnose's summary: analysis/ too);
werkzeug only in server/; tensorboard only in server/ and in the logdir
reader (sources/logdir.py, its filesystem layer). The leaves import nothing
of ours and any layer may import them: `errors` (typed errors every layer may
raise), `import_hook` (run a function when a module is first imported: the
writing side's DataLoader and SPDL patches) and `units` (bytes in one unit
system for every message).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "tb_pipeline_plugin"
LEAVES = {"errors", "import_hook", "struct_types", "units"}
# Layer -> the layers of ours it may import (besides itself and the leaves).
ALLOWED = {
    "formats": set(),
    "trace": set(),
    "pipeline": {"formats", "trace"},
    "analysis": {"trace", "pipeline", "formats"},
    "diff": {"analysis"},
    "sources": {"analysis", "trace", "pipeline", "formats"},
    # The writing side shares only the formats (and the import_hook leaf);
    # the launcher's auto-hook hands over to diagnostic mode under
    # TB_PIPELINE_DIAGNOSTIC_MODE=1, and diagnose's end-of-run summary reuses
    # the analysis verdicts so the terminal and the UI agree.
    "record": {"formats", "diagnose"},
    "diagnose": {"formats", "analysis"},
    # Leaves: importable from anywhere, so they import nothing of ours.
    **{leaf: set() for leaf in LEAVES},
}
THIRD_PARTY_ONLY_IN = {
    "werkzeug": {"server"},
    "tensorboard": {"server", "sources/logdir.py"},
}


def _modules():
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG)
        yield rel, ast.parse(path.read_text(encoding="utf-8"), str(path))


def _imports(rel: Path, tree: ast.AST):
    """(top-level package of ours or None, the full dotted name) of every import."""
    package = list(rel.parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield _ours(alias.name.split(".")), alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                parts = base + (node.module.split(".") if node.module else [])
                if not node.module:  # `from . import x`
                    for alias in node.names:
                        yield (parts + [alias.name])[0] if parts else alias.name, ".".join(parts + [alias.name])
                    continue
                yield parts[0] if parts else None, "tb_pipeline_plugin." + ".".join(parts)
            else:
                yield _ours(node.module.split(".")), node.module


def _ours(parts: list[str]) -> str | None:
    if parts[0] == "tb_pipeline_plugin":
        return parts[1] if len(parts) > 1 else ""
    return None


def _layer(rel: Path) -> str:
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layers_import_only_downwards(layer):
    bad = []
    for rel, tree in _modules():
        if _layer(rel) != layer:
            continue
        for ours, name in _imports(rel, tree):
            if ours is None or ours == layer or (ours in LEAVES and layer not in LEAVES):
                continue
            if ours not in ALLOWED[layer]:
                bad.append(f"{rel}: imports {name}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("library", sorted(THIRD_PARTY_ONLY_IN))
def test_framework_imports_stay_in_their_layer(library):
    allowed = THIRD_PARTY_ONLY_IN[library]
    bad = []
    for rel, tree in _modules():
        if _layer(rel) in allowed or rel.as_posix() in allowed:
            continue
        for ours, name in _imports(rel, tree):
            if ours is None and name.split(".")[0] == library:
                bad.append(f"{rel}: imports {name}")
    assert not bad, "\n".join(bad)


def test_the_checker_sees_violations(tmp_path):
    """The parser must resolve relative imports, or every check above passes vacuously."""
    tree = ast.parse("from ..diff import pair_impls\nfrom . import table\nimport werkzeug\n")
    found = list(_imports(Path("trace/x.py"), tree))
    assert ("diff", "tb_pipeline_plugin.diff") in found
    assert ("trace", "trace.table") in found
    assert (None, "werkzeug") in found
