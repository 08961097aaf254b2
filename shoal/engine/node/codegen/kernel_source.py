"""Python source for a compiled kernel: one loop nest over a view-block, all steps per element.

The generated function takes the block's extents, then per array slot its base buffer (typed
1-D), element offset and element strides, then the constants. Each step casts its inputs to the
loop dtype NumPy would use, computes, and casts to each output's dtype, so integer results wrap
exactly as NumPy's do. Only operations listed in ``templates.EXPRESSIONS`` for a loop dtype
compile; a program with anything else stays on the NumPy tile path. A stencil program fused over
several sweeps is written by ``sweep_source``; what both write is in ``templates``.
"""

from __future__ import annotations

import numpy as np

from shoal.bytecode import GroupOp, spec
from shoal.engine.node.codegen.sweep_source import generate_sweeps
from shoal.engine.node.codegen.templates import (
    COMBINE_OPERATORS,
    EXPRESSIONS,
    KERNEL_DECORATOR,
    MODULE_HEADER,
    cast,
    element_wise_lines,
    ring_params,
    store_call,
    store_function,
)
from shoal.engine.node.lower.program import ARRAY, CONST, DEFERRED, KernelProgram

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
        if step.axis_reduction:
            source, out = program.slots[step.inputs[0]].dtype, program.slots[step.outputs[0]].dtype
            if out.kind != "c" and source.kind == "c" and step.op not in GroupOp.LOGICAL:
                return False
            if out.kind == "b" and step.op not in GroupOp.SELECTING | GroupOp.LOGICAL:
                return False
            continue
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
    for reduction in program.reductions:
        source = program.slots[reduction.source].dtype
        if source.kind == "c" and reduction.op in GroupOp.SELECTING:
            return False
    return True


def generate(program: KernelProgram, name: str) -> str:
    """Source of a module defining kernel function ``name`` for ``program``."""
    if program.stencil is not None:
        return generate_sweeps(program, name)
    part = program.partition
    ndim = len(part.shape) - part.axis
    slots = program.slots
    params = [f"n{d}" for d in range(ndim)]
    ring = [i for i, slot in enumerate(slots) if slot.kind == DEFERRED] if program.stores_rows else []
    for i, slot in enumerate(slots):
        if slot.kind in (ARRAY, DEFERRED):
            params += [f"a{i}", f"o{i}"] + [f"s{i}_{d}" for d in range(ndim)]
        elif slot.kind == CONST:
            params.append(f"c{i}")
        if i in ring:
            params += ring_params(i, ndim)
    lines = [
        *MODULE_HEADER,
        "",
    ]
    for i in ring:
        lines += ["", *store_function(i, ndim)]
    lines += [
        "",
        KERNEL_DECORATOR,
        f"def {name}({', '.join(params)}):",
    ]
    reductions = program.reductions
    body_indent = "    " * (ndim + 1)
    for which, reduction in enumerate(reductions):
        lines.append(f"    acc{which} = {_identity(reduction.op, reduction.acc)}")
    arrays = [i for i, slot in enumerate(slots) if slot.kind in (ARRAY, DEFERRED)]
    for i in arrays:
        lines.append(f"    q{i}_0 = o{i}")
    last = ndim - 1
    for d in range(ndim):
        indent = "    " * (d + 1)
        if d == last:
            lines += [indent + line for line in _row_setup(slots, arrays, last)]
            lines += [indent + line for line in _reduced_flags(program)]
        lines.append(f"{indent}for i{d} in range(n{d}):")
        if d < last:
            for i in arrays:
                position = f"(i{d} % m{i})" if d == 0 and i in ring else f"i{d}"
                lines.append(f"{indent}    q{i}_{d + 1} = q{i}_{d} + {position} * s{i}_{d}")
    values: dict[int, tuple[str, np.dtype]] = {}
    for i, slot in enumerate(slots):
        if slot.kind == CONST:
            values[i] = (f"c{i}", slot.dtype)
    pending = 0
    for k, step in enumerate(program.steps):
        while pending < len(reductions) and reductions[pending].position == k:
            lines.append(body_indent + _reduce_line(pending, reductions[pending], slots, ndim, values))
            pending += 1
        if step.axis_reduction:
            lines += [body_indent + line for line in _axis_reduction_lines(k, step, slots, ndim, values, program)]
            continue
        element = element_wise_lines(
            k,
            step,
            program,
            values,
            read=lambda slot_id: _read(slots, slot_id, ndim, values),
            target=lambda out: _element(slots[out], out, ndim - 1),
        )
        lines += [body_indent + line for line in element]
    for which in range(pending, len(reductions)):
        lines.append(body_indent + _reduce_line(which, reductions[which], slots, ndim, values))
    for i in ring:  # a row is stored once every row that reads its old values is computed
        call = store_call(i, ndim, f"i0 - m{i} + 1")
        lines += [f"        if i0 >= m{i} - 1:", f"            {call}"]
    for i in ring:
        lines += [f"    for j{i} in range(max(n0 - m{i} + 1, 0), n0):", f"        {store_call(i, ndim, f'j{i}')}"]
    if reductions:
        lines.append(f"    return ({''.join(f'acc{which}, ' for which in range(len(reductions)))})")
    else:
        lines.append("    return 0")
    lines += ["", "", "def _warmup():", f"    return {name}({', '.join(_dummy_arguments(program, ndim))})"]
    return "\n".join(lines) + "\n"


