"""The lazy ndarray's protocols for other libraries: the Array API, DLPack, pickling, and NumPy's
remaining methods (run through the fallback) with NumPy's own signatures.

Pickling writes a plain ``numpy.ndarray`` pickle (or a NumPy scalar's, for the 0-d results that
stand for scalars), so a file written under Shoal loads wherever NumPy is installed.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

import numpy as np

from shoal.numpy import _dispatch
from shoal.numpy._held_indexing import held_memory, memory_now
from shoal.numpy._lazy import ndarray
from shoal.numpy._slots import COMPILED

_CPU = np.empty(0)
_VIEW_MAKERS = {  # NumPy's functions that view the array they are given: name -> their file
    "as_strided": "_stride_tricks_impl.py",
    "require": "_asarray.py",
    "__new__": ("ma/core.py", "matrixlib/defmatrix.py"),
}  # fmt: skip


def __array_namespace__(self: ndarray, /, *, api_version: Any = None) -> Any:
    """The Array API namespace of lazy arrays: ``shoal.numpy``."""
    _CPU.__array_namespace__(api_version=api_version)  # NumPy's check of the version
    return sys.modules["shoal.numpy"]


def __dlpack__(
    self: ndarray, /, *, stream: Any = None, max_version: Any = None, dl_device: Any = None, copy: Any = None
) -> Any:
    """DLPack export of the array's contents (computed first)."""
    return self._value().__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)


def __dlpack_device__(self: ndarray, /) -> tuple[int, int]:
    """The DLPack device: the CPU, as for NumPy arrays."""
    return _CPU.__dlpack_device__()


def to_device(self: ndarray, device: Any, /, *, stream: Any = None) -> ndarray:
    """``ndarray.to_device``: Shoal's arrays live on the CPU, as NumPy's do."""
    _CPU.to_device(device, stream=stream)
    return self


def _device(self: ndarray) -> str:
    return _CPU.device


def __contains__(self: ndarray, value: Any, /) -> bool:
    """``value in a``: NumPy's ``(a == value).any()``; NumPy's scalars hold nothing."""
    if self._scalar:
        raise TypeError(f"argument of type 'numpy.{self.dtype.type.__name__}' is not iterable")
    return bool((self == value).any())


def __bytes__(self: ndarray, /) -> bytes:
    """``bytes(a)``: the contents in C order, as NumPy's buffer gives them."""
    return self._value().tobytes()


def _array_interface(self: ndarray) -> dict[str, Any]:
    """NumPy's array interface of the contents, computed now: a consumer (NumPy's own
    ``asarray``, Pillow's ``Image.fromarray``) gets an array of its own, unless the base is held
    (below). The data is given as the
    C-ordered copy itself, which the array NumPy makes from it keeps alive as its base, and the
    strides explicitly, so that a consumer that would ask for a buffer (which a lazy array cannot
    give under Python 3.11) copies with ``tobytes()``.

    An array of a held base (:mod:`shoal.held`) gives its held memory, as a NumPy array gives its
    own (``np.asarray`` then shares it, and indexing by it reads it in place: a CSR product's
    ``x[indices]`` copied 7.7 MB of indices a step). NumPy's own functions that make a view of
    what they are given get the memory itself too, as from a NumPy array (:data:`_VIEW_MAKERS`):
    ``np.lib.stride_tricks.as_strided`` lays its own strides over it (over a compact copy of a strided view, they read past its end), and a
    masked array, a matrix or ``np.require``'s result shares the array's memory."""
    code = sys._getframe(1).f_code
    memory = held_memory(self) if self._base.held is not None and not self._scalar else None
    if memory is None and code.co_name in _VIEW_MAKERS and code.co_filename.endswith(_VIEW_MAKERS[code.co_name]):
        memory = memory_now(self, f"{code.co_name} of a lazy array")
    if memory is not None:
        if memory.flags.c_contiguous:
            return dict(memory.__array_interface__, data=memory)
        owner = memory  # a strided view: its contiguous owner is the data object, kept alive by NumPy's array
        while isinstance(owner.base, np.ndarray):
            owner = owner.base
        start = memory.__array_interface__["data"][0] - owner.__array_interface__["data"][0]
        return dict(memory.__array_interface__, data=owner.reshape(-1).view(np.uint8), offset=start)
    value = self._value()
    data = value
    if not value.flags.c_contiguous:
        data = value.ravel(order="K")  # a Fortran-ordered value (``a.T + 1``) keeps its order
        if data.base is None or min(value.strides) <= 0 or data.__array_interface__["data"][0] != value.__array_interface__["data"][0]:
            data = value = value.copy(order="C")
    interface = dict(value.__array_interface__)
    interface["strides"] = value.strides
    interface["data"] = data
    return interface


