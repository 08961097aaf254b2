"""Indexing: basic indexing makes views; advanced indexing (integer or boolean arrays) copies."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from shoal import fp_warnings
from shoal.array_sizes import below
from shoal.bytecode import View
from shoal.bytecode.dtypes import is_supported
from shoal.numpy._dispatch import discards_imaginary
from shoal.numpy._fperr import cast_now
from shoal.numpy._indexed import indexed_get, indexed_set
from shoal.numpy._lazy import is_lazy, make_view, ndarray
from shoal.numpy._numpy_data import PYTHON_NUMBERS, new_array, operand, wrap_numpy
from shoal.numpy._probe import data_address, format_shape, geometry_probe
from shoal.numpy._settled import NOT_SETTLED, readable, writable
from shoal.numpy._settled_compiled import SETTLED_CALLS


def _normalize(key: Any) -> tuple[Any, ...]:
    items = key if isinstance(key, tuple) else (key,)
    normalized = []
    for item in items:
        if is_lazy(item):
            if item.dtype.kind not in "iub":
                raise IndexError(
                    "arrays used as indices must be of integer (or boolean) type"
                )
            item = item._value()[()] if item._scalar else item._value()  # a NumPy scalar indexes like an int
        normalized.append(item)
    return tuple(normalized)


def _is_advanced(item: Any) -> bool:
    if isinstance(item, (list, np.ndarray)):
        return True
    return isinstance(item, (bool, np.bool_))


def basic_view(array: ndarray, key: tuple[Any, ...]) -> tuple[View, bool]:
    """The view ``array[key]`` selects (as a view, also for all-integer keys) and its writability."""
    view = array._view
    probe = geometry_probe(view.dtype, view.shape, view.strides)
    full_key = key if any(item is Ellipsis for item in key) else (*key, Ellipsis)
    result = probe[full_key]
    offset = view.offset + data_address(result) - data_address(probe)
    return make_view(view.base, view.dtype, offset, result.shape, result.strides), result.flags.writeable


def _is_element(array: ndarray, key: tuple[Any, ...]) -> bool:
    integers = 0
    for item in key:
        if isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_)):
            integers += 1
        else:
            return False
    return integers == array.ndim


def simple_view(view: View, key: Any) -> tuple[View, bool] | None:
    """The view that ``key`` selects from ``view`` and whether it is one element, for the
    common keys (integers inside the bounds and slices of plain integers, at most one item per
    axis), computed here; None for any other key (the probe in :func:`basic_view` then gives
    NumPy's view or its error)."""
    items = key if type(key) is tuple else (key,)
    shape = view.shape
    if len(items) > len(shape):
        return None
    strides = view.strides
    offset = view.offset
    new_shape: list[int] = []
    new_strides: list[int] = []
    axis = 0
    for item in items:
        kind = type(item)
        if kind is int or (kind is not bool and kind is not slice and isinstance(item, np.integer)):
            index = int(item)
            extent = shape[axis]
            if index < 0:
                index += extent
            if index < 0 or index >= extent:
                return None
            offset += index * strides[axis]
        elif kind is slice:
            step = item.step
            if (
                (step is not None and (type(step) is not int or step == 0))
                or (item.start is not None and type(item.start) is not int)
                or (item.stop is not None and type(item.stop) is not int)
            ):
                return None
            first, stop, step = item.indices(shape[axis])
            length = (stop - first + step - 1) // step if step > 0 else (first - stop - step - 1) // -step
            stride = strides[axis]
            if length > 0:
                offset += first * stride
                new_shape.append(length)
                new_strides.append(stride * step)
            else:
                new_shape.append(0)
                new_strides.append(stride)  # NumPy keeps the stride of an empty slice
        else:
            return None
        axis += 1
    if axis < len(shape):
        new_shape.extend(shape[axis:])
        new_strides.extend(strides[axis:])
    elif not new_shape:
        return View(view.base, view.dtype, offset, (), ()), True
    return make_view(view.base, view.dtype, offset, tuple(new_shape), tuple(new_strides)), False


def getitem(array: ndarray, key: Any) -> Any:
    """``array[key]`` with NumPy's semantics."""
    simple = simple_view(array._view, key)
    if simple is not None:
        view, element = simple
        if not element:
            runtime = array._base.runtime
            if math.prod(view.shape) < runtime.settled_threshold:
                memory = runtime.held_view(view)  # a loop indexing rows holds the base, as one computing on them does
                if memory is not None:
                    if array._readonly:
                        memory.flags.writeable = False
                    return memory
            return array._derive(view)
        memory = array._base.runtime.settle(view, element=True)
        if memory is not None:  # a settled base: NumPy's own scalar, read in place
            return memory[()]
        return _element(array, view)
    direct = indexed_get(array, key)
    if direct is not NOT_SETTLED:
        return direct
    key = _normalize(key)
    if any(_is_advanced(item) for item in key):
        return _advanced_get(array, key)
    view, _ = basic_view(array, key)
    if _is_element(array, key):
        return _element(array, view)
    return array._derive(view)


def _element(array: ndarray, view: View) -> ndarray:
    element = new_array(view.dtype, ())
    array._base.runtime.record("copy", (element._view,), (view,))
    element._scalar = True
    return element


def _encode(key: tuple[Any, ...]) -> tuple[tuple[tuple[Any, ...], ...], list[np.ndarray]]:
    """The key as bytecode attributes, with boolean arrays turned into integer index arrays."""
    encoded: list[tuple[Any, ...]] = []
    arrays: list[np.ndarray] = []
    for item in key:
        if item is None:
            encoded.append(("newaxis",))
        elif item is Ellipsis:
            encoded.append(("ellipsis",))
        elif isinstance(item, slice):
            encoded.append(("slice", _plain(item.start), _plain(item.stop), _plain(item.step)))
        elif isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_)):
            encoded.append(("int", int(item)))
        else:
            index = np.asarray(item)
            if index.dtype == np.bool_:
                for axis_indices in np.nonzero(index):
                    encoded.append(("array", len(arrays)))
                    arrays.append(axis_indices)
            else:
                encoded.append(("array", len(arrays)))
                arrays.append(index.astype(np.intp, copy=False))
    return tuple(encoded), arrays


