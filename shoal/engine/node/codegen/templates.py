"""Templates that every kernel source shares: the expression of each compiled operation, casts,
the module header, an element-wise step, and storing a ring of deferred rows.

``kernel_source`` (one sweep) and ``sweep_source`` (several fused sweeps) build on these and on
nothing of each other's.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from shoal.engine.node.lower.program import TEMP, KernelProgram, KernelStep

MODULE_HEADER = (
    "import numpy as np",
    "import numba",
    "from shoal.engine.node.codegen import vector_math as vm",
)
KERNEL_DECORATOR = '@numba.njit(nogil=True, cache=True, error_model="numpy", boundscheck=False)'

_INT = "iu"
_REAL = "f"
_NUM = "iuf"
_ALL = "biufc"

# op -> (loop dtype kinds the expression is exact for, template over inputs a, b, c)
EXPRESSIONS: dict[str, tuple[str, str]] = {
    "add": (_ALL, "{a} + {b}"),
    "subtract": ("iufc", "{a} - {b}"),
    "multiply": (_ALL, "{a} * {b}"),
    "divide": ("fc", "{a} / {b}"),
    "negative": ("iufc", "-{a}"),
    "positive": ("iufc", "{a}"),
    "absolute": ("iuf", "abs({a})"),
    "fabs": (_REAL, "abs({a})"),
    "square": ("iufc", "{a} * {a}"),
    "sqrt": (_REAL, "np.sqrt({a})"),
    "exp": (_REAL, "vm.exp({a})"),
    "expm1": (_REAL, "np.expm1({a})"),
    "log": (_REAL, "vm.log({a})"),
    "log2": (_REAL, "np.log2({a})"),
    "log10": (_REAL, "np.log10({a})"),
    "log1p": (_REAL, "np.log1p({a})"),
    "sin": (_REAL, "np.sin({a})"),
    "cos": (_REAL, "np.cos({a})"),
    "tan": (_REAL, "np.tan({a})"),
    "arcsin": (_REAL, "np.arcsin({a})"),
    "arccos": (_REAL, "np.arccos({a})"),
    "arctan": (_REAL, "np.arctan({a})"),
    "sinh": (_REAL, "np.sinh({a})"),
    "cosh": (_REAL, "np.cosh({a})"),
    "tanh": (_REAL, "np.tanh({a})"),
    "arctan2": (_REAL, "np.arctan2({a}, {b})"),
    "hypot": (_REAL, "np.hypot({a}, {b})"),
    "floor": (_REAL, "np.floor({a})"),
    "ceil": (_REAL, "np.ceil({a})"),
    "trunc": (_REAL, "np.trunc({a})"),
    "power": (_REAL, "{a} ** {b}"),
    "maximum": ("biuf", "({a} if ({a} >= {b} or {a} != {a}) else {b})"),
    "minimum": ("biuf", "({a} if ({a} <= {b} or {a} != {a}) else {b})"),
    "fmax": ("biuf", "({a} if ({a} >= {b} or {b} != {b}) else {b})"),
    "fmin": ("biuf", "({a} if ({a} <= {b} or {b} != {b}) else {b})"),
    "equal": (_ALL, "{a} == {b}"),
    "not_equal": (_ALL, "{a} != {b}"),
    "less": ("biuf", "{a} < {b}"),
    "less_equal": ("biuf", "{a} <= {b}"),
    "greater": ("biuf", "{a} > {b}"),
    "greater_equal": ("biuf", "{a} >= {b}"),
    "logical_and": (_ALL, "(({a} != 0) & ({b} != 0))"),
    "logical_or": (_ALL, "(({a} != 0) | ({b} != 0))"),
    "logical_xor": (_ALL, "(({a} != 0) ^ ({b} != 0))"),
    "logical_not": (_ALL, "({a} == 0)"),
    "bitwise_and": ("biu", "{a} & {b}"),
    "bitwise_or": ("biu", "{a} | {b}"),
    "bitwise_xor": ("biu", "{a} ^ {b}"),
    "isnan": ("biuf", "({a} != {a})"),
    "isinf": (_REAL, "np.isinf({a})"),
    "isfinite": (_REAL, "np.isfinite({a})"),
    "where": (_ALL, "({b} if {a} else {c})"),
    "copy": (_ALL, "{a}"),
    "fill": (_ALL, "{a}"),
}

# A reduction's combining ufunc (the opcode table's ``combine``) as a kernel writes it: the
# operator that combines two values, or for a selecting ufunc the comparison that picks the new.
COMBINE_OPERATORS: dict[str, str] = {
    "add": "+",
    "multiply": "*",
    "logical_or": "|",
    "logical_and": "&",
    "minimum": "<",
    "maximum": ">",
}


def cast(expression: str, dtype: np.dtype, known: np.dtype | None = None) -> str:
    """Convert an expression's value to ``dtype`` as NumPy's unsafe cast does.

    ``known`` is the expression's dtype when the code generator knows it; no cast is emitted
    then if it already matches (fewer conversions compile noticeably faster).
    """
    if known is not None and known == dtype:
        return expression
    if dtype.kind == "b":
        return f"(({expression}) != 0)"
    return f"np.{dtype.name}({expression})"


def ring_params(i: int, ndim: int) -> list[str]:
    """A ring slot's extra parameters: ring rows, the base (buffer, offset, strides), the held
    rows' buffer and how many rows at the front and back of the view-block are held."""
    return [f"m{i}", f"bb{i}", f"bo{i}", *(f"bs{i}_{d}" for d in range(ndim)), f"hh{i}", f"hf{i}", f"hb{i}"]