def __round__(self: ndarray, ndigits: Any = None, /) -> Any:
    """``round(x)`` of a result that stands for a NumPy scalar, as of that scalar; NumPy's
    arrays do not define it."""
    if not self._scalar:
        raise TypeError("type numpy.ndarray doesn't define __round__ method")
    value = self._value()[()]
    return round(value) if ndigits is None else round(value, ndigits)


def __hash__(self: ndarray, /) -> int:
    """The hash of the NumPy scalar a 0-d result stands for (``{a.max(): ...}``); arrays are
    unhashable, as NumPy's."""
    if not self._scalar:
        raise TypeError("unhashable type: 'numpy.ndarray'")
    return hash(self._value()[()])


def __delitem__(self: ndarray, key: Any, /) -> None:
    """``del a[key]``: NumPy's error (the compiled slots raise it themselves)."""
    raise ValueError("cannot delete array elements")


def __reduce_ex__(self: ndarray, protocol: int, /) -> Any:
    """A NumPy pickle of the contents: the array's, or the scalar's it stands for."""
    value = self._value()
    if self._scalar:
        return value[()].__reduce_ex__(protocol)
    if self._readonly:
        value = value.copy()  # NumPy pickles do not carry the read-only flag
    return value.__reduce_ex__(protocol)


def __reduce__(self: ndarray, /) -> Any:
    """See :func:`__reduce_ex__`."""
    return __reduce_ex__(self, 2)


for _function in (__bytes__, __contains__, __hash__, __round__, __array_namespace__, __dlpack__, __dlpack_device__, to_device, __reduce_ex__, __reduce__):
    setattr(ndarray, _function.__name__, _function)
if not COMPILED:  # the Python slots: the class's own methods are its indexing and ``item`` (shoal/numpy/_slots.py)
    ndarray.__getitem__, ndarray.__setitem__, ndarray.__delitem__ = ndarray._getitem, ndarray._setitem, __delitem__
    ndarray.item = ndarray._item
ndarray.device = property(_device, doc="The device the array lives on: ``'cpu'``.")
ndarray.__array_interface__ = property(_array_interface, doc=_array_interface.__doc__)


def _fallback_attribute(name: str) -> property:
    """NumPy's attribute ``name`` (``data``, ``ctypes``) of the computed contents."""
    return property(lambda self: _dispatch.method_fallback(self, name), doc=getattr(np.ndarray, name).__doc__)


def _fallback_method(name: str) -> Any:
    numpy_method = getattr(np.ndarray, name)

    def method(self: ndarray, /, *args: Any, **kwargs: Any) -> Any:
        return _dispatch.method_fallback(self, name)(*args, **kwargs)

    method.__name__ = name
    method.__qualname__ = f"ndarray.{name}"
    method.__doc__ = numpy_method.__doc__
    method.__signature__ = inspect.signature(numpy_method)  # type: ignore[attr-defined]
    return method


def _attach_fallback_methods() -> None:
    """NumPy's public methods and attributes that Shoal has no lazy version of, as methods and
    properties of the class (so ``inspect`` and the Array API tests see them with NumPy's
    signatures). The class has no ``__getattr__``: it would keep the interpreter from
    specializing every attribute read of a lazy array."""
    own = {name for klass in ndarray.__mro__[:-1] for name in vars(klass)}  # the compiled base's ``item`` too
    for name in dir(np.ndarray):
        if name.startswith("_") or name in own:
            continue
        attribute = getattr(np.ndarray, name)
        if callable(attribute) and not isinstance(attribute, type):
            setattr(ndarray, name, _fallback_method(name))
        else:
            setattr(ndarray, name, _fallback_attribute(name))


_attach_fallback_methods()