def _dummy_arguments(program: KernelProgram, ndim: int) -> list[str]:
    """Source of arguments with the kernel's types that run zero iterations (to compile it)."""
    args = ["0"] * ndim
    for slot in program.slots:
        zeros = f"np.zeros(1, np.dtype({slot.dtype.str!r}))"
        if slot.kind in (ARRAY, DEFERRED):
            args += [zeros, "0"] + ["0"] * ndim
        elif slot.kind == CONST:
            args.append(f"np.dtype({slot.dtype.str!r}).type(0)")
        if slot.kind == DEFERRED and program.stores_rows:
            args += ["1", zeros, "0"] + ["0"] * ndim + [zeros, "0", "0"]
    return args


def _row_setup(slots, arrays: list[int], last: int) -> list[str]:
    """Per array slot, the innermost row as a slice (contiguous), a scalar (broadcast) or raw.

    Indexing a contiguous row slice with the loop counter lets the compiler drop negative-index
    checks and vectorise; that is worth about 3.5x on a five-point stencil (docs/decisions.md).
    """
    lines = []
    for i in arrays:
        inner = _inner_elements(slots[i])
        if inner == 1:
            lines.append(f"r{i} = a{i}[q{i}_{last}:q{i}_{last} + n{last}]")
        elif inner == 0 and not slots[i].written:
            lines.append(f"b{i} = a{i}[q{i}_{last}]")
    return lines


def _inner_elements(slot) -> int:
    """The innermost stride in elements (a deferred slot's block buffer is always contiguous)."""
    return 1 if slot.kind == DEFERRED else slot.strides[-1] // slot.dtype.itemsize


def _element(slot, slot_id: int, last: int) -> str:
    inner = _inner_elements(slot)
    if inner == 1:
        return f"r{slot_id}[i{last}]"
    if inner == 0 and not slot.written:
        return f"b{slot_id}"
    return f"a{slot_id}[q{slot_id}_{last} + i{last} * s{slot_id}_{last}]"


def _read(slots, slot_id: int, ndim: int, values: dict[int, tuple[str, np.dtype]]) -> tuple[str, np.dtype]:
    if slot_id in values:
        return values[slot_id]
    return _element(slots[slot_id], slot_id, ndim - 1), slots[slot_id].dtype