def _plain(value: Any) -> int | None:
    return None if value is None else int(value)


def _has_scalar_bool(key: tuple[Any, ...]) -> bool:
    return any(isinstance(item, (bool, np.bool_)) or (isinstance(item, np.ndarray) and item.ndim == 0 and item.dtype == np.bool_) for item in key)


_NO_BYTES = np.dtype([])  # zero-sized elements: indexing a probe of them allocates nothing


def _list_index(item: list[Any]) -> np.ndarray:
    """A list in an index as NumPy reads it: an empty one (``x[[]]``) indexes as ``intp``."""
    index = np.asarray(item)
    return index.astype(np.intp) if index.size == 0 and index.dtype == np.float64 else index


def _advanced_shape(array: ndarray, key: tuple[Any, ...]) -> tuple[int, ...]:
    """NumPy's result shape (and errors) for ``array[key]``, without materialising a result:
    a probe of the array's dtype made a (9, 512, 1024) gather cost 17 ms, one of empty
    elements 0.06 ms."""
    dtype = array.dtype if any(isinstance(item, str) for item in key) else _NO_BYTES
    probe = np.broadcast_to(np.empty((), dtype), array.shape)
    return probe[key].shape


def _advanced_get(array: ndarray, key: tuple[Any, ...]) -> Any:
    key = tuple(_list_index(item) if isinstance(item, list) else item for item in key)
    shape = _advanced_shape(array, key)
    if _has_scalar_bool(key):
        return wrap_numpy(array._value()[key])
    runtime = array._base.runtime
    if below(math.prod(shape), array._view.dtype.itemsize, runtime.settled_threshold):
        memory = runtime.memory(array._view)
        if memory is not None:  # a small gather from a settled base: NumPy's copy, at once
            return memory[key]
    encoded, index_arrays = _encode(key)
    result = new_array(array.dtype, shape)
    inputs = (array._view, *(operand(index) for index in index_arrays))
    array._base.runtime.record("gather", (result._view,), inputs, key=encoded)
    result._scalar = not shape
    return result


def _value_shape(value: Any, dtype: np.dtype) -> tuple[tuple[int, ...], Any]:
    """The shape of ``value`` stored into an array of ``dtype``, and ``value`` as an operand
    bytecode carries: NumPy data of a dtype it cannot carry (``None``, a ``Decimal``, strings,
    ``longdouble``) converted to ``dtype`` as NumPy's assignment converts it, with its errors."""
    if is_lazy(value):
        return value.shape, value
    if isinstance(value, PYTHON_NUMBERS):
        return (), value
    if isinstance(value, np.generic):
        return (), value if is_supported(value.dtype) else _converted((), dtype, value)[()]
    array = np.asarray(value)
    if not is_supported(array.dtype):
        array = _converted(array.shape, dtype, value)
    return array.shape, array


def _converted(shape: tuple[int, ...], dtype: np.dtype, value: Any) -> np.ndarray:
    """``value`` stored by NumPy into a new array of ``shape`` and ``dtype`` (a cast's warning
    at the caller's line)."""
    converted = np.empty(shape, dtype)
    fp_warnings.at_user_line(converted.__setitem__, ..., value)
    return converted


def _check_assignable(dtype: np.dtype, value: Any) -> None:
    """Raise NumPy's error for storing ``value`` into an array of ``dtype`` (a floating-point
    category set to ``"warn"`` is quiet here: the recorded cast warns for itself)."""
    with np.errstate(**fp_warnings.quieted()):
        _assign_probe(dtype, value)


def _assign_probe(dtype: np.dtype, value: Any) -> None:
    if isinstance(value, np.ndarray) or is_lazy(value):
        source = discards_imaginary(value.dtype, dtype)
        target = np.zeros(min(value.size, 1), dtype)
        if is_lazy(value):
            target[...] = np.zeros(min(value.size, 1), source)
        else:
            target[...] = value.reshape(-1)[:1].real if source != value.dtype else value.reshape(-1)[:1]
    else:
        np.zeros((), dtype)[()] = value


