"""``a.flat`` and ``a.flags`` of a lazy array: its flat iterator and its flags."""

from __future__ import annotations

from typing import Any

import numpy as np

from shoal.bytecode import View
from shoal.numpy._lazy import is_lazy, materialize, ndarray


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


class Flags:
    """``a.flags``: NumPy's flags of the array's view (a snapshot, as NumPy's own reads them)."""

    def __init__(self, array: ndarray) -> None:
        view = array._view
        self.writeable = not array._readonly
        self.c_contiguous = self.contiguous = view.is_contiguous()
        self.f_contiguous = View(view.base, view.dtype, view.offset, view.shape[::-1], view.strides[::-1]).is_contiguous()
        self.owndata = array._owner is None
        self.aligned = True

    def __getitem__(self, name: str) -> bool:
        return getattr(self, {"C_CONTIGUOUS": "c_contiguous", "F_CONTIGUOUS": "f_contiguous", "WRITEABLE": "writeable", "OWNDATA": "owndata", "ALIGNED": "aligned", "C": "c_contiguous", "F": "f_contiguous", "W": "writeable"}.get(name, name.lower()))
