"""Short display names of GPU kernels (analysis/kernel_names.py) on the real kernel names of the shared traces."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tb_pipeline_plugin.analysis.kernel_names import short_name, short_names

SHARED = Path(__file__).resolve().parents[3] / "shared" / "traces"
_KINDS = {"kernel", "Kernel", "gpu_memcpy", "gpu_memset", "Memcpy", "Memset"}


def _names(root: Path) -> set[str]:
    out: set[str] = set()
    for f in sorted(root.rglob("*.json*")):
        if not (f.name.endswith(".json") or f.name.endswith(".json.gz")):
            continue
        opener = gzip.open if f.name.endswith(".gz") else open
        try:
            with opener(f, "rt") as fh:
                data = json.load(fh)
        except (OSError, ValueError, EOFError):
            continue
        events = data.get("traceEvents", []) if isinstance(data, dict) else []
        out |= {e["name"] for e in events if isinstance(e, dict) and e.get("cat") in _KINDS and "name" in e}
    return out


@pytest.fixture(scope="module")
def traces_names() -> dict[str, set[str]]:
    if not SHARED.is_dir():
        pytest.skip("../shared/traces is not here")
    return {which: _names(SHARED / which) for which in ("h200", "hta", "kineto")}


def test_every_kernel_of_the_shared_traces_gets_a_distinct_short_name(traces_names):
    for which, names in traces_names.items():
        assert names, which
        shorts = short_names(names)
        assert all(shorts[n].strip() for n in names), which
        # Within one trace set's table (and over all of them), no two rows read the same.
        assert len(set(shorts.values())) == len(names), which
        assert all(len(shorts[n]) <= max(len(n), 100) for n in names), which
    every = set().union(*traces_names.values())
    assert len(set(short_names(every).values())) == len(every)
    for n in every:
        assert short_name(n).strip()


def test_folded_names_read_as_a_gpu_engineer_names_them(traces_names):
    every = set().union(*traces_names.values())
    sgemm = "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x256_8x4_nt_align1>(cutlass_80_simt_sgemm_128x256_8x4_nt_align1::Params)"
    assert sgemm in every
    assert short_name(sgemm) == "cutlass::Kernel2<sgemm_128x256_8x4_nt>"
    # Inductor's kernels and cuBLAS' plain identifiers stay whole.
    triton = [n for n in every if n.startswith("triton_")]
    assert triton and all(short_name(n) == n for n in triton)
    assert short_name("ampere_sgemm_128x64_nn") == "ampere_sgemm_128x64_nn"
    assert short_name("Memcpy HtoD (Pinned -> Device)") == "Memcpy HtoD (Pinned -> Device)"
    # PyTorch's elementwise kernels by what they compute, not by their wrapper.
    add = next(n for n in every if n.startswith("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>"))
    assert short_name(add) == "vectorized_elementwise_kernel<CUDAFunctor_add>"
    copy = next(n for n in every if "direct_copy_kernel_cuda" in n and n.startswith("void at::native::elementwise_kernel"))
    assert short_name(copy) == "elementwise_kernel<direct_copy_kernel_cuda>"
    adam = next(n for n in every if "FusedAdamMathFunctor" in n)
    assert short_name(adam) == "multi_tensor_apply_kernel<FusedAdamMathFunctor>"
    # No signature is left: no `void `, no parameter list.
    for n in every:
        s = short_name(n)
        assert not s.startswith("void "), n
        assert "(anonymous namespace)" not in s, n


def test_names_that_differ_only_in_folded_parts_stay_apart():
    a = "void (anonymous namespace)::softmax_warp_backward<float, float, float, 1, false, false>(float*, float const*, float const*, int, int, int, bool const*)"
    b = "void (anonymous namespace)::softmax_warp_backward<float, float, float, 10, true, false>(float*, float const*, float const*, int, int, int, bool const*)"
    assert short_name(a) == short_name(b) == "softmax_warp_backward<float>"
    shorts = short_names([a, b])
    assert shorts[a] != shorts[b]
    assert "1" in shorts[a] and "10" in shorts[b]
    # Tile sizes keep GEMMs of different tiles apart at the shortest level.
    t1 = "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align1>(cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align1::Params)"
    t2 = "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align1>(cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align1::Params)"
    assert short_names([t1, t2]) == {t1: "cutlass::Kernel<s1688gemm_128x128_16x4_nn>", t2: "cutlass::Kernel<s1688gemm_64x64_16x6_nn>"}
    # Only the parameter list differs: still two names.
    p1 = "void at::native::(anonymous namespace)::max_pool_forward_nchw<float, float>(int, float const*, int, int)"
    p2 = "void at::native::(anonymous namespace)::max_pool_forward_nchw<float, float>(int, float const*, long, long)"
    s = short_names([p1, p2])
    assert s[p1] != s[p2] and all(v.startswith("max_pool_forward_nchw<float>") for v in s.values())
    # The same input, the same answer; one name alone is its shortest level.
    assert short_names([b, a]) == shorts
    assert short_names([a]) == {a: "softmax_warp_backward<float>"}


def test_odd_names_do_not_break_it():
    for odd in ("", "   ", "<", "(", ">>)", "void f<(>", "a" * 5000, "<img src=x onerror=alert(1)>", "operator<<(int)"):
        assert isinstance(short_name(odd), str) and short_name(odd).strip()
        assert len(short_names([odd, odd + "x"])) == 2
