"""Shape and attribute rules per opcode, and the work each instruction asks for.

:func:`check_shapes` returns a description of the first inconsistency of one instruction, or
None. Every opcode is covered: element-wise operations (the inputs broadcast to the outputs' shape,
as with NumPy's ``out=``), copy and fill (the input broadcasts to the output; fill's is a scalar), creation (1-D
``arange`` of exactly the elements its start, stop and step make, ``linspace`` of ``num``, 2-D
``eye``), reductions and scans (``axis`` in range; the output drops or keeps the reduced axes),
``gather``/``scatter`` (NumPy's indexing result shape, :mod:`shoal.bytecode.indexing`), sorting,
``take_along_axis``, ``matmul``/``dot``, ``fft`` (the transformed axes take their lengths ``n``,
halved plus one on the last for real forward transforms) and ``linalg``/``linalg_pair`` (NumPy's
core shapes per function over broadcast stacks). So an instruction never produces, allocates or
iterates over more elements than its declared views hold: a lying count is rejected.

:func:`work` is the number of element steps an instruction takes, from its declared shapes.
All arithmetic is on Python integers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from shoal.bytecode.indexing import IndexKeyError, broadcast_shapes, indexed_shape
from shoal.bytecode.ir import Const, Operand, View
from shoal.bytecode.opcodes import (
    FFT_FUNCTIONS,
    FFT_ONE_AXIS,
    LINALG_PAIR,
    LINALG_SINGLE,
    UFUNC_NAMES,
    GroupOp,
    Kind,
    OpSpec,
)

Shape = tuple[int, ...]
BINARY_UFUNCS = frozenset(name for name in UFUNC_NAMES if name != "clip" and getattr(np, name).nin == 2)


class _ShapeError(Exception):
    pass


def check_shapes(
    entry: OpSpec, outputs: Sequence[View], inputs: Sequence[Operand], attrs: Mapping[str, Any]
) -> str | None:
    """The first shape or attribute inconsistency of one instruction, or None if it is sound."""
    try:
        _check(entry, outputs, inputs, attrs)
    except (_ShapeError, IndexKeyError) as error:
        return str(error)
    return None


def work(entry: OpSpec, outputs: Sequence[View], inputs: Sequence[Operand], attrs: Mapping[str, Any]) -> int:
    """Element steps the instruction takes: every element of every view it reads or writes, times
    the contracted length for ``matmul``/``dot`` and the comparisons of a sort. Assumes
    :func:`check_shapes` passed."""
    views = [*outputs, *(operand for operand in inputs if isinstance(operand, View))]
    total = sum(view.size for view in views)
    if entry.name in ("matmul", "dot") and all(isinstance(op, View) and op.shape for op in inputs):
        left = inputs[0]
        assert isinstance(left, View)
        total += outputs[0].size * left.shape[-1]
    elif entry.kind is Kind.SORTING and inputs and isinstance(inputs[0], View):
        size = inputs[0].size
        total += size * max(1, size.bit_length())
    elif entry.name == "scatter":
        total += math.prod(indexed_shape(outputs[0].shape, attrs["key"], [_shape(op) for op in inputs[1:]]))
    return total


def _check(entry: OpSpec, outputs: Sequence[View], inputs: Sequence[Operand], attrs: Mapping[str, Any]) -> None:
    _check_common_attrs(attrs)
    in_shapes = [_shape(operand) for operand in inputs]
    out_shapes = [tuple(map(int, view.shape)) for view in outputs]
    name = entry.name
    if entry.kind is Kind.ELEMENTWISE:
        first = out_shapes[0]
        if all(shape == first or shape == () for shape in (*in_shapes, *out_shapes)) and first in in_shapes:
            return  # the common case: inputs of the output's shape, or scalars
        _broadcast(in_shapes, "input shapes {} do not broadcast together")
        expected = _broadcast([*in_shapes, *out_shapes], "input and output shapes {} do not broadcast together")
        for position, shape in enumerate(out_shapes):
            if shape != expected:  # as NumPy's ``out=``: the inputs broadcast to every output
                raise _ShapeError(f"output {position} shape {shape} is not {expected}, the broadcast of the inputs and outputs")
    elif name in GroupOp.COPIES:
        if name == "fill" and in_shapes[0] != ():
            raise _ShapeError(f"fill takes a scalar, not an input of shape {in_shapes[0]}")
        _broadcasts_to(in_shapes[0], out_shapes[0], "input")
    elif name == "arange":
        _arange(out_shapes[0], attrs)
    elif name == "linspace":
        _linspace(out_shapes[0], attrs)
    elif name == "eye":
        if len(out_shapes[0]) != 2:
            raise _ShapeError(f"output shape {out_shapes[0]} is not 2-D")
        _int_attr(attrs, "k")
    elif entry.kind is Kind.REDUCTION:
        _reduction(name, _view_input(inputs, 0), out_shapes[0], attrs)
    elif entry.kind is Kind.SCAN:
        if name == "accumulate" and attrs.get("ufunc") not in BINARY_UFUNCS:
            raise _ShapeError(f"attribute 'ufunc' {attrs.get('ufunc')!r} is not a binary ufunc")
        _expect(out_shapes[0], _scanned(_view_input(inputs, 0), attrs), "the scan of the input")
    elif name in ("gather", "scatter"):
        _indexing(name, outputs[0], inputs, attrs)
    elif entry.kind is Kind.SORTING:
        _sorting(name, _view_input(inputs, 0), out_shapes[0], attrs)
    elif name == "take_along_axis":
        _take_along_axis(_view_input(inputs, 0), _index_input(inputs, 1), out_shapes[0], attrs)
    elif name == "matmul":
        _expect(out_shapes[0], _matmul(*in_shapes), "the matrix product of the inputs")
    elif name == "dot":
        _expect(out_shapes[0], _dot(*in_shapes), "the dot product of the inputs")
    elif name == "reduceat":
        _reduceat(_view_input(inputs, 0), _index_input(inputs, 1), out_shapes[0], attrs)
    elif name == "fft":
        _expect(out_shapes[0], _fft(_view_input(inputs, 0), attrs), "the transform of the input")
    elif name in ("linalg", "linalg_pair"):
        _linalg_outputs(name, [_view_input(inputs, i) for i in range(len(inputs))], out_shapes, attrs)


def _check_common_attrs(attrs: Mapping[str, Any]) -> None:
    dtype = attrs.get("dtype")
    if dtype is not None and not isinstance(dtype, np.dtype):
        raise _ShapeError(f"attribute 'dtype' must be a dtype or None, got {dtype!r}")
    keepdims = attrs.get("keepdims", False)
    if not isinstance(keepdims, bool):
        raise _ShapeError(f"attribute 'keepdims' must be a bool, got {keepdims!r}")


def _shape(operand: Operand) -> Shape:
    return () if isinstance(operand, Const) else tuple(map(int, operand.shape))


def _view_input(inputs: Sequence[Operand], position: int) -> Shape:
    operand = inputs[position]
    if not isinstance(operand, View):
        raise _ShapeError(f"input {position} must be a view, not a constant")
    return _shape(operand)


def _index_input(inputs: Sequence[Operand], position: int) -> Shape:
    operand = inputs[position]
    if isinstance(operand, Const):
        value = operand.value
        if isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_):
            return ()
    elif operand.dtype.kind in "iu":
        return _shape(operand)
    raise _ShapeError(f"input {position} must be an integer index array")


def _expect(actual: Shape, expected: Shape, what: str) -> None:
    if tuple(actual) != expected:
        raise _ShapeError(f"output shape {actual} is not {expected}, {what}")


def _broadcast(shapes: Sequence[Shape], message: str) -> Shape:
    """NumPy's broadcast of ``shapes``; ``message`` (with ``{}`` for the shapes) if they do not."""
    result = broadcast_shapes(shapes)
    if result is None:
        raise _ShapeError(message.format(", ".join(map(str, shapes))))
    return result


