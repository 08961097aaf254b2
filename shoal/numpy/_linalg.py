"""Matrix products: ``dot``, ``matmul`` and ``@``."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from shoal import held
from shoal.fp_warnings import at_user_line
from shoal.numpy._fperr import deliver_now, plain, strict
from shoal.numpy._held_indexing import held_memory
from shoal.numpy._lazy import deliver, is_lazy, ndarray
from shoal.numpy._numpy_data import is_small, new_array, operand, wrap_numpy
from shoal.numpy._probe import broadcast_shape, format_shape, quietly, value_probe
from shoal.numpy._settled import NOT_SETTLED, settled_product

_SIGNATURE = "(n?,k),(k,m?)->(n?,m?)"


def _info(value: Any) -> tuple[tuple[int, ...], np.dtype]:
    if is_lazy(value):
        return value.shape, value.dtype
    array = np.asarray(value)
    return array.shape, array.dtype


@functools.lru_cache(maxsize=256)
def _result_dtype(function: Any, da: np.dtype, db: np.dtype, ndim_a: int, ndim_b: int) -> np.dtype:
    """The dtype ``function`` (``np.matmul`` or ``np.dot``) gives operands of these dtypes and
    dimensions, from NumPy itself on probes (its error, if it refuses them, is not kept)."""
    return np.asarray(quietly(function, value_probe(da, (1,) * ndim_a), value_probe(db, (1,) * ndim_b))).dtype


def held_product(function: Any, a: Any, b: Any) -> Any:
    """``function(a, b)`` (``np.matmul`` or ``np.dot``) computed by NumPy at once, with NumPy's
    checks and errors, if a lazy operand is a view of a held base and every other one is too
    (:mod:`shoal.held`); else :data:`NOT_SETTLED`."""
    memory_a = _read_in_place(a)
    memory_b = _read_in_place(b) if memory_a is not None else None
    if memory_b is None or (memory_a is a and memory_b is b):
        return NOT_SETTLED
    return wrap_numpy(at_user_line(function, memory_a, memory_b))


def _read_in_place(value: Any) -> Any:
    """:func:`held_memory` of ``value`` for one read by NumPy: a lazy array that keeps no view of
    its held base gets one for this call only (a row loop's ``a[: i + 1] @ a[i]`` makes a new
    lazy view each row, and keeping each view's NumPy view cost more than the product's other
    work together)."""
    if type(value) is not ndarray or value._held is not None:
        return held_memory(value)
    kept = value._base.held
    if kept is None or value._scalar:
        return None
    return held.view_of(kept, value._view)


def matmul(a: Any, b: Any, out: Any = None, **kwargs: Any) -> Any:
    """``np.matmul``: shapes and errors as NumPy's, checked at the call."""
    if out is None and not kwargs:
        eager = held_product(np.matmul, a, b)
        if eager is not NOT_SETTLED:
            return eager
    if isinstance(out, tuple):
        out = out[0]
    (sa, da), (sb, db) = _info(a), _info(b)
    for index, shape in enumerate((sa, sb)):
        if not shape:
            raise ValueError(
                f"matmul: Input operand {index} does not have enough dimensions (has 0, gufunc core "
                f"with signature {_SIGNATURE} requires 1)"
            )
    a2 = sa if len(sa) >= 2 else (1, *sa)
    b2 = sb if len(sb) >= 2 else (*sb, 1)
    if a2[-1] != b2[-2]:
        raise ValueError(
            f"matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
            f"{_SIGNATURE} (size {b2[-2]} is different from {a2[-1]})"
        )
    batch = broadcast_shape([a2[:-2], b2[:-2]])
    shape = batch + ((a2[-2],) if len(sa) >= 2 else ()) + ((b2[-1],) if len(sb) >= 2 else ())
    dtype = _result_dtype(np.matmul, da, db, len(sa), len(sb))
    return _product("matmul", a, b, out, shape, dtype, np.matmul)


def dot(a: Any, b: Any, out: Any = None) -> Any:
    """``np.dot``."""
    if out is None:
        eager = held_product(np.dot, a, b)
        if eager is not NOT_SETTLED:
            return eager
    (sa, da), (sb, db) = _info(a), _info(b)
    if not sa or not sb:
        from shoal.numpy._ufunc import apply_ufunc

        return apply_ufunc(np.multiply, (a, b), out=out)
    contract_b = 0 if len(sb) == 1 else len(sb) - 2
    if sa[-1] != sb[contract_b]:
        raise ValueError(
            f"shapes {format_shape(sa)} and {format_shape(sb)} not aligned: {sa[-1]} (dim {len(sa) - 1}) != {sb[contract_b]} (dim {contract_b})"
        )
    shape = sa[:-1] + sb[:contract_b] + sb[contract_b + 1 :]
    dtype = _result_dtype(np.dot, da, db, len(sa), len(sb))
    return _product("dot", a, b, out, shape, dtype, np.dot)


def _product(op: str, a: Any, b: Any, out: Any, shape: tuple[int, ...], dtype: np.dtype, function: Any) -> Any:
    if out is not None:
        if out.shape != shape:
            raise ValueError(f"output array has wrong shape: expected {shape}, got {out.shape}")
        if op == "dot" and out.dtype != dtype:
            raise ValueError(
                "output array is not acceptable (must have the right datatype, number of dimensions, "
                "and be a C-Array)"
            )
    if not is_lazy(a) and not is_lazy(b) and not is_lazy(out) and is_small(math.prod(shape)):
        return function(a, b) if out is None else function(a, b, out=out)
    if strict():
        return deliver_now(function(plain(a), plain(b)), out)
    if out is None:
        eager = settled_product(function, a, b, shape)
        if eager is not NOT_SETTLED:
            return eager
    result = out if is_lazy(out) else new_array(dtype, shape)
    result._base.runtime.record(op, (result._view,), (operand(a), operand(b)))
    return deliver(result, out)
