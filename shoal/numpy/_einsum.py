"""``np.einsum`` composed from lazy operations.

The subscripts are parsed into one label per axis (an ellipsis becomes labels of its own).
Labels repeated within an operand become a diagonal view; labels no one else needs are summed
away; then operands are contracted two at a time, left to right, as one batched ``matmul`` each
(kept labels of both sides, the shared labels the rest still needs as batch axes, the others
summed by the product). The result is a transpose into the output order.

NumPy itself runs first on probes (every axis shrunk to at most one element) with the call's own
form and keywords (the sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])``, ``dtype=``,
``casting=``, ``order=``, ``optimize=``, ``out=`` as a probe of its dtype): that gives the result
dtype and every error. ``dtype=`` is the dtype the operands are cast to and summed in, as in
NumPy; the result is then written into ``out`` (its shape checked against the real one).
``optimize`` changes NumPy's order of contraction, not the result: it is checked, not followed.
"""

from __future__ import annotations

import contextlib
import math
import operator
import string
from typing import Any

import numpy as np

from shoal.numpy import _dispatch, _reduce, _shape
from shoal.numpy._lazy import is_lazy
from shoal.numpy._linalg import matmul
from shoal.numpy._numpy_data import as_lazy
from shoal.numpy._probe import quietly, value_probe

_LETTERS = set(string.ascii_letters)


def _labels(term: str, ndim: int, ellipsis: str) -> list[str]:
    if "..." not in term:
        return list(term)
    head, tail = term.split("...")
    count = ndim - len(head) - len(tail)
    return [*head, *ellipsis[len(ellipsis) - count :], *tail]


def _parse(subscripts: str, ndims: list[int]) -> tuple[list[list[str]], list[str]]:
    """Each operand's labels, one per axis, and the output's."""
    text = subscripts.replace(" ", "")
    inputs, arrow, output = text.partition("->")
    terms = inputs.split(",")
    widest = max((ndim - len(term.replace("...", "")) for term, ndim in zip(terms, ndims) if "..." in term), default=0)
    ellipsis = "".join(chr(0x100 + i) for i in range(widest))  # labels no subscript can spell
    labels = [_labels(term, ndim, ellipsis) for term, ndim in zip(terms, ndims)]
    if arrow:
        result = _labels(output, len(output.replace("...", "")) + widest, ellipsis)
    else:
        counts: dict[str, int] = {}
        for term in labels:
            for label in term:
                counts[label] = counts.get(label, 0) + 1
        result = [*ellipsis, *sorted(label for label, n in counts.items() if n == 1 and label in _LETTERS)]
    return labels, result


def _diagonals(array: Any, labels: list[str]) -> tuple[Any, list[str]]:
    """``array`` with each repeated label reduced to one axis (a diagonal view, writable where
    ``array`` is, as einsum's own view: ``ndarray.diagonal``'s is read-only)."""
    readonly = getattr(array, "_readonly", True)
    while len(set(labels)) < len(labels):
        label = next(item for item in labels if labels.count(item) > 1)
        first = labels.index(label)
        second = labels.index(label, first + 1)
        array = _shape.diagonal(array, 0, first, second)
        array._readonly = readonly
        labels = [item for i, item in enumerate(labels) if i not in (first, second)] + [label]
    return array, labels


def _sum_away(array: Any, labels: list[str], keep: set[str], dtype: np.dtype) -> tuple[Any, list[str]]:
    axes = tuple(i for i, label in enumerate(labels) if label not in keep)
    if not axes:
        return array, labels
    summed = _reduce.reduction("sum", array, axis=axes, dtype=dtype)
    return as_lazy(summed), [label for label in labels if label in keep]


def _ordered(array: Any, labels: list[str], order: list[str]) -> Any:
    return _shape.transpose(array, tuple(labels.index(label) for label in order))


