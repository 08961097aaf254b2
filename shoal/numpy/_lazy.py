"""The lazy ndarray, a view onto a base that lives in a component. Arrays below the eager
threshold are plain ``numpy.ndarray`` objects; ``isinstance(x, shoal.numpy.ndarray)`` holds for
both (:mod:`shoal.numpy._ndarray_type`, which also makes a program's subclass of ``np.ndarray``
NumPy's), and ``np.ndarray[...]`` in annotations is NumPy's generic alias."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from shoal import fp_warnings
from shoal.base_lives import LazyBase
from shoal.bytecode import View
from shoal.frozen_values import new_view, slot_maker
from shoal.numpy._ndarray_type import NdarrayType
from shoal.numpy._slots import NUMPY_INTEGERS, HeldSlots


class ndarray(HeldSlots, metaclass=NdarrayType):
    """A lazily evaluated N-dimensional array with NumPy's semantics."""

    __slots__ = ("__weakref__", "_base", "_owner", "_readonly", "_scalar", "_view")  # _held, _quiet: HeldSlots
    __array_priority__ = 100.0
    __hash__ = None  # type: ignore[assignment]

    _base: LazyBase
    _view: View
    _owner: ndarray | None
    _readonly: bool
    _scalar: bool
    _held: np.ndarray | None  # its view of the base's memory while the base is held (shoal.held)
    _quiet: frozenset[type]  # with _held: the scalar types whose store into it never warns

    # construction ----------------------------------------------------------------------------
    def __class_getitem__(cls, item: Any) -> Any:
        """``np.ndarray[shape, dtype]`` in annotations: NumPy's generic alias."""
        return np.ndarray.__class_getitem__(item)

    def __new__(
        cls,
        shape: Any,
        dtype: Any = None,
        buffer: Any = None,
        offset: int = 0,
        strides: Any = None,
        order: Any = None,
    ) -> Any:
        return np.ndarray(shape, dtype, buffer, offset, strides, order)

    @classmethod
    def _wrap(
        cls,
        base: LazyBase,
        view: View,
        owner: ndarray | None = None,
        readonly: bool = False,
        scalar: bool = False,
    ) -> ndarray:
        if cls is ndarray:
            return make_lazy_array(base, view, owner, readonly, scalar, None, NO_QUIET_STORES)
        self = object.__new__(cls)
        self._base = base
        self._view = view
        self._owner = owner
        self._readonly = readonly
        self._scalar = scalar
        self._held = None
        self._quiet = NO_QUIET_STORES
        return self

    def _derive(self, view: View, readonly: bool | None = None) -> ndarray:
        """A new array object viewing the same base (NumPy's ``.base`` points at the owner)."""
        owner = self if self._owner is None else self._owner
        return ndarray._wrap(self._base, view, owner, self._readonly if readonly is None else readonly)

    # attributes ------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._view.shape

    @shape.setter
    def shape(self, value: Any) -> None:
        reshaped = self.reshape(value)
        if reshaped._base is not self._base:
            raise AttributeError(
                "Incompatible shape for in-place modification. Use `.reshape()` to make a copy "
                "with the desired shape."
            )
        self._view = reshaped._view
        self._held = None

    @property
    def dtype(self) -> np.dtype:
        return self._view.dtype

    @dtype.setter
    def dtype(self, value: Any) -> None:
        """``a.dtype = t``: the same memory read as ``t`` from now on (NumPy's ``view(t)``)."""
        self._view = _shape.dtype_view(self, value)._view
        self._held = None  # its NumPy view of a held base is made again, with the dtype

    @property
    def ndim(self) -> int:
        return len(self._view.shape)

    @property
    def size(self) -> int:
        return math.prod(self._view.shape)

    @property
    def itemsize(self) -> int:
        return self._view.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def strides(self) -> tuple[int, ...]:
        return self._view.strides

    @property
    def base(self) -> ndarray | None:
        return self._owner

    @property
    def T(self) -> Any:
        memory = _held_indexing.held_memory(self)
        if memory is None:
            return self.transpose()
        return memory.T if not self._scalar else memory[()]  # the base is held: NumPy's transpose of its memory, as indexing gives

    @property
    def mT(self) -> ndarray:
        if self.ndim < 2:
            raise ValueError("matrix transpose with ndim < 2 is undefined")
        return self.swapaxes(-1, -2)

    @property
    def real(self) -> Any:
        if self._scalar:  # the NumPy scalar's part
            return self._value()[()].real
        if self.dtype.kind != "c":
            return self  # NumPy's attribute gives the array itself
        return _shape.view_via_probe(self, lambda probe: probe.real)

    @real.setter
    def real(self, value: Any) -> None:
        self.real[...] = value

    @property
    def imag(self) -> Any:
        if self._scalar:
            return self._value()[()].imag
        if self.dtype.kind != "c":
            from shoal.numpy._create import zeros

            result = zeros(self.shape, self.dtype)
            if type(result) is ndarray:
                result._readonly = True
            else:
                result.flags.writeable = False
            return result
        return _shape.view_via_probe(self, lambda probe: probe.imag)

    @imag.setter
    def imag(self, value: Any) -> None:
        if self.dtype.kind != "c":
            raise TypeError("array does not have imaginary part to set")
        self.imag[...] = value

    @property
    def flat(self) -> _flat.FlatIter:
        return _flat.FlatIter(self)

    @flat.setter
    def flat(self, value: Any) -> None:
        _flat.FlatIter(self)[...] = value

    @property
    def flags(self) -> _flat.Flags:
        return _flat.Flags(self)

    # reading values (flush triggers) ---------------------------------------------------------
    def _value(self) -> np.ndarray:
        """Flush and fetch this array's contents."""
        result = self._base.runtime.read(self._view)
        if self._readonly:
            result.flags.writeable = False
        return result

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        value = self._value()
        if dtype is not None and value.dtype != dtype:
            value = value.astype(dtype)
        return value

    def tolist(self, /) -> Any:
        return self._value().tolist()

    def __bool__(self) -> bool:
        if self.size != 1:
            return bool(self._view_sized_value())
        return bool(self._value())

    def _view_sized_value(self) -> np.ndarray:
        if self.size > 1:  # raise NumPy's ambiguity error without flushing
            raise ValueError(
                "The truth value of an array with more than one element is ambiguous. "
                "Use a.any() or a.all()"
            )
        return self._value()

    def __float__(self) -> float:
        self._require_scalar("float")
        return float(self._value().reshape(()))

    def __int__(self) -> int:
        self._require_scalar("int")
        return int(self._value().reshape(()))

    def __complex__(self) -> complex:
        self._require_scalar("complex")
        return complex(self._value().reshape(()))

    def __index__(self) -> int:
        if self.ndim != 0 or self.dtype.kind not in "iub":
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        return int(self._value())

    def _require_scalar(self, kind: str) -> None:
        if self.ndim > 0:
            raise TypeError("only 0-dimensional arrays can be converted to Python scalars")

    def __len__(self) -> int:
        if not self.shape:
            if self._scalar:
                raise TypeError(f"object of type 'numpy.{self.dtype.type.__name__}' has no len()")
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            if self._scalar:
                raise TypeError(f"'numpy.{self.dtype.type.__name__}' object is not iterable")
            raise TypeError("iteration over a 0-d array")
        if self.ndim == 1:  # NumPy's iteration of the held memory: each element read when reached
            return iter(_held_indexing.memory_now(self, None))
        return (self[i] for i in range(self.shape[0]))

    def __repr__(self) -> str:
        value = self._value()
        return repr(value[()]) if self._scalar else repr(value)

    def __str__(self) -> str:
        value = self._value()
        return str(value[()]) if self._scalar else str(value)

    def __format__(self, spec: str) -> str:
        value = self._value()
        return format(value[()] if self.ndim == 0 else value, spec)

    def __copy__(self) -> ndarray:
        return self.copy()

    def __deepcopy__(self, memo: Any) -> ndarray:
        return self.copy()

    # NumPy protocols ------------------------------------------------------------------------
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        for value in inputs:  # a masked array or matrix: NumPy's call, which the subclass wraps
            if type(value) not in _PLAIN_OPERANDS and isinstance(value, np.ndarray) and "out" not in kwargs:
                return _ufunc.for_numpy_subclass(ufunc, method, inputs, kwargs)
        recorded = method == "__call__" and not kwargs and len(inputs) == ufunc.nin and ufunc.nout == 1
        if recorded and type(inputs[0]) is not ndarray and self._scalar:  # np.int64(k) * s
            scalar = _scalar_overflow.from_scalar_operator(ufunc, inputs)
            if scalar is not None:
                return scalar
        if recorded:
            fast = _fast_ufunc.record(ufunc, inputs, None)  # settled operands decided first (the compiled call too), as below
            if fast is not _fast_ufunc.NOT_FAST:
                return fast
        if method in _settled_functions.UFUNC_METHODS and not kwargs and _settled_compiled.SETTLED_CALLS is not None:  # settled_method's common case
            eager = _settled_compiled.SETTLED_CALLS.call(getattr(ufunc, method), inputs, _settled_compiled.METHOD)
            if eager is not None:
                return eager
        if method == "__call__" and len(inputs) == ufunc.nin and kwargs.keys() <= _SETTLED_KEYWORDS:
            eager = _settled.settled_ufunc(
                ufunc, inputs, kwargs.get("out"), kwargs.get("where", True), kwargs.get("dtype"), kwargs.get("casting", "same_kind"), recorded
            )
            if eager is not _settled.NOT_SETTLED:
                return eager
        return _ufunc.array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return _dispatch.array_function(func, args, kwargs)

    # indexing --------------------------------------------------------------------------------
    def _getitem(self, key: Any) -> Any:
        """``self[key]`` (``__getitem__``, or what the compiled slots leave to Python)."""
        if self._scalar:
            try:
                return _index.getitem(self, key)
            except (IndexError, TypeError, ValueError):
                raise IndexError("invalid index to scalar variable.") from None  # NumPy's scalar's, for any key it refuses
        memory = self._held
        if memory is None:
            if self._base.held is None:
                return _index.getitem(self, key)
            memory = _held_indexing.own_view(self)
        kind = type(key)
        if kind is tuple:  # the base is held: NumPy's indexing of its memory (shoal.held)
            first = type(key[0]) if key else tuple
            if first is int or first in NUMPY_INTEGERS:  # a row or an element: small
                return memory[key]
            result = memory[key]
            if type(result) is not np.ndarray or result.size < self._base.large:
                return result
            del result, memory
            return _held_indexing.large_view(self, key)
        if kind is int:
            return memory[key]
        if kind is slice:
            result = memory[key]
            if result.size < self._base.large:
                return result
            del result, memory
            return _held_indexing.large_view(self, key)
        return _held_indexing.indexed(memory, key)

    def _setitem(self, key: Any, value: Any) -> None:
        """``self[key] = value`` (``__setitem__``, or what the compiled slots leave to Python)."""
        memory = self._held
        if memory is None:
            if self._base.held is None or self._scalar:
                _index.setitem(self, key, value)
                return
            memory = _held_indexing.own_view(self)
        kind = type(value)
        if kind is ndarray and value._base.held is None and math.prod(value._view.shape) >= self._base.large:
            # Large lazy work (``b[1:-1] = (a[:-2] + a[2:]) / 2`` into a held ``b``) is recorded
            # into the base, which goes back to the engine: NumPy's store would read the work
            # out into a new array and copy that in (1-D Jacobi on 32M elements: two copies of
            # 256 MB a sweep).
            _index.setitem(self, key, value)
            return
        key = _held_indexing.memory_index(key)  # lazy index arrays read in place, not copied out by NumPy
        if kind is _NDARRAY:
            if value.dtype is memory.dtype:
                memory[key] = value  # no cast
                return
        elif kind in self._quiet:
            memory[key] = value  # no cast that warns (a Python int out of range raises NumPy's OverflowError)
            return
        elif kind is ndarray and not value._scalar:  # a small lazy value: its settled memory, read in place (no copy)
            source = _settled.readable(value)
            if source is not None:
                if source.dtype is memory.dtype:
                    memory[key] = source
                    return
                value = source
        with fp_warnings.relayed():  # a cast's warning is reported at the caller's line, as NumPy's
            memory[key] = value


