"""Operators and methods of the lazy ndarray, attached to the class in one place."""

from __future__ import annotations

import functools
import inspect
import operator
from typing import Any

import numpy as np

from shoal.bytecode.dtypes import is_supported
from shoal.fp_warnings import at_user_line
from shoal.numpy import _create, _linalg, _reduce, _scalar_overflow, _shape, _sorting
from shoal.numpy._fast_ufunc import NOT_FAST
from shoal.numpy._fast_ufunc import record as record_seen
from shoal.numpy._flat import set_writeable
from shoal.numpy._held_indexing import held_memory
from shoal.numpy._lazy import fortran_only, ndarray, scalar_result
from shoal.numpy._numpy_data import PYTHON_NUMBERS
from shoal.numpy._resize import resize_in_place
from shoal.numpy._settled import NOT_SETTLED, settled_call
from shoal.numpy._settled_compiled import PRODUCT, SETTLED_CALLS
from shoal.numpy._temporaries import adopted
from shoal.numpy._ufunc import apply_ufunc


def _binary(ufunc: np.ufunc, reflected_name: str, repeats: bool = False, unmatched: bool | None = None) -> tuple[Any, Any, Any]:
    """The operator methods of ``ufunc``. ``repeats`` (``*``): a result that stands for a NumPy
    integer scalar repeats a Python sequence, as NumPy's scalars do (``[0] * n``), instead of
    multiplying its elements. ``unmatched`` (``==``, ``!=``): NumPy's answer for every element
    where no loop takes the operands (a number array and a string), not the ufunc's TypeError."""

    forward_name = "__" + reflected_name[3:]
    checked = _scalar_overflow.CHECKED.get(ufunc)  # integer scalars: NumPy's scalar loops (overflow)

    # Each tries the recording of a call seen before (``_fast_ufunc``) before the general path.
    def forward(self: ndarray, other: Any) -> Any:
        if repeats and self._scalar and type(other) in _SEQUENCES:
            return _sequence_repeat(self)
        if checked is not None and self._scalar and (scalar := _scalar_overflow.computed(checked, (self, other))) is not None:
            return scalar
        if type(other) not in _NEVER_DEFERRED and _defers_to(other, reflected_name):  # a NumPy subclass gets NumPy's array
            return getattr(other, reflected_name)(self.__array__()) if isinstance(other, np.ndarray) else NotImplemented
        if type(other) is np.ndarray and (taken := adopted(other)) is not other:
            return _then_run_carried(self, forward(self, taken))
        try:
            fast = record_seen(ufunc, (self, other), None)
            return apply_ufunc(ufunc, (self, other)) if fast is NOT_FAST else fast
        except _NO_LOOP:
            if unmatched is None:
                raise
            return _create.full(np.broadcast_shapes(self.shape, np.shape(other)), unmatched)

    def reflected(self: ndarray, other: Any) -> Any:
        if repeats and self._scalar and type(other) in _SEQUENCES:
            return _sequence_repeat(self)
        if checked is not None and self._scalar and (scalar := _scalar_overflow.computed(checked, (other, self))) is not None:
            return scalar
        if type(other) not in _NEVER_DEFERRED and isinstance(other, np.ndarray) and _defers_to(other, forward_name):  # np.matrix declined a lazy operand
            return getattr(other, forward_name)(self.__array__())
        if type(other) is np.ndarray and (taken := adopted(other)) is not other:
            return _then_run_carried(self, reflected(self, taken))
        fast = record_seen(ufunc, (other, self), None)
        return apply_ufunc(ufunc, (other, self)) if fast is NOT_FAST else fast

    def inplace(self: ndarray, other: Any) -> ndarray:
        if self._scalar:  # NumPy scalars are immutable: ``x += y`` rebinds x
            if checked is not None and (scalar := _scalar_overflow.computed(checked, (self, other))) is not None:
                return scalar
            return apply_ufunc(ufunc, (self, other))
        if type(other) is np.ndarray and (taken := adopted(other)) is not other:
            return _then_run_carried(self, inplace(self, taken))
        if record_seen(ufunc, (self, other), self) is NOT_FAST:
            apply_ufunc(ufunc, (self, other), out=(self,))
        return self

    return forward, reflected, inplace


