"""Numba accepts lazy arrays: ``numba.njit`` functions called with one read its values.

Registered through Numba's ``numba_extensions`` entry point (``pyproject.toml``), so Numba loads
it when it first compiles, and importing Shoal never imports Numba. A lazy argument types as a
NumPy array of its dtype and dimensions; it is computed and unboxed as that array.
"""

from __future__ import annotations

from typing import Any


def init() -> None:
    """Teach Numba the lazy ndarray and Shoal's ``numpy`` module (called by Numba)."""
    import numpy
    from numba.core import types
    from numba.core.datamodel.models import ArrayModel
    from numba.core.extending import register_model, typeof_impl, unbox
    from numba.core.imputils import lower_cast
    from numba.core.typing.templates import builtin_registry
    from numba.np import numpy_support

    import shoal.numpy
    from shoal.numpy._held_indexing import memory_now
    from shoal.numpy._lazy import fortran_only, ndarray

    # ``np`` in a program run by Shoal is ``shoal.numpy``: compiled code calls NumPy's functions
    builtin_registry.register_global(shoal.numpy, types.Module(numpy))

    def memory(value: ndarray) -> numpy.ndarray:
        """The lazy array's memory, so that the compiled function's writes land in it."""
        return memory_now(value, "a Numba function's array argument")

    class LazyArray(types.Array):
        """A Shoal lazy array, used inside compiled code as the NumPy array it computes to."""

        def __init__(self, dtype: Any, ndim: int, layout: str, readonly: bool = False) -> None:
            super().__init__(dtype, ndim, layout, readonly=readonly, name=f"{'readonly ' if readonly else ''}array({dtype}, {ndim}d, {layout})")

        def copy(self, dtype: Any = None, ndim: Any = None, layout: Any = None, readonly: Any = None, name: Any = None, aligned: Any = None) -> types.Array:
            return types.Array(
                self.dtype if dtype is None else dtype, self.ndim if ndim is None else ndim,
                self.layout if layout is None else layout, readonly=bool(readonly),
            )  # fmt: skip

    register_model(LazyArray)(ArrayModel)

    @typeof_impl.register(ndarray)
    def _typeof(value: ndarray, context: Any) -> LazyArray:
        layout = "C" if value._view.is_contiguous() else "F" if fortran_only(value) else "A"
        return LazyArray(numpy_support.from_dtype(value.dtype), value.ndim, layout, bool(value._readonly))

    @unbox(LazyArray)
    def _unbox(typ: LazyArray, obj: Any, c: Any) -> Any:
        function = c.pyapi.unserialize(c.pyapi.serialize_object(memory))
        array = c.pyapi.call_function_objargs(function, [obj])
        plain = types.Array(typ.dtype, typ.ndim, typ.layout, readonly=typ.mutable is False)
        result = c.unbox(plain, array)
        c.pyapi.decref(array)
        return result

    @lower_cast(LazyArray, types.Array)
    def _cast(context: Any, builder: Any, fromty: Any, toty: Any, value: Any) -> Any:
        return value
