"""A compiled region read as the modules it replaces (issue 45, part 3).

Inside a module one run ran compiled (analysis/compiled.py), that run's
pieces are Inductor's graph calls (`## Call CompiledFxGraph <hash> ##`,
annotations) and the other run's are the eager submodule calls the graph
replaced: nothing on one side has a counterpart on the other by name. Aligned
piece by piece they would read as the eager modules missing and the graph
added ("+48 ms"). Instead the level compares them as one piece: the compiled
side's graph calls together against the eager side's pieces together (every
piece of the level but its unknown time), both sides' bars, named by the
module ("LM_0 (compiled graph)"), with the graphs' names (their hashes) and
the eager pieces it replaced in `compiled_region`. Zooming into it lists both
sides' pieces, each one-sided (`inside_compiled`).

Only where the compiled side's pieces of the level are all graph calls (a
whole module compiled, no graph break running eager submodules between
graphs): otherwise the level is aligned as any other.

The region's kernels are grouped by family (`kernel_families`): Inductor's
fused kernels by their kind (`triton_poi`: pointwise, `triton_red`:
reduction, `triton_per`: persistent reduction), the eager side's by what they
compute (GEMM, pointwise, reduction, ...; analysis/kernel_names.py:kernel_family).
"""
from __future__ import annotations

import numpy as np

from ..analysis import pieces as P
from ..analysis.compiled import is_compiled_code
from ..analysis.kernel_names import FAMILY_ORDER, kernel_family
from ..analysis.labels import ANNOTATION

REGION = "compiled_region"
_GRAPH_PREFIX = "## Call CompiledFxGraph"


def is_graph(piece: P.Piece) -> bool:
    return piece.kind == ANNOTATION and is_compiled_code(piece.name)


def graph_label(name: str) -> str:
    """`## Call CompiledFxGraph fzobrf5y… ##` -> `fzobrf5y…` (the graph's hash), other compiled code as it is."""
    text = name.strip()
    if text.startswith(_GRAPH_PREFIX):
        return text[len(_GRAPH_PREFIX):].strip(" #") or text
    return text


def region_parts(b_body: list[P.Piece], e_body: list[P.Piece], side: str | None):
    """(baseline parts, experimental parts) of a level to compare as one
    compiled region, or None where the level is aligned piece by piece.
    `side`: the run that ran the level's module compiled (only one may)."""
    if side not in ("baseline", "experimental"):
        return None
    compiled, eager = (b_body, e_body) if side == "baseline" else (e_body, b_body)
    if not compiled or not eager or not all(is_graph(p) for p in compiled):
        return None
    return (tuple(b_body), tuple(e_body))


def merged(parts: tuple, name: str) -> P.Piece:
    """One piece over `parts` (its time theirs, its intervals theirs: the
    tables and the Timeline of the piece see exactly their events)."""
    return P.Piece(
        kind=REGION, name=name, key=REGION, step=parts[0].step,
        start_us=min(p.start_us for p in parts), end_us=max(p.end_us for p in parts),
        host_us=float(sum(p.host_us for p in parts)), device_us=float(sum(p.device_us for p in parts)),
        calls=int(sum(p.calls for p in parts)),
        gaps=tuple(iv for p in parts for iv in p.intervals),
    )


def region_pieces(module: str, parts: tuple, side: str) -> tuple[P.Piece, P.Piece]:
    """The region's piece on each side: the graph calls named by their module, the eager pieces by theirs."""
    b_parts, e_parts = parts
    compiled_name = f"{module} (compiled graph)"

    def eager_name(ps: tuple) -> str:
        names = [p.name for p in ps]
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        return f"{module} (eager: {shown})"

    b_name = compiled_name if side == "baseline" else eager_name(b_parts)
    e_name = compiled_name if side == "experimental" else eager_name(e_parts)
    return merged(b_parts, b_name), merged(e_parts, e_name)


def region_note(module: str, parts: tuple, side: str) -> str:
    b_parts, e_parts = parts
    compiled, eager = (b_parts, e_parts) if side == "baseline" else (e_parts, b_parts)
    other = "experimental" if side == "baseline" else "baseline"
    graphs = ", ".join(graph_label(p.name) for p in compiled)
    return (f"The {side} run ran {module} as torch.compile's code (Inductor graph {graphs}); the {other} run ran "
            f"it eagerly as {len(eager)} piece{'s' if len(eager) != 1 else ''} ({', '.join(p.name for p in eager)}). "
            "They are compared here as one piece; zoom in for each side's own pieces.")


def region_fields(run_b, run_e, bi: P.PieceIndex, ei: P.PieceIndex, module: str, parts: tuple, side: str) -> dict:
    """The `compiled_region` field of a region's row: the module, which run
    compiled it, the graphs (full names, hashes), the eager pieces, and both
    sides' device time by kernel family."""
    b_parts, e_parts = parts
    compiled = b_parts if side == "baseline" else e_parts
    eager = e_parts if side == "baseline" else b_parts
    b_fam, e_fam = _families(run_b, bi, b_parts), _families(run_e, ei, e_parts)
    families = []
    for fam in sorted(set(b_fam) | set(e_fam), key=lambda f: (FAMILY_ORDER.index(f) if f in FAMILY_ORDER else 99, f)):
        (bu, bn), (eu, en) = b_fam.get(fam, (0.0, 0)), e_fam.get(fam, (0.0, 0))
        families.append({"family": fam, "baseline_us": round(bu, 3), "experimental_us": round(eu, 3),
                         "delta_us": round(eu - bu, 3), "baseline_kernels": bn, "experimental_kernels": en})
    return {
        "module": module, "side": side,
        "graphs": [p.name for p in compiled], "graph_ids": [graph_label(p.name) for p in compiled],
        "eager_pieces": [p.name for p in eager],
        "kernel_families": families,
    }


def _families(run, index: P.PieceIndex, parts: tuple) -> dict[str, tuple[float, int]]:
    """Device µs and kernel launches by family of the device work the parts launched."""
    rows = [P.device_rows(index, p) for p in parts]
    rows = np.unique(np.concatenate(rows)) if rows else np.empty(0, np.int64)
    if not len(rows):
        return {}
    t = run.linked.table
    names = t.names(t.name_id[rows])
    dur = t.dur_us[rows].astype(np.float64)
    out: dict[str, tuple[float, int]] = {}
    by_name: dict[str, str] = {}
    for name, d in zip(names, dur.tolist()):
        fam = by_name.get(name) or by_name.setdefault(name, kernel_family(str(name)))
        us, n = out.get(fam, (0.0, 0))
        out[fam] = (us + d, n + 1)
    return out