# helpers shared by the frontend modules ----------------------------------------------------------
_NDARRAY = np.ndarray
NO_QUIET_STORES: frozenset[Any] = frozenset()  # ``_quiet`` while no memory is held
_SETTLED_KEYWORDS = frozenset(("out", "where", "dtype", "casting"))
_PLAIN_OPERANDS = frozenset((ndarray, np.ndarray, int, float, complex, bool))


def make_view(base: int, dtype: np.dtype, offset: int, shape: tuple[int, ...], strides: tuple[int, ...]) -> View:
    """A view; empty views are anchored at offset 0 so they always lie inside their base."""
    if 0 in shape:
        offset = 0
    return new_view(base, dtype, offset, tuple(shape), tuple(strides))


def deliver(result: ndarray, out: Any) -> Any:
    """The value an operation returns: ``out`` (a NumPy ``out`` gets the data copied in), or
    ``result``, which stands for a NumPy scalar when it is 0-d and no ``out`` was given."""
    if out is not None and not is_lazy(out):
        np.copyto(out, result._value())
        return out
    if out is None and not result.shape:
        result._scalar = True
    return result


#: ``make_lazy_array(base, view, owner, readonly, scalar, None, NO_QUIET_STORES)`` is
#: ``ndarray._wrap(base, view, owner, readonly, scalar)``, in one call (``shoal.frozen_values``).
make_lazy_array = slot_maker(ndarray, ("_base", "_view", "_owner", "_readonly", "_scalar", "_held", "_quiet"))


