"""Element-wise operations: NumPy ufuncs applied to lazy arrays are recorded as instructions."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from shoal.bytecode import ufunc_opcode
from shoal.bytecode.dtypes import is_supported
from shoal.numpy import _fast_ufunc
from shoal.numpy._fast_ufunc import NOT_FAST
from shoal.numpy._fperr import eager_ufunc, strict
from shoal.numpy._held_views import on_held_bases
from shoal.numpy._layout import axis_order, ordered_array
from shoal.numpy._lazy import is_lazy, ndarray
from shoal.numpy._numpy_data import UnsupportedDtype, is_small, new_array, operand
from shoal.numpy._probe import broadcast_error, format_shape, quietly, value_probe
from shoal.numpy._settled import NOT_SETTLED, settled_ufunc

_PY_SCALARS = (bool, int, float, complex)


def _shape_and_probe(value: Any) -> tuple[tuple[int, ...] | None, Any]:
    """(shape or None for scalars, probe) for one ufunc input."""
    if is_lazy(value):
        return value.shape, value_probe(value.dtype, value.shape)
    if isinstance(value, _PY_SCALARS) or isinstance(value, np.generic):
        return None, value
    array = np.asarray(value)
    if array.ndim == 0:
        return None, array[()]
    return array.shape, value_probe(array.dtype, array.shape)


def apply_ufunc(
    ufunc: np.ufunc,
    inputs: tuple[Any, ...],
    out: Any = None,
    where: Any = True,
    dtype: Any = None,
    casting: str = "same_kind",
    **ignored: Any,
) -> Any:
    """Record ``ufunc(*inputs)``; errors, dtypes and shapes are NumPy's, found at the call."""
    if where is np._NoValue and out is not None:  # NumPy's own functions pass it on: every element (with no ``out``, NumPy warns)
        where = True
    plain = where is True and dtype is None and casting == "same_kind" and not ignored and len(inputs) == ufunc.nin and ufunc.nout == 1
    if plain:
        single = out[0] if type(out) is tuple and len(out) == 1 else out
        fast = _fast_ufunc.record(ufunc, inputs, single)
        if fast is not NOT_FAST:
            return fast
    if len(inputs) != ufunc.nin:
        # Let NumPy produce its own argument-count error.
        quietly(ufunc, *[0] * len(inputs))
    eager = settled_ufunc(ufunc, inputs, out, where, dtype, casting)
    if eager is not NOT_SETTLED:
        return eager
    outs = _normalize_out(ufunc, out)
    shapes, probes, listed = [], [], []  # listed: every operand's shape, as NumPy's errors print them
    for value in inputs:
        shape, probe = _shape_and_probe(value)
        probes.append(probe)
        listed.append(() if shape is None else shape)
        if shape is not None:
            shapes.append(shape)
    options: dict[str, Any] = {"casting": casting}
    if dtype is not None:
        options["dtype"] = dtype
    probe_result = quietly(ufunc, *probes, **options)
    if any(o is not None for o in outs):  # NumPy checks output casting before shapes
        scalar_probes = [np.zeros((), p.dtype) if isinstance(p, np.ndarray) else p for p in probes]
        out_probes = tuple(None if o is None else np.zeros((), o.dtype) for o in outs)
        quietly(ufunc, *scalar_probes, out=out_probes, **options)
    if ufunc is np.power:
        _check_integer_powers(inputs, probe_result)
    out_shapes = [o.shape for o in outs if o is not None]
    try:
        shape = np.broadcast_shapes(*shapes) if shapes else ()
    except ValueError:
        shape = None
    if shape is None:  # raised outside the handler: an exception the program is handling stays its context
        raise broadcast_error([*listed, *out_shapes])
    for o in outs:
        if o is None:
            continue
        if (is_lazy(o) and o._readonly) or (isinstance(o, np.ndarray) and not o.flags.writeable):
            raise ValueError("output array is read-only")
        full = _broadcast_or_none(shape, o.shape)
        if full is None:
            raise broadcast_error([*listed, o.shape])
        if full != o.shape:
            raise ValueError(
                f"non-broadcastable output operand with shape {format_shape(o.shape)} doesn't "
                f"match the broadcast shape {format_shape(full if full is not None else shape)}"
            )
        shape = o.shape
    results = probe_result if ufunc.nout > 1 else (probe_result,)
    result_dtypes = [np.asarray(r).dtype for r in results]
    if any(o is not None for o in outs):
        result_dtypes = [rd if o is None else o.dtype for rd, o in zip(result_dtypes, outs)]
    if (
        not any(is_lazy(v) for v in inputs)
        and not any(is_lazy(o) for o in outs)
        and is_small(math.prod(shape))
    ):
        return ufunc(*inputs, out=out, where=where, **options)
    if strict() or where is not True or _numpy_only(inputs, result_dtypes):
        # ``where=``: NumPy computes only the selected elements, so the others warn nothing
        return eager_ufunc(ufunc, inputs, outs, where, options)
    if plain:
        _fast_ufunc.learn(_fast_ufunc.key(ufunc, inputs, outs[0]), ufunc_opcode(ufunc), ufunc, inputs, result_dtypes[0], shape)
    return _record(ufunc, inputs, outs, shape, result_dtypes, where, dtype)