def _broadcasts_to(source: Shape, target: Shape, what: str) -> None:
    target = tuple(target)
    message = f"{what} shape {source} does not broadcast to {target}"
    try:
        fits = len(source) <= len(target) and _broadcast([source, target], message) == target
    except _ShapeError:
        fits = False
    if not fits:
        raise _ShapeError(message)


def _int_attr(attrs: Mapping[str, Any], name: str) -> int:
    value = attrs.get(name)
    if not isinstance(value, int) or isinstance(value, bool):
        raise _ShapeError(f"attribute {name!r} must be an int, got {value!r}")
    return value


def _real(attrs: Mapping[str, Any], name: str, kinds: tuple[type, ...] = (int, float)) -> Any:
    value = attrs.get(name)
    if isinstance(value, np.generic):
        value = value.item()
    if not isinstance(value, kinds):
        raise _ShapeError(f"attribute {name!r} must be a number, got {value!r}")
    return value


def arange_length(start: float, stop: float, step: float) -> int:
    """NumPy's ``len(np.arange(start, stop, step))``: ``ceil((stop - start) / step)``, at least 0,
    with the true division NumPy uses (``_calc_length`` in ``ctors.c``)."""
    if step == 0:
        raise _ShapeError("arange step is zero")
    try:
        delta = stop - start
        quotient = delta / step
        if quotient == 0 and delta != 0:  # the quotient underflowed: NumPy counts its sign
            return 0 if math.copysign(1.0, quotient) < 0 else 1
        length = math.ceil(quotient)
    except (OverflowError, ValueError, ZeroDivisionError):
        raise _ShapeError(f"arange({start!r}, {stop!r}, {step!r}) has no finite length") from None
    return max(0, length)