def _cast_read(slots, slot_id: int, ndim: int, values: dict[int, tuple[str, np.dtype]], dtype: np.dtype) -> str:
    expression, known = _read(slots, slot_id, ndim, values)
    return cast(expression, dtype, known)


def _identity(op: str, acc: np.dtype) -> str:
    """The value reduction ``op`` starts from (the opcode table's ``identity``); a selecting one
    (no identity) starts from the extreme value of ``acc`` that every element replaces."""
    entry = spec(op)
    if isinstance(entry.identity, bool):
        return str(entry.identity)
    if entry.identity is not None:
        return f"np.{acc.name}({entry.identity})"
    smallest = entry.combine == "minimum"
    if acc.kind == "f":
        return f"np.{acc.name}({'np.inf' if smallest else '-np.inf'})"
    if acc.kind == "b":
        return "True" if smallest else "False"
    info = np.iinfo(acc)
    return f"np.{acc.name}({info.max if smallest else info.min})"


def _reduce_line(which: int, reduction, slots, ndim: int, values) -> str:
    value = _cast_read(slots, reduction.source, ndim, values, reduction.acc)
    return _accumulate(reduction.op, f"acc{which}", value, reduction.acc.kind == "f")


def _accumulate(op: str, acc: str, value: str, real: bool = False) -> str:
    """One element's update of accumulator ``acc`` with ``op``'s combining ufunc; real sums and
    products may be reordered (``vector_math.reassoc_add``) so that the loop vectorises."""
    combine = spec(op).combine
    assert combine is not None
    symbol = COMBINE_OPERATORS[combine]
    if op in GroupOp.SELECTING:
        return f"{acc} = ({value}) if (({value}) {symbol} {acc} or ({value}) != ({value})) else {acc}"
    if op in GroupOp.LOGICAL:
        return f"{acc} = {acc} {symbol} ({value} != 0)"
    if real:
        return f"{acc} = vm.reassoc_{combine}({acc}, {value})"
    return f"{acc} {symbol}= {value}"


def _reduced_flags(program: KernelProgram) -> list[str]:
    """``rf`` / ``rl``: whether the loops over the reduced axes are at their first / last index."""
    if not any(step.axis_reduction for step in program.steps):
        return []
    axes = [axis - program.partition.axis for axis in program.reduced]
    first = " and ".join(f"i{d} == 0" for d in axes) or "True"
    last = " and ".join(f"i{d} == n{d} - 1" for d in axes) or "True"
    return [f"rf = {first}", f"rl = {last}"]


def _axis_reduction_lines(k: int, step, slots, ndim: int, values, program: KernelProgram) -> list[str]:
    """One element of an axis reduction: start from the identity (min, max: the value) at the
    first index of the reduced axes, else from the output; a mean divides at the last index as
    NumPy's does (in the output's dtype promoted with ``intp``)."""
    op = step.op
    out = step.outputs[0]
    dtype = slots[out].dtype
    element = _element(slots[out], out, ndim - 1)
    value = _cast_read(slots, step.inputs[0], ndim, values, np.dtype(bool) if op in GroupOp.LOGICAL else dtype)
    x, y = f"x{k}", f"v{k}"
    lines = [f"{x} = {value}"]
    combine = spec(op).combine
    assert combine is not None
    symbol = COMBINE_OPERATORS[combine]
    if op in GroupOp.SELECTING:
        lines += [f"if rf or {x} {symbol} {element} or {x} != {x}:", f"    {element} = {x}"]
        return lines
    lines.append(f"{y} = {cast(f'({_identity(op, dtype)} if rf else {element}) {symbol} {x}', dtype)}")
    if op == "mean":
        divide = np.result_type(dtype, np.intp)
        count = " * ".join(f"n{axis - program.partition.axis}" for axis in program.reduced) or "1"
        lines += ["if rl:", f"    {y} = {cast(f'{cast(y, divide, dtype)} / {cast(count, divide)}', dtype)}"]
    lines.append(f"{element} = {y}")
    return lines