def _strip_leading_ones(shape: tuple[int, ...], ndim: int) -> tuple[int, ...]:
    while len(shape) > ndim and shape[0] == 1:
        shape = shape[1:]
    return shape


def setitem(array: ndarray, key: Any, value: Any) -> None:
    """``array[key] = value`` with NumPy's broadcasting, casting and errors."""
    if SETTLED_CALLS is not None and SETTLED_CALLS.store(array, key, value) is not None:  # _set_in_place's common case
        return
    if array._scalar:
        raise TypeError(f"'numpy.{array.dtype.type.__name__}' object does not support item assignment")
    if array._readonly:
        raise ValueError("assignment destination is read-only")
    if type(value) is str and array.dtype.kind in "biufc":  # NumPy parses the string (or names it)
        value = array.dtype.type(value)
    if type(value) is ndarray and value._base is array._base:
        simple = simple_view(array._view, key)
        if simple is not None and simple[0] == value._view:
            return  # ``a[k:, k:] -= x`` stores the view onto itself: nothing to do, as in NumPy
    if indexed_set(array, key, value) is not NOT_SETTLED:
        return
    key = _normalize(key)
    if _set_in_place(array, key, value):
        return
    vshape, value = _value_shape(cast_now(value, array.dtype), array.dtype)
    if any(_is_advanced(item) for item in key):
        _advanced_set(array, key, vshape, value)
        return
    target, _ = basic_view(array, key)
    if vshape and _is_element(array, key):
        value_dtype = value.dtype if is_lazy(value) else np.asarray(value).dtype
        np.zeros(1, array.dtype)[0] = np.broadcast_to(np.zeros((), value_dtype), vshape)
    stripped = _strip_leading_ones(vshape, len(target.shape))
    try:
        fits = np.broadcast_shapes(stripped, target.shape) == target.shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"could not broadcast input array from shape {format_shape(vshape)} into shape {format_shape(target.shape)}")
    _check_assignable(array.dtype, value)
    source = operand(value)
    if isinstance(source, View) and source.shape != stripped:
        drop = len(source.shape) - len(stripped)
        source = View(source.base, source.dtype, source.offset, source.shape[drop:], source.strides[drop:])
    if source == target:  # ``a[k:, k:] -= x`` stores the view onto itself: nothing to do, as in NumPy
        return
    array._base.runtime.record("copy", (target,), (source,))


def _set_in_place(array: ndarray, key: tuple[Any, ...], value: Any) -> bool:
    """``array[key] = value`` written by NumPy straight into the component's memory, if no
    recorded work touches ``array``'s base, the key is basic, the target small and ``value`` is
    not a lazy array other than a small view of a settled base. False if not done."""
    simple = simple_view(array._view, key)
    if simple is not None:
        target = simple[0]
    else:
        for item in key:
            if _is_advanced(item):
                return False
        try:
            target, _ = basic_view(array, key)
        except IndexError:
            return False  # raised again, in NumPy's order, where the assignment is recorded
    touched = math.prod(target.shape)
    if touched >= array._base.runtime.settled_threshold:
        return False
    memory = writable(array, touched)
    if memory is None:
        return False
    if is_lazy(value):
        source = readable(value)
        if source is None:
            return False
        value = source[()] if value._scalar else source
    if getattr(value, "dtype", None) is memory.dtype or (memory.dtype.char == "d" and type(value) is float):
        memory[key] = value  # no cast that could warn
    else:
        fp_warnings.at_user_line(memory.__setitem__, key, value)  # a cast's warning names the user's line
    return True


def _advanced_set(array: ndarray, key: tuple[Any, ...], vshape: tuple[int, ...], value: Any) -> None:
    key = tuple(_list_index(item) if isinstance(item, list) else item for item in key)
    shape = _advanced_shape(array, key)
    try:
        fits = np.broadcast_shapes(_strip_leading_ones(vshape, len(shape)), shape) == shape
    except ValueError:
        fits = False
    masks = [item for item in key if isinstance(item, np.ndarray) and item.dtype == np.bool_]
    if not fits and len(key) == 1 and masks and len(vshape) == 1:
        raise ValueError(
            f"NumPy boolean array indexing assignment cannot assign {vshape[0]} input values to "
            f"the {shape[0]} output values where the mask is true"
        )
    if not fits:
        raise ValueError(
            f"shape mismatch: value array of shape {format_shape(vshape)} could not be broadcast "
            f"to indexing result of shape {format_shape(shape)}"
        )
    _check_assignable(array.dtype, value)
    if _has_scalar_bool(key):
        current = array._value()
        current[key] = value if not is_lazy(value) else value._value()
        array[...] = current
        return
    encoded, index_arrays = _encode(key)
    source = operand(value)
    if isinstance(source, View):
        stripped = _strip_leading_ones(source.shape, len(shape))
        drop = len(source.shape) - len(stripped)
        source = View(source.base, source.dtype, source.offset, stripped, source.strides[drop:])
    inputs = (source, *(operand(index) for index in index_arrays))
    array._base.runtime.record("scatter", (array._view,), inputs, key=encoded)
