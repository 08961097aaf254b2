"""Which instructions a fusion group may take, and the iteration order of a group with axis
reductions: element-wise instructions over one shape, and full or axis reductions that a kernel's
loop can accumulate exactly as NumPy does.
"""

from __future__ import annotations

import numpy as np

from shoal.bytecode import Const, GroupOp, Instruction, View

FUSIBLE_REDUCTIONS = GroupOp.FUSED_REDUCTION
MIN_KEPT_ROW = 64  # an axis reduction fuses only if its input's last axis (kept) is this long
_NUMERIC_KINDS = "biufc"


def fusible_shape(instruction: Instruction) -> tuple[int, ...] | None:
    """The iteration shape if ``instruction`` can join a group, else None."""
    if any(out.dtype.kind not in _NUMERIC_KINDS for out in instruction.outputs):
        return None
    for operand in instruction.inputs:
        if isinstance(operand, View) and operand.dtype.kind not in _NUMERIC_KINDS:
            return None
    if instruction.op in FUSIBLE_REDUCTIONS:
        source = instruction.inputs[0]
        if not isinstance(source, View) or 0 in source.shape:
            return None
        if instruction.op in GroupOp.SELECTING and source.dtype.kind == "c":
            return None
        if not _full_reduction(instruction, source) and not _fusible_axis_reduction(instruction, source):
            return None
        return source.shape
    if instruction.op not in GroupOp.FUSED_ELEMENTWISE:
        return None
    shapes = {out.shape for out in instruction.outputs}
    if len(shapes) != 1:
        return None
    return shapes.pop()


def _full_reduction(instruction: Instruction, source: View) -> bool:
    axis = instruction.attr("axis")
    if axis is None:
        return True
    axes = axis if isinstance(axis, tuple) else (axis,)
    return sorted(a % source.ndim for a in axes) == list(range(source.ndim)) if source.ndim else False


def reduced_axes(instruction: Instruction) -> tuple[int, ...] | None:
    """The sorted, non-negative axes a reduction along some (not all) axes reduces, else None."""
    if instruction.op not in FUSIBLE_REDUCTIONS or not instruction.inputs or not isinstance(instruction.inputs[0], View):
        return None
    source = instruction.inputs[0]
    axis = instruction.attr("axis")
    if axis is None or _full_reduction(instruction, source):
        return None
    return tuple(sorted({a % source.ndim for a in (axis if isinstance(axis, tuple) else (axis,))}))


def reduction_order(ndim: int, reduced: tuple[int, ...]) -> tuple[int, ...]:
    """The order a group with axis reductions iterates its axes in: the kept axes but the last,
    the reduced axes, the last axis (kept). View-blocks split only the leading kept axes, so one
    view-block computes whole output elements, adding their inputs in NumPy's order (NumPy adds
    along a reduced axis that is not the innermost one element after element from zero)."""
    kept = [a for a in range(ndim) if a not in reduced]
    return (*kept[:-1], *reduced, kept[-1])


def reduction_strides(instruction: Instruction, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The axis reduction's output strides over its input's shape: 0 along the reduced axes."""
    out = instruction.outputs[0]
    reduced = reduced_axes(instruction) or ()
    if out.ndim == len(shape):  # keepdims
        return tuple(0 if a in reduced else stride for a, stride in enumerate(out.strides))
    strides = iter(out.strides)
    return tuple(0 if a in reduced else next(strides) for a in range(len(shape)))


def _fusible_axis_reduction(instruction: Instruction, source: View) -> bool:
    """True if a reduction along some axes may join a group (see ``reduction_order``)."""
    reduced = reduced_axes(instruction)
    if reduced is None or source.ndim - 1 in reduced or source.ndim - len(reduced) < 2:
        return False
    out = instruction.outputs[0]
    if out.base == source.base or any(s == 0 for n, s in zip(out.shape, out.strides) if n > 1):
        return False
    if out.ndim not in (source.ndim, source.ndim - len(reduced)):
        return False
    if instruction.op == "mean" and (out.dtype.kind not in "fc" or out.dtype.char == "e"):
        return False  # NumPy's mean of float16 adds in float32; an integer mean divides in float
    if instruction.op in GroupOp.LOGICAL and out.dtype != np.bool_:
        return False
    return source.shape[-1] >= MIN_KEPT_ROW


def is_constant(operand: View | Const) -> bool:
    return isinstance(operand, Const)


def loop_dtype_of(operand: View | Const) -> np.dtype | type:
    """What ``resolve_dtypes`` needs for an operand: a dtype, or a Python type if weak."""
    if isinstance(operand, View):
        return operand.dtype
    value = operand.value
    if isinstance(value, np.generic):
        return value.dtype
    if isinstance(value, bool):
        return np.dtype(bool)
    return type(value)