def _contract(left: Any, left_labels: list[str], right: Any, right_labels: list[str], keep: set[str]) -> tuple[Any, list[str]]:
    """The product of two operands summed over their shared labels outside ``keep``."""
    shared = [label for label in left_labels if label in right_labels]
    batch = [label for label in shared if label in keep]
    summed = [label for label in shared if label not in keep]
    own_left = [label for label in left_labels if label not in shared]
    own_right = [label for label in right_labels if label not in shared]
    sizes = dict(zip(left_labels, left.shape)) | dict(zip(right_labels, right.shape))
    batch_shape = tuple(sizes[label] for label in batch)
    rows, inner, columns = (math.prod(sizes[label] for label in group) for group in (own_left, summed, own_right))
    first = _ordered(left, left_labels, [*batch, *own_left, *summed]).reshape((*batch_shape, rows, inner))
    second = _ordered(right, right_labels, [*batch, *summed, *own_right]).reshape((*batch_shape, inner, columns))
    labels = [*batch, *own_left, *own_right]
    return as_lazy(matmul(first, second)).reshape(tuple(sizes[label] for label in labels)), labels


def _sizes(labels: list[list[str]], shapes: list[tuple[int, ...]]) -> tuple[dict[str, int], set[str]]:
    """Each label's size (size-1 axes broadcast, as in NumPy) and the labels whose sizes conflict."""
    seen: dict[str, set[int]] = {}
    for term, shape in zip(labels, shapes):
        for label, size in zip(term, shape):
            seen.setdefault(label, set()).add(size)
    sizes, conflicts = {}, set()
    for label, values in seen.items():
        other = values - {1}
        if len(other) > 1:
            conflicts.add(label)
        sizes[label] = other.pop() if other else 1
    return sizes, conflicts


def _native(labels: list[list[str]], output: list[str], operands: list[Any], dtype: np.dtype, sizes: dict[str, int]) -> Any:
    terms = []
    for index, (operand, term) in enumerate(zip(operands, labels)):
        array = as_lazy(operand).astype(dtype, copy=False)
        shape = tuple(sizes[label] for label in term)
        if array.shape != shape:  # a broadcast view is read-only; NumPy's views of one operand are not
            array = _shape.broadcast_lazily(array, shape)
        array, term = _diagonals(array, term)
        needed = set(output).union(*(labels[other] for other in range(len(labels)) if other != index))
        terms.append(_sum_away(array, term, needed, dtype))
    array, term = terms[0]
    for index, (other, other_term) in enumerate(terms[1:], start=1):
        keep = set(output).union(*(t for _, t in terms[index + 1 :]))
        array, term = _contract(array, term, other, other_term, keep)
    array, term = _sum_away(array, term, set(output), dtype)
    return _ordered(array, term, output)


def _sublist_subscripts(operands: tuple[Any, ...]) -> tuple[str, list[Any]] | None:
    """The subscripts string and arrays of the sublist form, or None if a sublist has an entry
    NumPy would reject (its probe raised already) or that this cannot spell."""
    arrays = list(operands[0::2])
    sublists = list(operands[1::2])
    output = arrays.pop() if len(operands) % 2 and len(operands) > 1 else None

    def spell(sublist: Any) -> str | None:
        text = []
        for item in sublist:
            if item is Ellipsis:
                text.append("...")
                continue
            try:
                index = operator.index(item)
            except TypeError:
                return None
            if not 0 <= index < 52:
                return None
            text.append(chr(ord("A") + index) if index < 26 else chr(ord("a") + index - 26))
        return "".join(text)

    terms = [spell(sublist) for sublist in sublists]
    result = None if output is None else spell(output)
    if any(term is None for term in terms) or (output is not None and result is None):
        return None
    subscripts = ",".join(term for term in terms if term is not None)
    return (subscripts if output is None else f"{subscripts}->{result}"), arrays


def _out_probe(out: Any, shape: tuple[int, ...]) -> Any:
    """What stands for ``out`` in NumPy's probe: zeros of its dtype in the probe result's shape
    (read-only if ``out`` is); anything not an array stays itself (NumPy rejects it)."""
    if not (is_lazy(out) or isinstance(out, np.ndarray)):
        return out
    probe = np.zeros(shape, out.dtype)
    probe.flags.writeable = bool(out.flags.writeable)
    return probe