def _arange(shape: Shape, attrs: Mapping[str, Any]) -> None:
    if len(shape) != 1:
        raise _ShapeError(f"output shape {shape} is not 1-D")
    start, stop, step = (_real(attrs, name) for name in ("start", "stop", "step"))
    length = arange_length(start, stop, step)
    if length != shape[0]:
        raise _ShapeError(f"arange({start!r}, {stop!r}, {step!r}) makes {length} elements, the output holds {shape[0]}")


def _linspace(shape: Shape, attrs: Mapping[str, Any]) -> None:
    if len(shape) != 1:
        raise _ShapeError(f"output shape {shape} is not 1-D")
    num = _int_attr(attrs, "num")
    if num != shape[0]:
        raise _ShapeError(f"output shape {shape} does not hold num={num!r} elements")
    for name in ("start", "stop"):
        _real(attrs, name, (int, float, complex))
    if not isinstance(attrs.get("endpoint"), bool):
        raise _ShapeError(f"attribute 'endpoint' must be a bool, got {attrs.get('endpoint')!r}")


def _normalized_axes(axis: Any, ndim: int, tuples: bool = True) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, tuple) and not tuples:
        raise _ShapeError(f"axis {axis!r} must be an int or None")
    axes = axis if isinstance(axis, tuple) else (axis,)
    normalized = []
    for item in axes:
        if not isinstance(item, int) or isinstance(item, bool) or not -ndim <= item < ndim:
            raise _ShapeError(f"axis {item!r} is out of bounds for an input of {ndim} dimensions")
        normalized.append(item % ndim)
    if len(set(normalized)) != len(normalized):
        raise _ShapeError(f"axis {axis!r} repeats an axis")
    return tuple(normalized)


def _reduction(name: str, shape: Shape, out: Shape, attrs: Mapping[str, Any]) -> None:
    if name == "reduce" and attrs.get("ufunc") not in BINARY_UFUNCS:
        raise _ShapeError(f"attribute 'ufunc' {attrs.get('ufunc')!r} is not a binary ufunc of the table")
    ddof = attrs.get("ddof", 0)
    if not isinstance(ddof, int | float) or isinstance(ddof, bool):
        raise _ShapeError(f"attribute 'ddof' must be a number, got {attrs['ddof']!r}")
    axes = _normalized_axes(attrs.get("axis"), len(shape), tuples=name not in ("argmin", "argmax"))
    if attrs.get("keepdims", False):
        expected = tuple(1 if dim in axes else n for dim, n in enumerate(shape))
    else:
        expected = tuple(n for dim, n in enumerate(shape) if dim not in axes)
    _expect(out, expected, "the reduction of the input")