def _numpy_only(inputs: tuple[Any, ...], dtypes: list[np.dtype]) -> bool:
    """True if an operand or a result is of a kind bytecode cannot carry (a string, ``None``, an
    object such as a ``Decimal``, a date): NumPy computes such an operation at once."""
    if not all(is_supported(dtype) for dtype in dtypes):
        return True
    for value in inputs:
        if type(value) in _NUMBERS or is_lazy(value):
            continue
        if isinstance(value, np.ndarray | np.generic):
            if not is_supported(value.dtype):
                return True
        elif value is None or isinstance(value, str | bytes) or not is_supported(np.asarray(value).dtype):
            return True  # ``None``, a ``Fraction``, a list of them: objects NumPy compares or computes
    return False


_NUMBERS = frozenset((bool, int, float, complex))


def _check_integer_powers(inputs: tuple[Any, ...], probe_result: Any) -> None:
    """NumPy refuses negative integer exponents for integer results; that needs the values."""
    exponent = inputs[1]
    if len(inputs) == 2 and is_lazy(exponent) and np.asarray(probe_result).dtype.kind in "iu":
        if exponent.dtype.kind == "i" and bool((exponent._value() < 0).any()):
            raise ValueError("Integers to negative integer powers are not allowed.")


def _broadcast_or_none(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    try:
        return np.broadcast_shapes(a, b)
    except ValueError:
        return None


def _normalize_out(ufunc: np.ufunc, out: Any) -> tuple[Any, ...]:
    if out is None:
        return (None,) * ufunc.nout
    if not isinstance(out, tuple):
        out = (out,)
    if len(out) != ufunc.nout:
        raise ValueError(f"The 'out' tuple must have exactly {ufunc.nout} entries: one per ufunc output")
    for o in out:
        if o is not None and not isinstance(o, ndarray):
            raise TypeError("return arrays must be of ArrayType")
    return out


def _record(
    ufunc: np.ufunc,
    inputs: tuple[Any, ...],
    outs: tuple[Any, ...],
    shape: tuple[int, ...],
    dtypes: list[np.dtype],
    where: Any,
    dtype: Any,
) -> Any:
    opcode = ufunc_opcode(ufunc)
    order = axis_order(inputs, shape)
    runtime_arrays = [ordered_array(d, shape, order) for d in dtypes]
    direct = where is True
    given_outs = outs
    if direct:
        outs, inputs = on_held_bases(outs, inputs)
    ops = tuple(operand(v) for v in inputs)
    attrs = {} if dtype is None else {"dtype": np.dtype(dtype)}
    targets = []
    for temp, user_out in zip(runtime_arrays, outs):
        targets.append(user_out if (direct and is_lazy(user_out)) else temp)
    runtime = targets[0]._base.runtime
    runtime.record(opcode, tuple(t._view for t in targets), ops, **attrs)
    results = []
    for target, temp, user_out, given in zip(targets, runtime_arrays, outs, given_outs):
        if direct:
            if given is not user_out:  # a NumPy view of a held base, written where it lies
                results.append(given)
            elif user_out is None:
                results.append(target)
            elif is_lazy(user_out):
                results.append(user_out)
            else:
                np.copyto(user_out, temp._value(), casting="unsafe")
                results.append(user_out)
            continue
        destination = user_out if user_out is not None else new_array(temp.dtype, shape)
        lazy_destination = destination if is_lazy(destination) else new_array(destination.dtype, shape)
        if not is_lazy(destination):
            lazy_destination[...] = destination
        runtime.record("where", (lazy_destination._view,), (operand(where), temp._view, lazy_destination._view))
        if not is_lazy(destination):
            np.copyto(destination, lazy_destination._value())
        results.append(destination)
    if all(o is None for o in outs) and not shape:
        for r in results:
            r._scalar = True
    return tuple(results) if ufunc.nout > 1 else results[0]


def array_ufunc(ufunc: np.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``__array_ufunc__`` for lazy arrays (NumPy's call where an operand or result has a dtype
    bytecode cannot carry, such as ``object``)."""
    from shoal.numpy import _dispatch

    try:
        return _lazy_ufunc(ufunc, method, inputs, dict(kwargs))
    except UnsupportedDtype:
        function = getattr(ufunc, method) if method != "__call__" else ufunc
        result = _dispatch.fallback_call(ufunc.__name__, function, inputs, kwargs, warn=False)
        return result[0] if method != "__call__" and isinstance(result, tuple) and len(result) == 1 else result


def _lazy_ufunc(ufunc: np.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """:func:`array_ufunc` where every dtype involved is one bytecode carries."""
    from shoal.numpy import _dispatch, _linalg, _reduce

    if method != "__call__":
        from shoal.numpy._settled_functions import settled_method

        eager = settled_method(ufunc, method, inputs, kwargs)
        if eager is not NOT_SETTLED:
            return eager
    if method == "__call__":
        if ufunc is np.matmul and not (set(kwargs) - {"out"}):
            return _linalg.matmul(*inputs, **kwargs)
        if ufunc is np.vecdot and len(inputs) == 2 and not (set(kwargs) - {"axis"}):
            from shoal.numpy._composed import vecdot

            return vecdot(*inputs, **kwargs)
        if ufunc_opcode(ufunc) is not None and not (set(kwargs) - {"out", "where", "dtype", "casting", "order", "subok"}):
            kwargs.pop("order", None)
            kwargs.pop("subok", None)
            return apply_ufunc(ufunc, inputs, **kwargs)
    elif method == "reduce" and ufunc_opcode(ufunc) is not None and ufunc.nin == 2 and len(inputs) == 1:
        if not _engine_dtype(kwargs.get("dtype")):
            from shoal.numpy._ufunc_methods import in_numpy

            return in_numpy(f"{ufunc.__name__}.reduce", ufunc.reduce, inputs, kwargs)
        if kwargs.keys() <= (_REDUCE_KEYWORDS_FROM if ufunc.__name__ in _reduce.SELECTING else _REDUCE_KEYWORDS):
            return _reduce.ufunc_reduce(ufunc, inputs[0], **kwargs)
    elif method in ("accumulate", "reduceat") and ufunc_opcode(ufunc) is not None and ufunc.nin == 2 and ufunc.nout == 1:
        from shoal.numpy import _ufunc_methods

        return getattr(_ufunc_methods, method)(ufunc, *inputs, **kwargs)
    elif method == "outer" and ufunc_opcode(ufunc) is not None and ufunc.nin == 2 and len(inputs) == 2:
        from shoal.numpy import _ufunc_methods

        return _ufunc_methods.outer(ufunc, *inputs, **kwargs)
    elif method == "at":
        from shoal.numpy import _ufunc_methods

        return _ufunc_methods.at(ufunc, *inputs, **kwargs)
    function = getattr(ufunc, method) if method != "__call__" else ufunc
    result = _dispatch.fallback_call(f"{ufunc.__name__}.{method}" if method != "__call__" else ufunc.__name__, function, inputs, kwargs)
    if method != "__call__" and isinstance(result, tuple) and len(result) == 1:
        return result[0]  # ``out`` came as a tuple of one (as NumPy passes it here); NumPy returns the array
    return result


_REDUCE_KEYWORDS = frozenset({"axis", "dtype", "out", "keepdims"})
_REDUCE_KEYWORDS_FROM = _REDUCE_KEYWORDS | {"initial"}  # a selecting ufunc's reduce also starts from ``initial``


def _engine_dtype(dtype: Any) -> bool:
    """True unless ``dtype`` names a dtype the engine cannot hold (``object``, strings: NumPy
    then computes); an invalid one is left to NumPy's error further on."""
    if dtype is None:
        return True
    try:
        return is_supported(np.dtype(dtype))
    except TypeError:
        return True


def for_numpy_subclass(ufunc: np.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A ufunc call with a NumPy subclass among its inputs (a masked array, a matrix): NumPy's
    own call on the lazy inputs' values, so that the subclass makes its result (a mask kept)."""
    values = tuple(np.asarray(value) if is_lazy(value) else value for value in inputs)
    return getattr(ufunc, method)(*values, **kwargs)
