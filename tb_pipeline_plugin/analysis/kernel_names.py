"""Short display names of GPU kernels (issue 45, part 4).

A demangled CUDA kernel name is a C++ signature: return type, namespaces,
template arguments nested several deep, and the parameter list
(`void cutlass::Kernel2<cutlass_80_simt_sgemm_128x256_8x4_nn_align1>(cutlass_80_simt_sgemm_128x256_8x4_nn_align1::Params)`).
`short_name` folds it to what a reader names the kernel by
(`cutlass::Kernel2<sgemm_128x256_8x4_nn>`): the return type and the parameter list
dropped, `(anonymous namespace)::` and `at::native::` left out, the template
arguments folded to the one that says what the kernel computes (a functor, the
kernel function a lambda belongs to, a tile) or `…`. Names that are plain
identifiers (Inductor's `triton_poi_fused_…`, cuBLAS' `ampere_sgemm_128x64_nn`,
`Memcpy HtoD (Pinned -> Device)`) stay as they are, cut only when very long.

`short_names` folds a set of names at once: where two different names fold
to the same short name, both get more of their template arguments back, and
where even the whole template list is the same, the first distinct parameter
hint or a 4-character digest of the full name, so two rows of one table never
read the same. It is a pure function: the kernels answer calls it over one
run's names, diff/kernels over both runs' names together.
"""
from __future__ import annotations

import hashlib
import re
from typing import Iterable

# Identifiers longer than this are cut (Tensile's `Cijk_…`, cuDNN's `sm80_xmma_…`, mangled names).
MAX_IDENTIFIER = 64
_DROP = ("(anonymous namespace)::", "at::native::", "at_cuda_detail::")
# Wrappers whose own name says nothing of the work: look inside them.
_WRAPPERS = {
    "gpu_kernel_impl", "gpu_kernel_impl_nocast", "func_wrapper_t", "ReduceOp", "AUnaryFunctor", "BUnaryFunctor",
    "BinaryFunctor", "UnaryFunctor", "operator", "Array", "array", "TrivialOffsetCalculator", "OffsetCalculator",
    "LoadWithCast", "LoadWithoutCast", "StoreWithCast", "StoreWithoutCast", "TensorIteratorBase", "TensorIterator",
    "gpu_index_kernel", "OpaqueType", "enable_if", "type", "const", "unsigned", "long", "int", "float", "double",
    "bool", "char", "void", "true", "false", "lambda",
}
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TILE = re.compile(r"\d+x\d+(?:x\d+)?")
_INFORMATIVE = re.compile(r"(Functor\w*|Ops|_functor|_kernel\w*|Kernel\w*|Impl|_impl|_cuda|Epilogue|Op)$")


def _matching(s: str, i: int) -> int:
    """Index just past the bracket group opening at s[i] ('<', '(', '{', '[')."""
    depth = 0
    pairs = {"<": ">", "(": ")", "{": "}", "[": "]"}
    stack = []
    for j in range(i, len(s)):
        c = s[j]
        if c in pairs:
            stack.append(pairs[c])
            depth += 1
        elif stack and c == stack[-1]:
            stack.pop()
            if not stack:
                return j + 1
    return len(s)


def _strip_return_type(s: str) -> str:
    """The signature from the kernel's qualified name on (no `void `, no `std::enable_if<…>::type `)."""
    i, last_space = 0, -1
    while i < len(s):
        c = s[i]
        if c in "<({[":
            if c == "(" and i > 0 and (s[i - 1].isalnum() or s[i - 1] in "_>"):
                break  # the parameter list
            i = _matching(s, i)
            continue
        if c == " ":
            last_space = i
        i += 1
    return s[last_space + 1:] if last_space >= 0 else s


def _split_top(s: str) -> tuple[str, str, str]:
    """(qualified name, template argument text or '', parameter text or '') of a signature."""
    name_end = len(s)
    template, params = "", ""
    i = 0
    while i < len(s):
        c = s[i]
        if c == "<":
            j = _matching(s, i)
            if not template and name_end == len(s):
                name_end, template = i, s[i + 1:j - 1]
            i = j
            continue
        if c == "(":
            j = _matching(s, i)
            if i > 0 and (s[i - 1].isalnum() or s[i - 1] in "_>") and s[i - 1:i] != ":":
                if name_end == len(s):
                    name_end = i
                params = s[i + 1:j - 1]
                break
            i = j
            continue
        i += 1
    name = s[:name_end]
    rest = s[name_end:]
    if template and rest.startswith("<"):
        after = rest[len(template) + 2:]
        if after.startswith("::"):  # `Policy<…>::type` and the like: keep the member
            name = name + "<…>" + after.split("(", 1)[0]
    return name, template, params