def _scanned(shape: Shape, attrs: Mapping[str, Any]) -> Shape:
    axis = attrs.get("axis")
    if axis is None:
        return (math.prod(shape),)
    _normalized_axes(axis, len(shape), tuples=False)
    return shape


def _indexing(name: str, target: View, inputs: Sequence[Operand], attrs: Mapping[str, Any]) -> None:
    index_shapes = [_index_input(inputs, position) for position in range(1, len(inputs))]
    if name == "gather":
        expected = indexed_shape(_view_input(inputs, 0), attrs["key"], index_shapes)
        _expect(target.shape, expected, "the indexing result")
        return
    result = indexed_shape(_shape(target), attrs["key"], index_shapes)
    value = _shape(inputs[0])
    while len(value) > len(result) and value[0] == 1:
        value = value[1:]
    _broadcasts_to(value, result, "value")


def _sorting(name: str, shape: Shape, out: Shape, attrs: Mapping[str, Any]) -> None:
    axis = attrs.get("axis")
    if axis is None:
        expected: Shape = (math.prod(shape),)
        length = expected[0]
    else:
        (dim,) = _normalized_axes(axis, len(shape), tuples=False)
        expected, length = shape, shape[dim]
    kind = attrs.get("kind")
    if kind is not None and not (isinstance(kind, str) and kind[:1].lower() in ("q", "m", "h", "s")):
        raise _ShapeError(f"attribute 'kind' {kind!r} is not a sort kind")  # NumPy reads the first letter
    if name in ("partition", "argpartition"):
        kth = attrs.get("kth")
        for value in kth if isinstance(kth, tuple) else (kth,):
            if not isinstance(value, int) or isinstance(value, bool) or not -length <= value < length:
                raise _ShapeError(f"kth {value!r} is out of bounds for an axis of {length}")
    _expect(out, expected, "the shape of the input")


def _take_along_axis(shape: Shape, index: Shape, out: Shape, attrs: Mapping[str, Any]) -> None:
    (axis,) = _normalized_axes(_int_attr(attrs, "axis"), len(shape), tuples=False)
    if len(index) != len(shape):
        raise _ShapeError(f"index shape {index} and input shape {shape} differ in dimensions")
    outer = _broadcast(
        [(*shape[:axis], 1, *shape[axis + 1 :]), (*index[:axis], 1, *index[axis + 1 :])],
        "input and index shapes {} do not broadcast",
    )
    _expect(out, (*outer[:axis], index[axis], *outer[axis + 1 :]), "the shape take_along_axis makes")


def _matmul(left: Shape, right: Shape) -> Shape:
    if not left or not right:
        raise _ShapeError("matmul inputs must have at least one dimension")
    a = (1, *left) if len(left) == 1 else left
    b = (*right, 1) if len(right) == 1 else right
    if a[-1] != b[-2]:
        raise _ShapeError(f"matmul core dimensions {left} and {right} do not match")
    stack = _broadcast([a[:-2], b[:-2]], f"matmul stack dimensions {left} and {right} do not broadcast")
    result = (*stack, a[-2], b[-1])
    if len(left) == 1:
        result = result[:-2] + result[-1:]
    if len(right) == 1:
        result = result[:-1]
    return result


def _dot(left: Shape, right: Shape) -> Shape:
    if not left or not right:
        return left or right
    if len(right) == 1:
        if left[-1] != right[0]:
            raise _ShapeError(f"dot dimensions {left} and {right} do not match")
        return left[:-1]
    if left[-1] != right[-2]:
        raise _ShapeError(f"dot dimensions {left} and {right} do not match")
    return left[:-1] + right[:-2] + right[-1:]