_SEQUENCES = frozenset((list, tuple, str, bytes, bytearray))
_NEVER_DEFERRED = frozenset((int, float, complex, bool, list, tuple, np.ndarray, ndarray))
_ABSENT = object()


def _defers_to(other: Any, reflected: str) -> bool:
    """True if NumPy's operator would leave the operation to ``other``'s ``reflected`` method:
    ``other`` sets ``__array_ufunc__ = None``, or has no ``__array_ufunc__`` and a higher
    ``__array_priority__`` (scipy's sparse matrices), or is a NumPy subclass that overrides the
    method (``np.matrix``, masked arrays), which Python lets go first under NumPy."""
    kind = type(other)
    if kind in _NEVER_DEFERRED or isinstance(other, np.generic):
        return False
    if isinstance(other, np.ndarray):
        return getattr(kind, reflected, None) is not getattr(np.ndarray, reflected, None)
    protocol = getattr(kind, "__array_ufunc__", _ABSENT)
    if protocol is not _ABSENT:
        return protocol is None
    return hasattr(kind, reflected) and getattr(other, "__array_priority__", 0.0) > 0.0
_NO_LOOP = np._core._exceptions._UFuncNoLoopError  # NumPy's error for operand types no loop takes


def _sequence_repeat(scalar: ndarray) -> Any:
    """Python's sequence repetition by ``scalar`` (through ``__index__``), or NumPy's error for a
    scalar that is no integer."""
    if scalar.dtype.kind not in "iub":
        raise TypeError(f"can't multiply sequence by non-int of type 'numpy.{scalar.dtype.name}'")
    return NotImplemented


def _then_run_carried(array: ndarray, result: Any) -> Any:
    """``result``, once the batch ran if it carries enough NumPy data: the temporary taken by
    the operation (``_temporaries``) died with its lazy array, so its release runs with the
    batch and NumPy can give its memory to the program's next temporary."""
    array._base.runtime.run_if_carrying()
    return result


_OPERATORS = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
    "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power, "and": np.bitwise_and,
    "or": np.bitwise_or, "xor": np.bitwise_xor, "lshift": np.left_shift, "rshift": np.right_shift,
}  # fmt: skip

for _name, _ufunc in _OPERATORS.items():
    _forward, _reflected, _inplace = _binary(_ufunc, f"__r{_name}__", repeats=_name == "mul")
    setattr(ndarray, f"__{_name}__", _forward)
    setattr(ndarray, f"__r{_name}__", _reflected)
    setattr(ndarray, f"__i{_name}__", _inplace)

_UNMATCHED = {"eq": False, "ne": True}
_REFLECTED_COMPARISONS = {"lt": "__gt__", "le": "__ge__", "gt": "__lt__", "ge": "__le__", "eq": "__eq__", "ne": "__ne__"}
for _name, _ufunc in {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal, "eq": np.equal, "ne": np.not_equal}.items():
    setattr(ndarray, f"__{_name}__", _binary(_ufunc, _REFLECTED_COMPARISONS[_name], unmatched=_UNMATCHED.get(_name))[0])

_FAST_POWERS = {2: np.square, 0.5: np.sqrt, -1: np.reciprocal}


def _fast_power(base: ndarray, exponent: Any) -> np.ufunc | None:
    """NumPy's ``a ** 2`` / ``** 0.5`` / ``** -1`` shortcut, where it gives power's dtype."""
    if type(exponent) not in (int, float):
        return None
    if base.dtype.kind == "b":  # NumPy squares booleans (int8), where power gives int64
        return np.square if exponent == 2 and type(exponent) is int else None
    if base.dtype.kind not in "fc":
        return None
    return _fast_power_for(base.dtype, type(exponent), exponent)


@functools.lru_cache(maxsize=256)
def _fast_power_for(dtype: np.dtype, kind: type, exponent: int | float) -> np.ufunc | None:
    # ``kind`` keeps 2 and 2.0 apart in the cache: their result dtypes may differ.
    ufunc = _FAST_POWERS.get(exponent)
    if ufunc is None:
        return None
    probe = np.ones((), dtype)
    try:
        with np.errstate(all="ignore"):
            return ufunc if np.power(probe, exponent).dtype == ufunc(probe).dtype else None
    except (TypeError, ValueError):  # NumPy's error comes from the recorded power, at the caller's line
        return None