def _top_args(template: str) -> list[str]:
    out, depth, cur = [], 0, []
    for c in template:
        if c in "<({[":
            depth += 1
        elif c in ">)}]":
            depth -= 1
        if c == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
    if cur and "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def _clean(s: str) -> str:
    for d in _DROP:
        s = s.replace(d, "")
    return s


def _fold_nested(arg: str) -> str:
    """A template argument with its own nested lists folded: `MulFunctor<float>` -> `MulFunctor<…>`."""
    out, i = [], 0
    while i < len(arg):
        c = arg[i]
        if c in "<({[":
            j = _matching(arg, i)
            out.append({"<": "<…>", "(": "(…)", "{": "{…}", "[": "[…]"}[c])
            i = j
            continue
        out.append(c)
        i += 1
    return _clean("".join(out)).replace("::{…}", "").strip()


def _tile_tag(ident: str) -> str | None:
    """`cutlass_80_simt_sgemm_128x256_8x4_nn_align1` -> `sgemm_128x256_8x4_nn`."""
    parts = ident.split("_")
    tiles = [k for k, p in enumerate(parts) if _TILE.fullmatch(p)]
    if not tiles:
        return None
    first = tiles[0]
    op = next((parts[k] for k in range(first - 1, -1, -1) if not parts[k].isdigit() and parts[k]), "")
    tail = [p for p in parts[first:] if not p.startswith("align")]
    return "_".join(([op] if op else []) + tail)


def _key_of(arg: str) -> str | None:
    """What a template argument computes: its tile tag, its functor, or the
    kernel function a lambda of it belongs to; None when it is a plain type or number."""
    arg = _clean(arg)
    if _IDENT.fullmatch(arg):
        tag = _tile_tag(arg)
        if tag:
            return tag
    for m in _IDENT.finditer(arg):
        word = m.group(0)
        if word in _WRAPPERS or word.isdigit():
            continue
        nxt = arg[m.end():m.end() + 1]
        if nxt == "(" or _INFORMATIVE.search(word):
            return word
    return None


_TYPES = {"float": "float", "double": "double", "c10::BFloat16": "bf16", "c10::Half": "fp16", "__half": "fp16",
          "__nv_bfloat16": "bf16", "long": "long", "int": "int", "bool": "bool", "c10::complex<float>": "complex64"}
_TYPE_RE = re.compile(r"(?<![\w:])(c10::BFloat16|c10::Half|__nv_bfloat16|__half|float|double|long|int|bool)(?![\w])")


def _dtypes(template: str) -> list[str]:
    """The element types a template list names, in order, each once (`float`, `bf16`)."""
    return list(dict.fromkeys(_TYPES[m.group(1)] for m in _TYPE_RE.finditer(template.replace("unsigned ", "u"))))


def _cut(ident: str) -> str:
    if len(ident) <= MAX_IDENTIFIER or ident.startswith("triton_"):
        return ident
    tiles = [t for t in _TILE.findall(ident)][:2]
    head = ident[:40].rstrip("_")
    extra = [t for t in tiles if t not in head]
    return head + "…" + ("_".join(extra) if extra else "")


def _demangle_head(s: str) -> str:
    """The namespaces and name of an Itanium-mangled `_ZN…` name, as `a::b<…>`."""
    i, parts = 3, []
    while i < len(s) and s[i].isdigit():
        j = i
        while j < len(s) and s[j].isdigit():
            j += 1
        n = int(s[i:j])
        parts.append(s[j:j + n])
        i = j + n
    if not parts:
        return _cut(s)
    templated = i < len(s) and s[i] == "I"
    tiles = _TILE.findall(re.sub(r"ILi(\d+)ELi(\d+)ELi(\d+)EE", r"\1x\2x\3", s[i:]))
    return "::".join(parts) + (f"<{tiles[0]}>" if templated and tiles else "<…>" if templated else "")