def _fft(source: Shape, attrs: Mapping[str, Any]) -> Shape:
    function, lengths, axes = attrs.get("function"), attrs.get("n"), attrs.get("axes")
    if function not in FFT_FUNCTIONS:
        raise _ShapeError(f"attribute 'function' {function!r} is not an np.fft transform")
    if not (isinstance(lengths, tuple) and isinstance(axes, tuple) and len(lengths) == len(axes) and axes):
        raise _ShapeError("attributes 'n' and 'axes' must be tuples of equal, non-zero length")
    if function in FFT_ONE_AXIS and len(axes) != 1:
        raise _ShapeError(f"{function} transforms one axis, not {len(axes)}")
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in lengths):
        raise _ShapeError(f"attribute 'n' {lengths!r} must hold positive lengths")
    if not all(isinstance(a, int) and not isinstance(a, bool) and 0 <= a < len(source) for a in axes) or len(set(axes)) != len(axes):
        raise _ShapeError(f"attribute 'axes' {axes!r} must be distinct axes of the input {source}")
    shape = list(source)
    for axis, n in zip(axes, lengths):
        shape[axis] = n
    if function in ("rfft", "ihfft", "rfftn", "rfft2"):
        shape[axes[-1]] = lengths[-1] // 2 + 1
    return tuple(shape)


def _square_stack(shape: Shape, what: str) -> tuple[Shape, int]:
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise _ShapeError(f"{what} {shape} is not a stack of square matrices")
    return shape[:-2], shape[-1]


def _linalg_outputs(name: str, in_shapes: list[Shape], out_shapes: list[Shape], attrs: Mapping[str, Any]) -> None:
    function = attrs.get("function")
    if function not in (LINALG_PAIR if name == "linalg_pair" else LINALG_SINGLE):
        raise _ShapeError(f"attribute 'function' {function!r} is not an np.linalg function of {name}")
    if len(in_shapes) != (2 if function == "solve" else 1):
        raise _ShapeError(f"{function} takes {2 if function == 'solve' else 1} input(s), not {len(in_shapes)}")
    source = in_shapes[0]
    if len(source) < 2:
        raise _ShapeError(f"input {source} is not a stack of matrices")
    stack, rows, columns = source[:-2], source[-2], source[-1]
    if function in ("det", "inv", "cholesky", "eigvalsh", "eigh", "slogdet", "solve"):
        stack, rows = _square_stack(source, "input")
        columns = rows
    expected: tuple[Shape, ...]
    if function == "solve":
        other = in_shapes[1]
        if len(other) == 1:
            if other[0] != rows:
                raise _ShapeError(f"solve right-hand side {other} does not match the matrices {source}")
            expected = ((*stack, rows),)
        else:
            if len(other) < 2 or other[-2] != rows:
                raise _ShapeError(f"solve right-hand side {other} does not match the matrices {source}")
            batch = _broadcast([stack, other[:-2]], f"solve stacks {source} and {other} do not broadcast")
            expected = ((*batch, rows, other[-1]),)
    elif function in ("det", "slogdet"):
        expected = (stack,) * (2 if function == "slogdet" else 1)
    elif function in ("inv", "cholesky"):
        expected = (source,)
    elif function == "pinv":
        expected = ((*stack, columns, rows),)
    elif function == "eigvalsh":
        expected = ((*stack, rows),)
    elif function == "eigh":
        expected = ((*stack, rows), source)
    elif function == "svdvals":
        expected = ((*stack, min(rows, columns)),)
    else:  # qr, reduced
        k = min(rows, columns)
        expected = ((*stack, rows, k), (*stack, k, columns))
    for position, (actual, shape) in enumerate(zip(out_shapes, expected)):
        _expect(actual, shape, f"output {position} of {function}")


def _reduceat(source: Shape, indices: Shape, out: Shape, attrs: Mapping[str, Any]) -> None:
    if attrs.get("ufunc") not in BINARY_UFUNCS:
        raise _ShapeError(f"attribute 'ufunc' {attrs.get('ufunc')!r} is not a binary ufunc")
    if len(indices) != 1:
        raise _ShapeError(f"reduceat indices of shape {indices} are not 1-D")
    axis = attrs.get("axis")
    if not isinstance(axis, int) or isinstance(axis, bool) or not 0 <= axis < len(source):
        raise _ShapeError(f"attribute 'axis' {axis!r} is not an axis of the input {source}")
    _expect(out, (*source[:axis], indices[0], *source[axis + 1 :]), "the input with one element per segment")