def _pow(self: ndarray, other: Any, modulo: Any = None) -> Any:
    if modulo is not None:
        raise TypeError(f"unsupported operand type(s) for ** or pow(): 'numpy.ndarray', '{type(other).__name__}', '{type(modulo).__name__}'")
    ufunc = _fast_power(self, other)
    if ufunc is None and _defers_to(other, "__rpow__"):
        return NotImplemented
    return apply_ufunc(np.power, (self, other)) if ufunc is None else apply_ufunc(ufunc, (self,))


_POWER_IN_PLACE = _binary(np.power, "__rpow__")[2]  # made once: the shortcut's fallback for every ``**=``


def _ipow(self: ndarray, other: Any) -> Any:
    ufunc = _fast_power(self, other)
    if ufunc is None or self._scalar:
        return _POWER_IN_PLACE(self, other)
    apply_ufunc(ufunc, (self,), out=(self,))
    return self


ndarray.__pow__ = _pow


def _setflags(self: ndarray, /, *, write: Any = None, align: Any = None, uic: Any = None) -> None:
    """``ndarray.setflags``: ``write`` as NumPy sets it; lazy arrays are always aligned."""
    if uic:
        raise ValueError("cannot set WRITEBACKIFCOPY flag to True")
    if write is not None:
        set_writeable(self, bool(write))


ndarray.setflags = _setflags
ndarray.__ipow__ = _ipow


def _unary(ufunc: np.ufunc) -> Any:
    """The operator method of ``ufunc``; NumPy's scalar loop for an integer scalar where it
    checks for overflow (``_scalar_overflow``)."""
    checked = _scalar_overflow.CHECKED.get(ufunc)

    def method(self: ndarray) -> Any:
        if checked is not None and self._scalar and (scalar := _scalar_overflow.computed(checked, (self,))) is not None:
            return scalar
        return apply_ufunc(ufunc, (self,))

    return method


ndarray.__neg__ = _unary(np.negative)
ndarray.__pos__ = _unary(np.positive)
ndarray.__abs__ = _unary(np.absolute)
ndarray.__invert__ = lambda self: apply_ufunc(np.invert, (self,))
ndarray.__divmod__ = lambda self, other: apply_ufunc(np.divmod, (self, other))
ndarray.__rdivmod__ = lambda self, other: apply_ufunc(np.divmod, (other, self))
def _matmul(a: Any, b: Any) -> Any:
    if SETTLED_CALLS is not None:  # held_product and settled_call below, in C for their common case
        done = SETTLED_CALLS.call(np.matmul, (a, b), PRODUCT)
        if done is not None:
            return done
    eager = _linalg.held_product(np.matmul, a, b)
    if eager is not NOT_SETTLED:
        return eager
    eager = settled_call(np.matmul, (a, b))
    return _linalg.matmul(a, b) if eager is NOT_SETTLED else eager


ndarray.__matmul__ = lambda self, other: NotImplemented if _defers_to(other, "__rmatmul__") else _matmul(self, other)
ndarray.__rmatmul__ = lambda self, other: _matmul(other, self)


def _imatmul(self: ndarray, other: Any) -> ndarray:
    result = _linalg.matmul(self, other)
    if result.shape != self.shape:
        raise ValueError(
            f"matmul: Output operand 0 has a mismatch in its core dimension, shapes {result.shape} and {self.shape}"
        )
    self[...] = result
    return self


ndarray.__imatmul__ = _imatmul


def _keepdims(kwargs: dict[str, Any]) -> Any:
    return kwargs.pop("keepdims", False)


def _reduction_method(name: str) -> Any:
    def method(self: ndarray, /, axis: Any = None, dtype: Any = None, out: Any = None, **kwargs: Any) -> Any:
        keepdims = _keepdims(kwargs)
        return _reduce.reduction(name, self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, method=True, **kwargs)

    method.__name__ = name
    method.__doc__ = f"Lazy ``ndarray.{name}``."
    return method


for _name in ("sum", "prod", "mean"):
    setattr(ndarray, _name, _reduction_method(_name))


def _no_dtype_reduction(name: str) -> Any:
    def method(self: ndarray, /, axis: Any = None, out: Any = None, **kwargs: Any) -> Any:
        keepdims = _keepdims(kwargs)
        return _reduce.reduction(name, self, axis=axis, out=out, keepdims=keepdims, method=True, **kwargs)

    method.__name__ = name
    return method


