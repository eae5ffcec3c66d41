"""The layering of docs/architecture.md, checked on the source (no import side effects).

formats/ and trace/ import nothing of ours; readers/ (statistics readers) only
formats/ and trace/; analysis/ only those; diff/ only analysis/; the writing
side (record/, diagnose/) only formats/ (diagnose's summary: analysis/ too);
report/ (the CLI's reports) only compare.py and diff/;
werkzeug only in server/; tensorboard only in server/ and in the filesystem
layer of discovery and loading (sources/filesystem.py: gfile, for remote
logdirs). No Python file of the package is over 500 lines. The leaves import nothing
of ours and any layer may import them: `errors` (typed errors every layer may
raise), `import_hook` (run a function when a module is first imported: the
writing side's DataLoader and SPDL patches), `byte_units` (bytes in one unit
system for every message) and `contract` (every answer's Struct: the routes,
diff/'s impls and the CLI's report carry them). No module imports one that
imports it back, at import time or inside a function.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "tb_pipeline_plugin"
LEAVES = {"errors", "import_hook", "struct_types", "bounded_cache", "byte_units", "cores", "contract"}
# Layer -> the layers of ours it may import (besides itself and the leaves).
ALLOWED = {
    "formats": set(),
    "trace": set(),
    "readers": {"formats", "trace"},
    "analysis": {"trace", "readers", "formats"},
    "diff": {"analysis"},
    "sources": {"analysis", "trace", "readers", "formats"},
    # The writing side shares only the formats (and the import_hook leaf);
    # the launcher's auto-hook hands over to diagnostic mode under
    # TB_PIPELINE_DIAGNOSTIC_MODE=1, and diagnose's end-of-run summary reuses
    # the analysis verdicts so the terminal and the UI agree.
    "record": {"formats", "diagnose"},
    "diagnose": {"formats", "analysis"},
    # The reports of `tb-pipeline diff`: rendered from compare.py's Comparison
    # (the routes' impls) and diff/'s words; never the server.
    "report": {"compare", "diff"},
    # Leaves: importable from anywhere, so they import nothing of ours.
    **{leaf: set() for leaf in LEAVES},
}
THIRD_PARTY_ONLY_IN = {
    "werkzeug": {"server"},
    "tensorboard": {"server", "sources/filesystem.py"},
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


MAX_LINES = 500


def test_no_python_file_over_500_lines():
    """A module is one concern: a file over MAX_LINES lines is split by subject."""
    over = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES:
            over.append(f"{rel}: {lines} lines")
    assert not over, "\n".join(over)


def test_the_checker_sees_violations(tmp_path):
    """The parser must resolve relative imports, or every check above passes vacuously."""
    tree = ast.parse("from ..diff import pair_impls\nfrom . import table\nimport werkzeug\n")
    found = list(_imports(Path("trace/x.py"), tree))
    assert ("diff", "tb_pipeline_plugin.diff") in found
    assert ("trace", "trace.table") in found
    assert (None, "werkzeug") in found


def _module_name(rel: Path) -> str:
    parts = list(rel.with_suffix("").parts)
    return ".".join(["tb_pipeline_plugin"] + (parts[:-1] if parts[-1] == "__init__" else parts))


def _import_graph(in_functions: bool = False) -> dict[str, set[str]]:
    """Module -> the modules of ours it imports when it is imported (module
    level, `if`/`try` blocks included); with `in_functions`, also those it
    imports anywhere else (inside a function or method: they run when it is
    called, so they close no circle at import time, but they are a
    dependency all the same, usually one hidden to dodge a circle).
    Importing a.b.c runs the packages a and a.b first, unless the importer
    is inside them (they are running already)."""
    trees = {_module_name(rel): (rel, tree) for rel, tree in _modules()}
    graph = {}
    for name, (rel, tree) in trees.items():
        package = name.split(".") if rel.name == "__init__.py" else name.split(".")[:-1]
        found = set()
        for top in tree.body:
            for node in ast.walk(top) if in_functions or isinstance(top, (ast.If, ast.Try)) else [top]:
                if isinstance(node, ast.Import):
                    found |= {a.name for a in node.names if a.name.startswith("tb_pipeline_plugin")}
                elif isinstance(node, ast.ImportFrom):
                    module = (".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
                              if node.level else node.module or "")
                    if module.startswith("tb_pipeline_plugin"):
                        found |= {f"{module}.{a.name}" if f"{module}.{a.name}" in trees else module for a in node.names}
        for target in list(found):
            parts = target.split(".")
            found |= {".".join(parts[:i]) for i in range(2, len(parts))
                      if not (name + ".").startswith(".".join(parts[:i]) + ".")}
        graph[name] = {t for t in found if t in trees and t != name}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v), on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while not group or group[-1] != v:
                group.append(stack.pop())
                on.discard(group[-1])
            if len(group) > 1:
                out.append(sorted(group))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_import_circle():
    assert not _circles(_import_graph())


def test_no_import_circle_through_imports_in_functions():
    """An import moved into a function hides a circle from the check above
    without removing it: the two modules still need each other (the entry
    point, server/loader.py, imports the plugin in `load`; the plugin takes
    its names from server/names.py, not from the loader). None is left."""
    assert not _circles(_import_graph(in_functions=True))


def test_the_circle_finder_finds_one():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    graph = _import_graph()
    assert "tb_pipeline_plugin.analysis.processor" in graph["tb_pipeline_plugin.analysis.group"]
    # The loader imports the plugin only inside `load`: seen with in_functions, not at import time.
    assert "tb_pipeline_plugin.server.plugin" not in graph["tb_pipeline_plugin.server.loader"]
    assert "tb_pipeline_plugin.server.plugin" in _import_graph(in_functions=True)["tb_pipeline_plugin.server.loader"]
