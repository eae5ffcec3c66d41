"""Device time matched through what launched it.

Kernels of two runs rarely share names when the change is the point of the
comparison: fp32 GEMMs (`sm80_xmma_gemm_f32f32…`) become bf16 ones
(`nvjet_sm90_tst…`) under autocast, eager kernels become Inductor's
`triton_*` under torch.compile. What the two runs share is what launched
them: the operator (`aten::addmm`) and its module path. Both runs' device
time by launching operator and module (analysis/device_time.py:launch_table)
is joined on that, each side listing its own kernels.

Fusion: a compiled region launches its fused kernels from one operator
(Inductor's graph call) where the eager run launched each operator's own,
so an operator row matches nothing across a compiled boundary; at the
module level (`group_by=module`), the compiled module's row meets the eager
module's subtree rolled up into it (analysis/compiled.py), and the two
sides' device time compares there.
"""
from __future__ import annotations

import pandas as pd

from ..analysis.compiled import compiled_root
from ..analysis.kernel_names import short_names
from ..analysis.labels import MODULE
from ..analysis.run import Run
# How diff/kernels joins two runs' device time: by kernel name, or by what launched it (declared once in the contract).
from ..contract.diff_tables import KernelGroupBy
from .explain.contributors import OWN
from .tables import join

LAUNCH_COLUMNS = ["calls", "total_us"]
KERNELS_LISTED = 3


def _steps_per_recording(run: Run) -> float:
    return max(run.step_count / max(run.recordings, 1), 1.0)


def _module_rows(run: Run, compiled: frozenset[str]) -> pd.DataFrame:
    """The run's launch table rows of module parts, keys rolled up to compiled modules."""
    table = run.launch_table()
    rows = table[table["kind"] == MODULE]
    return rows.assign(key=rows["key"].map(lambda k: compiled_root(k, compiled) or k))


def top_operator(b: Run, e: Run, key: str, compiled: frozenset[str]) -> dict | None:
    """Inside the module contributor `key` (diff/explain/contributors.py: a path, or a
    path's own operators), the launching operator whose device time per step
    changed most, with each run's kernels for it, largest first."""
    own = key.endswith(OWN)
    base = key.removesuffix(OWN)

    def inside(run: Run) -> pd.DataFrame:
        rows = _module_rows(run, compiled)
        mask = rows["key"] == base
        if not own:
            mask |= rows["key"].str.startswith(base + "/")
        return rows[mask].assign(per_step_us=lambda f: f["total_us"] / _steps_per_recording(run))

    bi, ei = inside(b), inside(e)
    per_b = bi.groupby("operator")["per_step_us"].sum()
    per_e = ei.groupby("operator")["per_step_us"].sum()
    ops = per_b.index.union(per_e.index)
    if not len(ops):
        return None
    delta = per_e.reindex(ops, fill_value=0.0) - per_b.reindex(ops, fill_value=0.0)
    name = str(delta.abs().idxmax())
    return {
        "name": name,
        "baseline_us": round(float(per_b.get(name, 0.0)), 3),
        "experimental_us": round(float(per_e.get(name, 0.0)), 3),
        "delta_us": round(float(delta[name]), 3),
        "baseline_kernels": (bk := _kernels(bi[bi["operator"] == name])),
        "experimental_kernels": (ek := _kernels(ei[ei["operator"] == name])),
        **_short_lists(bk, ek),
    }


def _short_lists(bk: list[str], ek: list[str]) -> dict:
    """Each run's kernel list as display names (analysis/kernel_names.py), distinct over both lists."""
    shorts = short_names(bk + ek)
    return {"baseline_kernel_short_names": [shorts[k] for k in bk],
            "experimental_kernel_short_names": [shorts[k] for k in ek]}


def _kernels(rows: pd.DataFrame) -> list[str]:
    by_kernel = rows.groupby("kernel")["total_us"].sum().sort_values(ascending=False, kind="stable")
    return [str(k) for k in by_kernel.index[:KERNELS_LISTED]]


def launch_join(b_table: pd.DataFrame, e_table: pd.DataFrame, group_by: str, compiled: frozenset[str]) -> pd.DataFrame:
    """Two runs' launch tables (analysis/device_time.py:launch_table, whole
    window) joined by what launched their device time: `group_by`
    "operator" keys rows by (`name`: the launching operator, `module`: its
    module path), "module" by `name`: the module path (`module` null). Per
    row each side's calls and total µs with delta fields, and each side's
    kernels (`baseline_kernels`, `experimental_kernels`: name, calls, total
    µs, largest first). Module paths below a compiled module are rolled up
    into it (module docstring)."""
    keys = launch_keys(group_by)
    (bg, bk), (eg, ek) = (_grouped(t, group_by, compiled) for t in (b_table, e_table))
    joined = join(bg, eg, keys, LAUNCH_COLUMNS)
    if "module" not in joined:
        joined.insert(1, "module", None)
    shorts = short_names([*bk["kernel"].astype(str), *ek["kernel"].astype(str)])
    for name, kernels in (("baseline_kernels", bk), ("experimental_kernels", ek)):
        lists = _kernel_lists(kernels, keys, shorts)
        joined[name] = [lists.get(tuple(k), []) for k in joined[keys].itertuples(index=False)]
    return joined


def launch_keys(group_by: str) -> list[str]:
    return ["name", "module"] if group_by == "operator" else ["name"]


def launch_samples(run: Run, group_by: str, compiled: frozenset[str]) -> pd.DataFrame:
    """Long form (the row keys, `step`, `total_us`): each step's device time
    per row of a launch table, for the rows' significance."""
    return _grouped(run.launch_steps(), group_by, compiled, by_step=True)


def _module_of(table: pd.DataFrame, compiled: frozenset[str]) -> pd.Series:
    """The module path of each row's part (compiled roots rolled up); other parts by their name."""
    return table["key"].where(table["kind"] != MODULE, table["key"].map(lambda k: compiled_root(k, compiled) or k))


def _grouped(table: pd.DataFrame, group_by: str, compiled: frozenset[str], by_step: bool = False):
    module = _module_of(table, compiled)
    if group_by == "operator":
        rows = table.assign(name=table["operator"], module=module)
    else:
        rows = table.assign(name=module)
    keys = launch_keys(group_by)
    if by_step:
        return rows.groupby(keys + ["step"], as_index=False, sort=False)["total_us"].sum()
    grouped = rows.groupby(keys, as_index=False, sort=False)[LAUNCH_COLUMNS].sum()
    kernels = rows.groupby(keys + ["kernel"], as_index=False, sort=False)[LAUNCH_COLUMNS].sum()
    return grouped, kernels


def _kernel_lists(kernels: pd.DataFrame, keys: list[str], shorts: dict[str, str]) -> dict[tuple, list[dict]]:
    ordered = kernels.sort_values("total_us", ascending=False, kind="stable")
    out: dict[tuple, list[dict]] = {}
    for row in ordered.itertuples(index=False):
        key = tuple(getattr(row, k) for k in keys)
        out.setdefault(key, []).append({"name": row.kernel, "short_name": shorts.get(str(row.kernel), str(row.kernel)),
                                        "calls": round(float(row.calls), 3),
                                        "total_us": round(float(row.total_us), 3)})
    return out