def _levels(full: str) -> list[str]:
    """The short name at each level of detail, shortest first."""
    s = full.strip()
    if not s:
        return ["(unnamed kernel)"]
    if s.startswith("_ZN"):
        return list(dict.fromkeys([_demangle_head(s), _cut(s)]))
    if "<" not in s and "(" not in s:
        return list(dict.fromkeys([_cut(s), s]))
    if "<" not in s and re.fullmatch(r"[\w ]+\([^()]*\)", s) and not re.match(r"\w+(::\w+)*\(", s):
        return [s]  # `Memcpy HtoD (Pinned -> Device)`, `Memset (Device)`
    sig = _strip_return_type(s)
    name, template, params = _split_top(sig)
    name = _clean(name)
    if not template:
        levels = [name]
    else:
        args = _top_args(template)
        keys = list(dict.fromkeys(k for k in (_key_of(a) for a in args) if k))
        types = _dtypes(template)
        numbers = [a for a in args if re.fullmatch(r"-?\d+u?l?|true|false", a)]
        first = keys[:1] or types or ["…"]
        levels = [
            f"{name}<{first[0]}>",
            f"{name}<{', '.join(keys[:1] + types) or '…'}>",
            f"{name}<{', '.join(numbers + keys + types) or '…'}>",
        ]
    out = []
    for lv in levels:
        if not out or lv != out[-1]:
            out.append(lv)
    return out


def _safe_levels(full: str) -> list[str]:
    """`_levels`, never empty and never a blank name (a malformed signature keeps its own text)."""
    levels = [lv for lv in _levels(full) if lv.strip() and lv.strip("<>()…, ")]
    return levels or [_cut(full.strip()) or "(unnamed kernel)"]


def short_name(full: str) -> str:
    """The shortest display name of one kernel (alone: see `short_names` for a table's)."""
    return _safe_levels(full)[0]


def short_names(names: Iterable[str]) -> dict[str, str]:
    """Full name -> display name for every distinct name: the shortest level
    no other name of the set shares, a digest of the full name where every level is shared."""
    distinct = list(dict.fromkeys(names))
    levels = {n: _safe_levels(n) for n in distinct}
    depth = {n: 0 for n in distinct}
    for _ in range(8):
        shown: dict[str, list[str]] = {}
        for n in distinct:
            shown.setdefault(levels[n][min(depth[n], len(levels[n]) - 1)], []).append(n)
        clashes = [group for group in shown.values() if len(group) > 1]
        if not clashes:
            break
        moved = False
        for group in clashes:
            for n in group:
                if depth[n] < len(levels[n]) - 1:
                    depth[n] += 1
                    moved = True
        if not moved:
            break
    out = {n: levels[n][min(depth[n], len(levels[n]) - 1)] for n in distinct}
    seen: dict[str, list[str]] = {}
    for n, s in out.items():
        seen.setdefault(s, []).append(n)
    for s, group in seen.items():
        if len(group) > 1:
            for n in group:
                out[n] = f"{s} #{hashlib.sha1(n.encode()).hexdigest()[:4]}"
    return out


# Kernel families, in the order a region's families are listed: Inductor's fused kinds, then what eager kernels compute.
FAMILY_ORDER = ["gemm", "attention", "triton_poi", "triton_red", "triton_per", "triton_tem", "triton",
                "pointwise", "reduction", "normalization", "copy", "memcpy", "memset", "communication", "other"]
_FAMILY_RULES = [
    ("memcpy", re.compile(r"^Memcpy")),
    ("memset", re.compile(r"^Memset")),
    ("triton_poi", re.compile(r"^triton_poi_")),
    ("triton_red", re.compile(r"^triton_red_")),
    ("triton_per", re.compile(r"^triton_per_")),
    ("triton_tem", re.compile(r"^triton_tem_")),
    ("triton", re.compile(r"^triton_")),
    ("communication", re.compile(r"nccl|rccl", re.I)),
    ("attention", re.compile(r"fmha|flash|sdpa|attention", re.I)),
    ("gemm", re.compile(r"gemm|gemv|nvjet|cutlass|xmma|cublas|Cijk_|cudnn|conv", re.I)),
    ("normalization", re.compile(r"norm|softmax|SoftMax|GammaBeta|RowwiseMoments", re.I)),
    ("reduction", re.compile(r"reduce|reduction|Reduce|scan|Scan|sort|Sort|sum_|_sum", re.I)),
    ("copy", re.compile(r"copy|Copy|cat|Cat|index|gather|scatter", re.I)),
    ("pointwise", re.compile(r"elementwise|Functor|_kernel_cuda|multi_tensor_apply", re.I)),
]


def kernel_family(full: str) -> str:
    """What a kernel is, in a word: Inductor's fused kinds (`triton_poi`, `triton_red`, `triton_per`), or for
    other kernels what they compute (`gemm`, `attention`, `pointwise`, `reduction`, `normalization`, `copy`,
    `memcpy`, `memset`, `communication`), else `other`."""
    for family, pattern in _FAMILY_RULES:
        if pattern.search(full):
            return family
    return "other"
