"""Cheap shape rules per opcode kind, for the verifier's opt-in semantic check.

:func:`check_shapes` returns a description of the first inconsistency, or None. It covers
element-wise operations (outputs have the broadcast shape of the inputs), copy and fill (the
input broadcasts to the output), creation (1-D ``arange``/``linspace`` of ``num`` elements, 2-D
``eye``), reductions (``axis`` in range; the output drops or keeps the reduced axes), scans and
``matmul``/``dot``. Indexing is not checked: its result shape depends on index values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from shoal.bytecode.ir import Const, Operand, View
from shoal.bytecode.opcodes import Kind, OpSpec

Shape = tuple[int, ...]


def check_shapes(
    entry: OpSpec, outputs: Sequence[View], inputs: Sequence[Operand], attrs: Mapping[str, Any]
) -> str | None:
    """The first shape inconsistency of one instruction, or None if its shapes agree."""
    in_shapes = [_shape(operand) for operand in inputs]
    out_shapes = [view.shape for view in outputs]
    if entry.kind is Kind.ELEMENTWISE:
        return _elementwise(out_shapes, in_shapes)
    if entry.name in ("copy", "fill"):
        return _broadcasts_to(in_shapes[0], out_shapes[0])
    if entry.name in ("arange", "linspace"):
        return _creation_1d(entry.name, out_shapes[0], attrs)
    if entry.name == "eye" and len(out_shapes[0]) != 2:
        return f"output shape {out_shapes[0]} is not 2-D"
    if entry.kind is Kind.REDUCTION:
        return _expect(out_shapes[0], _reduced(in_shapes[0], attrs), "the reduction of the input")
    if entry.kind is Kind.SCAN:
        return _expect(out_shapes[0], _scanned(in_shapes[0], attrs), "the scan of the input")
    if entry.name == "matmul":
        return _expect(out_shapes[0], _matmul(*in_shapes), "the matrix product of the inputs")
    if entry.name == "dot":
        return _expect(out_shapes[0], _dot(*in_shapes), "the dot product of the inputs")
    return None


class _ShapeError(Exception):
    pass


def _shape(operand: Operand) -> Shape:
    return () if isinstance(operand, Const) else operand.shape


def _expect(actual: Shape, expected: Shape | str, what: str) -> str | None:
    if isinstance(expected, str):
        return expected
    if actual != expected:
        return f"output shape {actual} is not {expected}, {what}"
    return None


def _elementwise(out_shapes: list[Shape], in_shapes: list[Shape]) -> str | None:
    try:
        expected = np.broadcast_shapes(*in_shapes)
    except ValueError:
        return f"input shapes {', '.join(map(str, in_shapes))} do not broadcast together"
    for position, shape in enumerate(out_shapes):
        if shape != expected:
            return f"output {position} shape {shape} is not {expected}, the broadcast of the inputs"
    return None


def _broadcasts_to(source: Shape, target: Shape) -> str | None:
    try:
        if np.broadcast_shapes(source, target) == target:
            return None
    except ValueError:
        pass
    return f"input shape {source} does not broadcast to output shape {target}"


def _creation_1d(name: str, shape: Shape, attrs: Mapping[str, Any]) -> str | None:
    if len(shape) != 1:
        return f"output shape {shape} is not 1-D"
    if name == "linspace" and attrs.get("num") != shape[0]:
        return f"output shape {shape} does not hold num={attrs.get('num')!r} elements"
    return None


def _normalized_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    normalized = []
    for item in axes:
        if not isinstance(item, int) or isinstance(item, bool) or not -ndim <= item < ndim:
            raise _ShapeError(f"axis {item!r} is out of bounds for an input of {ndim} dimensions")
        normalized.append(item % ndim)
    if len(set(normalized)) != len(normalized):
        raise _ShapeError(f"axis {axis!r} repeats an axis")
    return tuple(normalized)


def _reduced(shape: Shape, attrs: Mapping[str, Any]) -> Shape | str:
    try:
        axes = _normalized_axes(attrs.get("axis"), len(shape))
    except _ShapeError as error:
        return str(error)
    if attrs.get("keepdims", False):
        return tuple(1 if dim in axes else n for dim, n in enumerate(shape))
    return tuple(n for dim, n in enumerate(shape) if dim not in axes)


def _scanned(shape: Shape, attrs: Mapping[str, Any]) -> Shape | str:
    axis = attrs.get("axis")
    if axis is None:
        return (int(np.prod(shape, dtype=np.int64)),)
    if isinstance(axis, tuple):
        return f"axis {axis!r} of a scan must be an int or None"
    try:
        _normalized_axes(axis, len(shape))
    except _ShapeError as error:
        return str(error)
    return shape


def _matmul(left: Shape, right: Shape) -> Shape | str:
    if not left or not right:
        return "matmul inputs must have at least one dimension"
    a = (1, *left) if len(left) == 1 else left
    b = (*right, 1) if len(right) == 1 else right
    if a[-1] != b[-2]:
        return f"matmul core dimensions {left} and {right} do not match"
    try:
        stack = np.broadcast_shapes(a[:-2], b[:-2])
    except ValueError:
        return f"matmul stack dimensions {left} and {right} do not broadcast"
    result = (*stack, a[-2], b[-1])
    if len(left) == 1:
        result = result[:-2] + result[-1:]
    if len(right) == 1:
        result = result[:-1]
    return result


def _dot(left: Shape, right: Shape) -> Shape | str:
    if not left or not right:
        return left or right
    if len(right) == 1:
        if left[-1] != right[0]:
            return f"dot dimensions {left} and {right} do not match"
        return left[:-1]
    if left[-1] != right[-2]:
        return f"dot dimensions {left} and {right} do not match"
    return left[:-1] + right[:-2] + right[-1:]