for _name in ("min", "max"):
    setattr(ndarray, _name, _no_dtype_reduction(_name))


def _logical_reduction(name: str) -> Any:
    def method(self: ndarray, /, axis: Any = None, out: Any = None, keepdims: bool = False, *, where: Any = True) -> Any:
        options = {} if where is True else {"where": where}
        return _reduce.reduction(name, self, axis=axis, out=out, keepdims=keepdims, method=True, **options)

    method.__name__ = name
    return method


for _name in ("any", "all"):
    setattr(ndarray, _name, _logical_reduction(_name))


def _arg_reduction(name: str) -> Any:
    def method(self: ndarray, /, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> Any:
        return _reduce.reduction(name, self, axis=axis, out=out, keepdims=keepdims, method=True)

    method.__name__ = name
    return method


for _name in ("argmin", "argmax"):
    setattr(ndarray, _name, _arg_reduction(_name))


def _spread(name: str) -> Any:
    def method(self: ndarray, /, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0, **kwargs: Any) -> Any:
        keepdims = _keepdims(kwargs)
        return _reduce.reduction(name, self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, ddof=ddof, method=True, **kwargs)

    method.__name__ = name
    return method


ndarray.var = _spread("var")
ndarray.std = _spread("std")


def _cumsum(self: ndarray, /, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    return _reduce.scan("cumsum", self, axis, dtype, out)


def _cumprod(self: ndarray, /, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    return _reduce.scan("cumprod", self, axis, dtype, out)


def _reshape(self: ndarray, /, *shape: Any, order: str = "C", copy: bool | None = None) -> ndarray:
    result = _shape.reshape(self, _shape._normalize_shape(shape), order=order, copy_=copy)
    return result if not self._scalar else scalar_result(result)  # a scalar's method gives a scalar


def _transpose(self: ndarray, /, *axes: Any) -> ndarray:
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        axes = axes[0]
    result = _shape.transpose(self, axes or None)
    return result if not self._scalar else scalar_result(result)


def _astype(self: ndarray, /, dtype: Any, order: str = "K", casting: str = "unsafe", subok: bool = True, copy: bool = True) -> ndarray:
    result = _shape.astype(self, dtype, order, casting, subok, copy)
    return result if not self._scalar else scalar_result(result)


def _fill(self: ndarray, /, value: Any) -> None:
    if type(value) is str:  # converted as NumPy converts it (its error names the Python string)
        value = self.dtype.type(value)
    elif type(value) is ndarray:
        if value.ndim:
            raise ValueError("setting an array element with a sequence.")
    elif not isinstance(value, PYTHON_NUMBERS) and not (isinstance(value, np.generic) and is_supported(value.dtype)):
        value = _filled_value(self.dtype, value)
    self[...] = value


def _filled_value(dtype: np.dtype, value: Any) -> Any:
    """``value`` converted as NumPy's ``fill`` of an array of ``dtype`` converts it (``None`` is
    NaN, a sequence NumPy's ValueError), its errors and warnings at the caller's line."""
    probe = np.empty((), dtype)
    at_user_line(probe.fill, value)
    return probe[()]


def _clip(self: ndarray, /, min: Any = None, max: Any = None, out: Any = None, **kwargs: Any) -> Any:
    from shoal.numpy._functions import clip

    return clip(self, min, max, out=out, **kwargs)


def _tobytes(self: ndarray, /, order: str = "C") -> bytes:
    """``a.tobytes(order)``: order ``A`` reads a Fortran-contiguous array in its order."""
    if order == "A" and fortran_only(self):
        order = "F"
    return self._value().tobytes(order=order)


def _copy(self: ndarray, /, order: str = "C") -> Any:
    result = _shape.copy(self) if order == "C" else _shape.copy_in_order(self, order)
    return result if not self._scalar else scalar_result(result)


def _item(self: ndarray, /, *args: Any) -> Any:
    """``a.item(...)``: the one element asked for, read alone (reading the whole array for it
    cost 1.4 ms a call at 10^6 elements), NumPy's errors checked on a probe without memory."""
    memory = held_memory(self)
    if memory is not None:  # held in NumPy memory (a loop's base): NumPy's own item
        return memory.item(*args)
    if not args or self.size <= 1:
        return self._value().item(*args)
    if len(args) == 1 and type(args[0]) is int and self.ndim == 1 and -self.size <= args[0] < self.size:
        return self[args[0]].item()  # the loop's case: a flat index into a vector
    probe = np.lib.stride_tricks.as_strided(np.zeros(1, self.dtype), self.shape, (0,) * self.ndim)
    probe.item(*args)  # NumPy's errors for a bad index or a wrong count
    key = args[0] if len(args) == 1 and isinstance(args[0], tuple) else args
    if len(key) == 1:
        key = np.unravel_index(operator.index(key[0]) % self.size, self.shape)
    element = self[tuple(operator.index(k) for k in key)]
    return element.item()


def _ravel(self: ndarray, /, order: str = "C") -> ndarray:
    return _shape.ravel(self, order)


def _flatten(self: ndarray, /, order: str = "C") -> ndarray:
    return _shape.flatten(self, order)


def _squeeze(self: ndarray, /, axis: Any = None) -> ndarray:
    return _shape.squeeze(self, axis)


def _swapaxes(self: ndarray, axis1: Any, axis2: Any, /) -> ndarray:
    return _shape.swapaxes(self, axis1, axis2)


def _diagonal(self: ndarray, /, offset: int = 0, axis1: int = 0, axis2: int = 1) -> ndarray:
    return _shape.diagonal(self, offset, axis1, axis2)


def _view(self: ndarray, /, *args: Any, **kwargs: Any) -> Any:
    bound = inspect.signature(_view_parameters).bind(*args, **kwargs)
    return _shape.dtype_view(self, **bound.arguments)


def _view_parameters(dtype: Any = None, type: Any = None) -> None:
    """``ndarray.view``'s parameters (NumPy declares them as ``*args, **kwargs``)."""


def _getfield(self: ndarray, /, dtype: Any, offset: int = 0) -> Any:
    """``ndarray.getfield``: a view of each element's bytes at ``offset`` as ``dtype``."""
    return _shape.dtype_field(self, dtype, offset)


def _setfield(self: ndarray, val: Any, /, dtype: Any, offset: int = 0) -> None:
    _shape.dtype_field(self, dtype, offset)[...] = val


def _dot(self: ndarray, other: Any, /, out: Any = None) -> Any:
    eager = NOT_SETTLED if out is not None else settled_call(np.dot, (self, other))
    return _linalg.dot(self, other, out) if eager is NOT_SETTLED else eager


def _conjugate(self: ndarray, /) -> Any:
    """NumPy's method: the array itself where it is not complex."""
    return apply_ufunc(np.conjugate, (self,)) if self.dtype.kind == "c" else self


def _round(self: ndarray, /, decimals: int = 0, out: Any = None) -> Any:
    from shoal.numpy._functions import around

    return around(self, decimals, out)


def _argsort(self: ndarray, /, axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> Any:
    return _sorting.argsort(self, axis, kind, order, stable=stable)


def _argpartition(self: ndarray, kth: Any, /, axis: Any = -1, kind: str = "introselect", order: Any = None) -> Any:
    return _sorting.argpartition(self, kth, axis, kind, order)


ndarray.cumsum = _cumsum
ndarray.cumprod = _cumprod
ndarray.reshape = _reshape
ndarray.transpose = _transpose
ndarray.astype = _astype
ndarray.fill = _fill
ndarray.clip = _clip
ndarray.copy = _copy
ndarray.tobytes = _tobytes
ndarray._item = _item  # ``item`` is the compiled type's, else this one (set in _protocols)
ndarray.ravel = _ravel
ndarray.flatten = _flatten
ndarray.squeeze = _squeeze
ndarray.swapaxes = _swapaxes
ndarray.diagonal = _diagonal
ndarray.view = _view
ndarray.dot = _dot
ndarray.getfield = _getfield
ndarray.setfield = _setfield
ndarray.conj = ndarray.conjugate = _conjugate
ndarray.round = _round
ndarray.sort = _sorting.sort_in_place
ndarray.partition = _sorting.partition_in_place
ndarray.argsort = _argsort
ndarray.argpartition = _argpartition
ndarray.resize = resize_in_place