def store_call(i: int, ndim: int, row: str) -> str:
    sizes = ", ".join(f"n{d}" for d in range(ndim))
    ring = ", ".join([f"a{i}", *(f"s{i}_{d}" for d in range(ndim))])
    return f"_store{i}({row}, {row}, {sizes}, {ring}, {', '.join(ring_params(i, ndim))})"


def store_function(i: int, ndim: int) -> list[str]:
    """Source of ``_store{i}``: copy ring row ``q % r`` to view-block row ``j`` of the base, or to
    the held buffer if ``j`` is among the first ``f`` or last ``g`` rows (others still read them)."""
    sizes = [f"n{d}" for d in range(ndim)]
    ring = [f"s{d}" for d in range(ndim)]
    base = [f"t{d}" for d in range(ndim)]
    lines = [
        "@numba.njit(nogil=True, inline=\"always\", boundscheck=False)",
        f"def _store{i}(j, q, {', '.join(sizes)}, a, {', '.join(ring)}, r, d, e, {', '.join(base)}, h, f, g):",
        "    tail = max(f, n0 - g)",
        "    src0 = (q % r) * s0",
        "    if j < f or j >= tail:",
        "        out = h",
        f"        dst0 = (j if j < f else f + j - tail) * ({' * '.join(sizes[1:])})",
    ]
    for d in range(1, ndim):
        lines.append(f"        w{d} = {' * '.join(sizes[d + 1:]) or '1'}")
    lines += ["    else:", "        out = d", "        dst0 = e + j * t0"]
    for d in range(1, ndim):
        lines.append(f"        w{d} = t{d}")
    last = ndim - 1
    for d in range(1, last):
        indent = "    " * d
        lines.append(f"{indent}for i{d} in range(n{d}):")
        lines.append(f"{indent}    src{d} = src{d - 1} + i{d} * s{d}")
        lines.append(f"{indent}    dst{d} = dst{d - 1} + i{d} * w{d}")
    indent = "    " * last
    src, dst = f"src{last - 1}", f"dst{last - 1}"
    # Contiguous rows: a unit-stride loop over two row slices, which LLVM vectorises. A slice
    # assignment compiles to a scalar loop that clamps every index (broadcasting), and an
    # element loop over the flat buffers with run-time strides does not vectorise either.
    lines += [
        f"{indent}if w{last} == 1 and s{last} == 1:",
        f"{indent}    target = out[{dst}:{dst} + n{last}]",
        f"{indent}    source = a[{src}:{src} + n{last}]",
        f"{indent}    for k in range(n{last}):",
        f"{indent}        target[k] = source[k]",
        f"{indent}else:",
        f"{indent}    for i{last} in range(n{last}):",
        f"{indent}        out[{dst} + i{last} * w{last}] = a[{src} + i{last} * s{last}]",
    ]
    return lines


def element_wise_lines(
    k: int,
    step: KernelStep,
    program: KernelProgram,
    values: dict[int, tuple[str, np.dtype]],
    read: Callable[[int], tuple[str, np.dtype]],
    target: Callable[[int], str],
) -> list[str]:
    """Lines computing element-wise step ``k`` as ``v{k}``: a temporary result becomes ``t{slot}``
    (and is entered in ``values``), any other is stored to ``target(slot)``."""
    slots = program.slots
    inputs = []
    for position, slot_id in enumerate(step.inputs):
        expression, dtype = read(slot_id)
        inputs.append(cast(expression, step.loop_in[position], dtype))
    template = EXPRESSIONS[step.op][1]
    result = f"v{k}"
    lines = [f"{result} = {cast(template.format(**dict(zip('abc', inputs))), step.loop_out[0])}"]
    out = step.outputs[0]
    stored = cast(result, slots[out].dtype, step.loop_out[0])
    if slots[out].kind == TEMP:
        lines.append(f"t{out} = {stored}")
        values[out] = (f"t{out}", slots[out].dtype)
    else:
        lines.append(f"{target(out)} = {stored}")
    return lines