def _real_shaped(value_shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Zeros of the real shape and no memory (every stride 0), for NumPy's shape errors."""
    return np.lib.stride_tricks.as_strided(np.zeros(1, dtype), value_shape, (0,) * len(value_shape))


def einsum(*operands: Any, out: Any = None, optimize: Any = False, **kwargs: Any) -> Any:
    """``np.einsum`` for subscript strings and the sublist form, as views, sums and matrix
    products; ``dtype=``, ``casting=``, ``order=``, ``optimize=`` and ``out=`` as NumPy takes them."""
    arguments = (operands, {"out": out, "optimize": optimize, **kwargs})
    if not operands:
        return np.einsum(*operands, out=out, optimize=optimize, **kwargs)  # NumPy's error
    sublists = not isinstance(operands[0], str)
    arrays_at = range(0, len(operands) - (len(operands) % 2 == 1 and len(operands) > 1), 2) if sublists else range(1, len(operands))
    if sublists:  # a lazy array where a sublist goes: its values (NumPy must not see it lazy)
        operands = tuple(value._value() if is_lazy(value) and i not in arrays_at else value for i, value in enumerate(operands))
    inputs = [operands[i] for i in arrays_at]
    shapes, dtypes = [], []
    for value in inputs:
        shapes.append(value.shape if is_lazy(value) else np.shape(value))
        dtypes.append(value.dtype if is_lazy(value) else np.asarray(value).dtype)

    def numpy_einsum(stand_ins: list[Any], **extra: Any) -> Any:
        form = list(operands)
        for position, stand_in in zip(arrays_at, stand_ins):
            form[position] = stand_in
        return quietly(np.einsum, *form, optimize=optimize, **kwargs, **extra)

    def conflicting(subscripts: Any) -> None:
        """NumPy's error for axes of one label with different sizes, raised on stand-ins of the
        operands' own shapes (NumPy's message names them), which hold no memory: a conflict
        fails before NumPy computes anything."""
        labels, _output = _parse(subscripts, [len(shape) for shape in shapes])
        if _sizes(labels, shapes)[1]:
            numpy_einsum([np.broadcast_to(np.zeros((), dtype), shape) for shape, dtype in zip(shapes, dtypes)])

    probes = [value_probe(dtype, shape) for dtype, shape in zip(dtypes, shapes)]
    try:
        probe = np.asarray(numpy_einsum(probes))  # NumPy's errors and the result dtype
    except ValueError:
        if not sublists:  # the probes' small shapes would stand in NumPy's message
            with contextlib.suppress(ValueError, KeyError, IndexError, TypeError):
                conflicting(operands[0])
        raise
    dtype = probe.dtype
    if sublists:
        spelled = _sublist_subscripts(operands)
        if spelled is None:
            return _dispatch.fallback_call("einsum", np.einsum, *arguments)
        subscripts = spelled[0]
    else:
        subscripts = operands[0]
    labels, output = _parse(subscripts, [len(shape) for shape in shapes])
    sizes, conflicts = _sizes(labels, shapes)
    if conflicts:  # NumPy's error, on probes with the conflicting axes at their sizes
        conflicting(subscripts)
        return _dispatch.fallback_call("einsum", np.einsum, *arguments)
    if out is not None:
        shape = tuple(sizes[label] for label in output)
        array = is_lazy(out) or isinstance(out, np.ndarray)
        if not array or out.shape != shape:  # NumPy's error, with operands and out of the real shapes
            real = [_real_shaped(shape, dtype) for shape, dtype in zip(shapes, dtypes)]
            numpy_einsum(real, out=_real_shaped(out.shape, out.dtype) if array else out)
            return _dispatch.fallback_call("einsum", np.einsum, *arguments)
        numpy_einsum(probes, out=_out_probe(out, probe.shape))  # the casting into ``out``
    result = _native(labels, output, inputs, dtype, sizes)
    if out is None:
        contracted = optimize is not False and len(inputs) > 1  # NumPy's optimized paths end in 0-d arrays
        return result[()] if not result.shape and not contracted else result
    if is_lazy(out):
        out[...] = result
    else:
        np.copyto(out, result._value(), casting="unsafe")
    return out


_dispatch.IMPLEMENTATIONS[np.einsum] = einsum
