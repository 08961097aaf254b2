"""``a.flat`` and ``a.flags`` of a lazy array: its flat iterator and its flags."""

from __future__ import annotations

from typing import Any

import numpy as np

from shoal.bytecode import View
from shoal.numpy._lazy import is_lazy, ndarray
from shoal.numpy._numpy_data import materialize


class FlatIter:
    """``a.flat``: iteration reads values; indexing and assignment go through a flat view or copy."""

    def __init__(self, array: ndarray) -> None:
        self._array = array

    def __iter__(self):
        return iter(self._array._value().reshape(-1))

    def __len__(self) -> int:
        return self._array.size

    def __getitem__(self, key: Any) -> Any:
        result = self._array.reshape(-1)[key]
        return result.copy() if is_lazy(result) and not result._scalar else result

    def __setitem__(self, key: Any, value: Any) -> None:
        array = self._array
        if key is Ellipsis or key == slice(None):
            value = value if is_lazy(value) and value.size == array.size else np.resize(materialize(value), array.size)
            array[...] = value.reshape(array.shape)
            return
        if array._view.is_contiguous():
            array.reshape(-1)[key] = value
            return
        flat = array.flatten()
        flat[key] = value
        array[...] = flat.reshape(array.shape)


_FLAG_NAMES = {  # NumPy's keys of ``a.flags[...]`` (upper case only) -> attribute
    "C_CONTIGUOUS": "c_contiguous", "C": "c_contiguous", "CONTIGUOUS": "c_contiguous",
    "F_CONTIGUOUS": "f_contiguous", "F": "f_contiguous", "FORTRAN": "f_contiguous",
    "WRITEABLE": "writeable", "W": "writeable", "OWNDATA": "owndata", "O": "owndata",
    "ALIGNED": "aligned", "A": "aligned", "WRITEBACKIFCOPY": "writebackifcopy", "X": "writebackifcopy",
    "BEHAVED": "behaved", "B": "behaved", "CARRAY": "carray", "CA": "carray", "FARRAY": "farray", "FA": "farray",
    "FNC": "fnc", "FORC": "forc",
}  # fmt: skip


class Flags:
    """``a.flags``: NumPy's flags of the array's view; ``writeable`` reads and sets the array's."""

    def __init__(self, array: ndarray) -> None:
        view = array._view
        self._array = array
        self.c_contiguous = self.contiguous = view.is_contiguous()
        self.f_contiguous = View(view.base, view.dtype, view.offset, view.shape[::-1], view.strides[::-1]).is_contiguous()
        self.owndata = array._owner is None
        self.aligned = True

    @property
    def writeable(self) -> bool:
        return not self._array._readonly

    @writeable.setter
    def writeable(self, value: bool) -> None:
        set_writeable(self._array, bool(value))

    def __getitem__(self, name: str) -> bool:
        if name not in _FLAG_NAMES:
            raise KeyError("Unknown flag")
        return getattr(self, _FLAG_NAMES[name])

    @property
    def fortran(self) -> bool:
        return self.f_contiguous

    @property
    def fnc(self) -> bool:
        return self.f_contiguous and not self.c_contiguous

    @property
    def forc(self) -> bool:
        return self.f_contiguous or self.c_contiguous

    @property
    def behaved(self) -> bool:
        return self.aligned and self.writeable

    @property
    def carray(self) -> bool:
        return self.behaved and self.c_contiguous

    @property
    def farray(self) -> bool:
        return (self.aligned or self.writeable or self.f_contiguous) and not self.c_contiguous  # NumPy's test, as written

    @property
    def writebackifcopy(self) -> bool:
        return False

    def __repr__(self) -> str:
        """NumPy's listing of the flags."""
        names = ("c_contiguous", "f_contiguous", "owndata", "writeable", "aligned", "writebackifcopy")
        return "".join(f"  {name.upper()} : {getattr(self, name)}\n" for name in names)

    def __setitem__(self, name: str, value: bool) -> None:
        if name in ("A", "ALIGNED") and value:
            return  # a lazy array's memory is always aligned
        if name not in ("W", "WRITEABLE"):
            raise KeyError("Unknown flag")
        self.writeable = value


def set_writeable(array: ndarray, writeable: bool) -> None:
    """NumPy's ``a.flags.writeable = ...`` and ``a.setflags(write=...)`` for a lazy array: a view
    of a read-only array cannot be made writeable."""
    if writeable and array._readonly and array._owner is not None and array._owner._readonly:
        raise ValueError("cannot set WRITEABLE flag to True of this array")
    array._readonly = not writeable
    array._held = None  # its NumPy view of a held base is made again, with the flag
