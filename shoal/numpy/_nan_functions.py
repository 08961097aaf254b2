"""NumPy's NaN-ignoring reductions on lazy arrays, run as NumPy wrote them.

NumPy's own code for these reads a lazy array's values first (a copy out of the engine) when
it calls ``asanyarray`` or ``np.array`` on it, and for ``nanmax``/``nanmin`` takes its slow path
for anything that is not exactly ``np.ndarray`` (a different warning text). Here the same code
runs with Shoal's names in its globals: ``_replace_nan`` recorded (``np.where`` of the NaN mask),
``np.asanyarray`` Shoal's, and ``np.ndarray`` the lazy class, so ``nanmax`` takes NumPy's fast
path (``np.fmax.reduce``). The warnings these functions give themselves ("Mean of empty slice",
"All-NaN slice encountered") name the program's line, as NumPy's do.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import numpy as np

from shoal.fp_warnings import at_user_line
from shoal.numpy._lazy import ndarray
from shoal.numpy._ufunc import apply_ufunc


def nan_replaced(a: Any, value: Any) -> tuple[Any, Any]:
    """NumPy's ``_replace_nan``, recorded lazily: ``a`` with its NaNs replaced by ``value`` (a new
    array), and the mask of where they were (None for dtypes without NaN, which come back as
    they are)."""
    from shoal.numpy import _create

    a = _create.asanyarray(a)
    if not issubclass(a.dtype.type, np.inexact):
        return a, None
    mask = apply_ufunc(np.isnan, (a,))
    return np.where(mask, np.array(value, a.dtype), a), mask


def copied_to(a: Any, val: Any, mask: Any) -> Any:
    """NumPy's ``_copyto`` (``val`` into ``a`` where ``mask``, cast unsafely) with the write
    recorded for a lazy ``a``."""
    if type(a) is ndarray:
        a[...] = np.where(mask, np.array(val).astype(a.dtype, casting="unsafe"), a)
        return a
    if isinstance(a, np.ndarray):  # NumPy's own result (a small one): the mask is read, not the fallback's
        np.copyto(a, val, where=np.asarray(mask), casting="unsafe")
        return a
    return a.dtype.type(val)


def at_callers_line(rebound: Callable[..., Any], numpy_function: Any) -> Callable[..., Any]:
    """``rebound`` for a lazy first argument, run so that its own warnings name the program's
    line; NumPy's implementation otherwise (a lazy ``out`` alone)."""

    def call(a: Any, *args: Any, **kwargs: Any) -> Any:
        if type(a) is not ndarray:
            return numpy_function._implementation(a, *args, **kwargs)
        return at_user_line(rebound, a, *args, **kwargs)

    return call


def register(table: dict[Any, Any], rebound: Callable[..., Any], module_with: Callable[..., types.ModuleType], keeps_lazy: types.ModuleType) -> None:
    """Enter the NaN-ignoring reductions in the dispatch ``table``; ``rebound`` and
    ``module_with`` rebuild NumPy's functions with other globals (``shoal.numpy._composed``)."""
    for function in (np.nansum, np.nanprod, np.nancumsum, np.nancumprod):  # they warn nothing of their own
        table[function] = rebound(function, np=keeps_lazy, _replace_nan=nan_replaced)
    # 4000 x 4000 float64 with NaNs, NumPy / Shoal reading the array first: nanmean 34 / 46 ms,
    # nanstd 61 / 73 ms, nanmax 4.6 / 15 ms.
    table[np.nanmean] = at_callers_line(rebound(np.nanmean, np=keeps_lazy, _replace_nan=nan_replaced), np.nanmean)
    variance = rebound(np.nanvar, np=keeps_lazy, _replace_nan=nan_replaced, _copyto=copied_to)
    table[np.nanvar] = at_callers_line(variance, np.nanvar)
    # nanstd calls nanvar itself, whose warning then names nanstd's line in NumPy's file, as NumPy's.
    table[np.nanstd] = at_callers_line(rebound(np.nanstd, np=keeps_lazy, nanvar=variance), np.nanstd)
    fast = module_with(np, ndarray=ndarray)
    for function in (np.nanmax, np.nanmin):
        table[function] = at_callers_line(rebound(function, np=fast), function)