def scalar_result(value: Any) -> Any:
    """A method's ``value`` as NumPy's scalar method returns it: a 0-d array as its scalar (a
    lazy one stands for it), anything else as it is."""
    if type(value) is ndarray:
        if not value._view.shape:
            value._scalar = True
        return value
    if type(value) is np.ndarray and not value.shape:
        return value[()]
    return value


def is_lazy(value: Any) -> bool:
    return type(value) is ndarray


def fortran_only(array: ndarray) -> bool:
    """True if ``array`` is Fortran-contiguous and not C-contiguous (NumPy's order ``A`` is then F)."""
    view = array._view
    return not view.is_contiguous() and View(view.base, view.dtype, view.offset, view.shape[::-1], view.strides[::-1]).is_contiguous()


from shoal.numpy import (  # noqa: E402
    _composed,  # noqa: F401  (functions composed from lazy operations)
    _dispatch,
    _einsum,  # noqa: F401  (einsum as views, sums and matrix products)
    _fast_ufunc,
    _flat,
    _held_indexing,
    _index,
    _memory_overlap,  # noqa: F401  (shares_memory, may_share_memory)
    _methods,  # noqa: F401  (attaches the remaining methods)
    _pad,  # noqa: F401  (np.pad composed from lazy operations)
    _protocols,  # noqa: F401  (the Array API, DLPack, pickling and fallback methods)
    _scalar_methods,  # noqa: F401  (the methods of results that stand for NumPy scalars)
    _scalar_overflow,
    _settled,
    _settled_compiled,
    _settled_functions,
    _shape,
    _ufunc,
    _ufunc_methods,  # noqa: F401  (accumulate, reduceat, fill_diagonal)
    _values,  # noqa: F401  (nonzero, searchsorted, ...: computed at the call)
    _views,  # noqa: F401  (atleast_2d, rot90, ...: views of the lazy array)
)
