"""Python source for a compiled kernel: one loop nest over a view-block, all steps per element.

The generated function takes the block's extents, then per array slot its base buffer (typed
1-D), element offset and element strides, then the constants. Each step casts its inputs to the
loop dtype NumPy would use, computes, and casts to each output's dtype, so integer results wrap
exactly as NumPy's do. Only operations listed in ``EXPRESSIONS`` for a loop dtype compile; a
program with anything else stays on the NumPy tile path.
"""

from __future__ import annotations

import numpy as np

from shoal.engine.node.program import ARRAY, CONST, TEMP, KernelProgram

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
    "exp": (_REAL, "np.exp({a})"),
    "expm1": (_REAL, "np.expm1({a})"),
    "log": (_REAL, "np.log({a})"),
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

_SUPPORTED_DTYPES = frozenset("?bhilqBHILQfdFD")
_BOOL_SAFE = frozenset({"add", "multiply", "maximum", "minimum", "fmax", "fmin", "equal", "not_equal",
                        "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
                        "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor",
                        "isnan", "where", "copy", "fill"})  # fmt: skip


def compilable(program: KernelProgram) -> bool:
    """True if every slot dtype and step of ``program`` has an exact compiled form."""
    for slot in program.slots:
        if slot.dtype.char not in _SUPPORTED_DTYPES:
            return False
        if slot.kind == ARRAY and (slot.offset % slot.dtype.itemsize or any(s % slot.dtype.itemsize for s in slot.strides)):
            return False
    for step in program.steps:
        entry = EXPRESSIONS.get(step.op)
        if entry is None or step.loop_in is None or step.loop_out is None or len(step.outputs) != 1:
            return False
        kinds = entry[0]
        for dtype in (*step.loop_in, *step.loop_out):
            if dtype.char not in _SUPPORTED_DTYPES:
                return False
        for slot_id, dtype in zip(step.inputs, step.loop_in):
            if program.slots[slot_id].dtype.kind == "c" and dtype.kind != "c":
                return False
        for slot_id, dtype in zip(step.outputs, step.loop_out):
            if dtype.kind == "c" and program.slots[slot_id].dtype.kind != "c":
                return False
        loop = step.loop_in[-1] if step.op in ("where",) else step.loop_in[0]
        if loop.kind not in kinds or (loop.kind == "b" and step.op not in _BOOL_SAFE):
            return False
    if program.reduction is not None:
        source = program.slots[program.reduction.source].dtype
        if source.kind == "c" and program.reduction.op in ("min", "max"):
            return False
    return True


def cast(expression: str, dtype: np.dtype) -> str:
    """Convert an expression's value to ``dtype`` as NumPy's unsafe cast does."""
    if dtype.kind == "b":
        return f"({expression} != 0)"
    return f"np.{dtype.name}({expression})"


def generate(program: KernelProgram, name: str) -> str:
    """Source of a module defining kernel function ``name`` for ``program``."""
    part = program.partition
    ndim = len(part.shape) - part.axis
    slots = program.slots
    params = [f"n{d}" for d in range(ndim)]
    for i, slot in enumerate(slots):
        if slot.kind == ARRAY:
            params += [f"a{i}", f"o{i}"] + [f"s{i}_{d}" for d in range(ndim)]
        elif slot.kind == CONST:
            params.append(f"c{i}")
    lines = [
        "import numpy as np",
        "import numba",
        "",
        "",
        '@numba.njit(nogil=True, cache=True, error_model="numpy", boundscheck=False)',
        f"def {name}({', '.join(params)}):",
    ]
    reduction = program.reduction
    body_indent = "    " * (ndim + 1)
    if reduction is not None:
        lines.append(f"    acc = {_identity(reduction.op, reduction.acc)}")
    arrays = [i for i, slot in enumerate(slots) if slot.kind == ARRAY]
    for i in arrays:
        lines.append(f"    q{i}_0 = o{i}")
    for d in range(ndim):
        indent = "    " * (d + 1)
        lines.append(f"{indent}for i{d} in range(n{d}):")
        for i in arrays:
            inner = _stride_term(slots[i], d, ndim, f"i{d}", f"s{i}_{d}")
            lines.append(f"{indent}    q{i}_{d + 1} = q{i}_{d} + {inner}")
    values: dict[int, str] = {}
    for i, slot in enumerate(slots):
        if slot.kind == CONST:
            values[i] = f"c{i}"
    for k, step in enumerate(program.steps):
        inputs = []
        for position, slot_id in enumerate(step.inputs):
            loop = step.loop_in[position]
            inputs.append(cast(_read(slots, slot_id, ndim, values), loop))
        template = EXPRESSIONS[step.op][1]
        names = dict(zip("abc", inputs))
        result = f"r{k}"
        lines.append(f"{body_indent}{result} = {cast(template.format(**names), step.loop_out[0])}")
        out = step.outputs[0]
        stored = cast(result, slots[out].dtype)
        if slots[out].kind == TEMP:
            lines.append(f"{body_indent}t{out} = {stored}")
            values[out] = f"t{out}"
        else:
            lines.append(f"{body_indent}a{out}[q{out}_{ndim}] = {stored}")
    if reduction is not None:
        value = cast(_read(slots, reduction.source, ndim, values), reduction.acc)
        lines.append(f"{body_indent}{_accumulate(reduction.op, value)}")
        lines.append("    return acc")
    else:
        lines.append("    return 0")
    return "\n".join(lines) + "\n"


def _stride_term(slot, d: int, ndim: int, index: str, stride: str) -> str:
    if d == ndim - 1:
        inner = slot.strides[-1] // slot.dtype.itemsize
        if inner == 0:
            return "0"
        if inner == 1:
            return index
    return f"{index} * {stride}"


def _read(slots, slot_id: int, ndim: int, values: dict[int, str]) -> str:
    if slot_id in values:
        return values[slot_id]
    return f"a{slot_id}[q{slot_id}_{ndim}]"


def _identity(op: str, acc: np.dtype) -> str:
    if op in ("sum", "mean"):
        return f"np.{acc.name}(0)"
    if op == "prod":
        return f"np.{acc.name}(1)"
    if op == "any":
        return "False"
    if op == "all":
        return "True"
    if acc.kind == "f":
        return f"np.{acc.name}({'np.inf' if op == 'min' else '-np.inf'})"
    if acc.kind == "b":
        return "True" if op == "min" else "False"
    info = np.iinfo(acc)
    return f"np.{acc.name}({info.max if op == 'min' else info.min})"


def _accumulate(op: str, value: str) -> str:
    if op in ("sum", "mean"):
        return f"acc += {value}"
    if op == "prod":
        return f"acc *= {value}"
    if op == "any":
        return f"acc = acc | ({value} != 0)"
    if op == "all":
        return f"acc = acc & ({value} != 0)"
    compare = "<" if op == "min" else ">"
    return f"acc = ({value}) if (({value}) {compare} acc or ({value}) != ({value})) else acc"
