"""Numba accepts lazy arrays: ``numba.njit`` functions called with one read its values.

Registered through Numba's ``numba_extensions`` entry point (``pyproject.toml``), so Numba loads
it when it first compiles, and importing Shoal never imports Numba. A lazy argument types as a
NumPy array of its dtype and dimensions; it is computed and unboxed as that array.
"""

from __future__ import annotations

from typing import Any


def init() -> None:
    """Teach Numba the lazy ndarray (called by Numba)."""
    from numba.core import types
    from numba.core.datamodel.models import ArrayModel
    from numba.core.extending import register_model, typeof_impl, unbox
    from numba.core.imputils import lower_cast
    from numba.np import numpy_support

    from shoal.numpy._lazy import ndarray

    class LazyArray(types.Array):
        """A Shoal lazy array, used inside compiled code as the NumPy array it computes to."""

        def __init__(self, dtype: Any, ndim: int, layout: str) -> None:
            super().__init__(dtype, ndim, layout, readonly=False, name=f"shoal.array({dtype}, {ndim}d, {layout})")

        def copy(self, dtype: Any = None, ndim: Any = None, layout: Any = None, readonly: Any = None, name: Any = None, aligned: Any = None) -> types.Array:
            return types.Array(
                self.dtype if dtype is None else dtype, self.ndim if ndim is None else ndim,
                self.layout if layout is None else layout, readonly=bool(readonly),
            )  # fmt: skip

    register_model(LazyArray)(ArrayModel)

    @typeof_impl.register(ndarray)
    def _typeof(value: ndarray, context: Any) -> LazyArray:
        return LazyArray(numpy_support.from_dtype(value.dtype), value.ndim, "A")

    @unbox(LazyArray)
    def _unbox(typ: LazyArray, obj: Any, c: Any) -> Any:
        array = c.pyapi.call_method(obj, "__array__", ())
        plain = types.Array(typ.dtype, typ.ndim, typ.layout)
        result = c.unbox(plain, array)
        c.pyapi.decref(array)
        return result

    @lower_cast(LazyArray, types.Array)
    def _cast(context: Any, builder: Any, fromty: Any, toty: Any, value: Any) -> Any:
        return value
