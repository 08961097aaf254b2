"""NumPy's indexing result shape for a ``gather``/``scatter`` key, from shapes alone.

A key is a tuple of items: ``("slice", start, stop, step)``, ``("int", i)``, ``("array", n)``
(the ``n``-th index array, an integer view), ``("newaxis",)`` and ``("ellipsis",)``.
:func:`indexed_shape` follows NumPy's rules (``numpy/_core/src/multiarray/mapping.c``): integer
items become advanced indices once any array is present; the advanced indices broadcast together
and their block replaces the first of them when they are consecutive, else it comes first.
Everything is computed in Python integers, so no key makes it wrap around or allocate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Shape = tuple[int, ...]
MAX_RESULT_NDIM = 64


class IndexKeyError(ValueError):
    """A key NumPy would reject (``IndexError``) or that is malformed; the message says why."""


def indexed_shape(shape: Shape, key: Any, index_shapes: Sequence[Shape]) -> Shape:
    """The shape of ``source[key]`` for a source of ``shape``; :class:`IndexKeyError` if the key is
    malformed or out of range."""
    items = _parse(key, len(index_shapes))
    consumed = sum(1 for item in items if item[0] in ("slice", "int", "array"))
    if consumed > len(shape):
        raise IndexKeyError(f"too many indices: {consumed} for {len(shape)} dimensions")
    fancy = any(item[0] == "array" for item in items)
    expanded: list[tuple[Any, ...]] = []
    for item in items:
        if item[0] == "ellipsis":
            expanded.append(("ellipsis", len(shape) - consumed))
        else:
            expanded.append(item)
    if not any(item[0] == "ellipsis" for item in expanded):
        expanded.append(("ellipsis", len(shape) - consumed))
    result: list[int] = []
    advanced: list[Shape] = []
    consec = -1
    status = -1  # -1 no advanced index yet, 0 inside the first run, 1 after it, 2 not consecutive
    dim = 0
    for item in expanded:
        tag = item[0]
        is_advanced = tag == "array" or (tag == "int" and fancy)
        if is_advanced:
            if status == -1:
                consec, status = len(result), 0
            elif status == 1:
                consec, status = 0, 2
        elif status == 0:
            status = 1
        if tag == "ellipsis":
            result.extend(shape[dim : dim + item[1]])
            dim += item[1]
        elif tag == "newaxis":
            result.append(1)
        elif tag == "slice":
            result.append(len(range(*slice(*item[1:]).indices(shape[dim]))))
            dim += 1
        elif tag == "int":
            extent, value = shape[dim], item[1]
            if not -extent <= value < extent:
                raise IndexKeyError(f"index {value} is out of bounds for axis {dim} with size {extent}")
            if fancy:
                advanced.append(())
            dim += 1
        else:  # array
            advanced.append(tuple(index_shapes[item[1]]))
            dim += 1
    if fancy:
        block = _broadcast(advanced)
        result[consec:consec] = block
    if len(result) > MAX_RESULT_NDIM:
        raise IndexKeyError(f"the result would have {len(result)} dimensions, more than {MAX_RESULT_NDIM}")
    return tuple(result)


def _parse(key: Any, narrays: int) -> list[tuple[Any, ...]]:
    if not isinstance(key, tuple):
        raise IndexKeyError(f"key {key!r} is not a tuple of index items")
    items: list[tuple[Any, ...]] = []
    ellipses = 0
    for item in key:
        if not (isinstance(item, tuple) and item and isinstance(item[0], str)):
            raise IndexKeyError(f"index item {item!r} is not a tagged tuple")
        tag, fields = item[0], item[1:]
        if tag == "slice" and len(fields) == 3 and all(_is_int(v) or v is None for v in fields):
            if fields[2] == 0:
                raise IndexKeyError("slice step cannot be zero")
        elif tag == "int" and len(fields) == 1 and _is_int(fields[0]):
            pass
        elif tag == "array" and len(fields) == 1 and _is_int(fields[0]):
            if not 0 <= fields[0] < narrays:
                raise IndexKeyError(f"index item {item!r} names index array {fields[0]}, not one of the {narrays} inputs")
        elif tag in ("newaxis", "ellipsis") and not fields:
            ellipses += tag == "ellipsis"
        else:
            raise IndexKeyError(f"malformed index item {item!r}")
        items.append(item)
    if ellipses > 1:
        raise IndexKeyError("an index can only have a single ellipsis")
    return items


def broadcast_shapes(shapes: Sequence[Shape]) -> Shape | None:
    """NumPy's broadcast of ``shapes``, or None if they do not broadcast together."""
    ndim = max((len(shape) for shape in shapes), default=0)
    result = [1] * ndim
    for shape in shapes:
        for position, extent in enumerate(shape, start=ndim - len(shape)):
            if extent != 1:
                if result[position] not in (1, extent):
                    return None
                result[position] = extent
    return tuple(result)


def _broadcast(shapes: Sequence[Shape]) -> Shape:
    result = broadcast_shapes(shapes)
    if result is None:
        listed = " ".join(str(s) for s in shapes)
        raise IndexKeyError(f"shape mismatch: indexing arrays could not be broadcast together with shapes {listed}")
    return result


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
