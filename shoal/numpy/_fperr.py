"""NumPy's floating-point error modes for lazy operations.

Recorded work runs later, on other threads, with NumPy's error reporting off, so an error that
NumPy would signal at the user's line could not be seen there. While any category is set to
anything but ``"ignore"`` or ``"warn"`` (``"raise"``, ``"call"``, ``"print"``, ``"log"``), the
operations that can signal one run eagerly instead: the inputs are read (a flush), NumPy computes
the result under the caller's error state, and the result comes back as a lazy array. NumPy thus
raises, calls the handler or prints exactly as it would, at the call that asked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from shoal import fp_warnings, runtime
from shoal.bytecode.dtypes import is_supported
from shoal.numpy._lazy import deliver, is_lazy, ndarray
from shoal.numpy._numpy_data import from_numpy

_LAZY_MODES = frozenset(("ignore", "warn"))
# NumPy keeps its error state in a context variable holding an immutable object per state; the
# last one seen and its verdict are kept (the reference keeps its identity unique), so the
# common case costs a ``get`` and a comparison. Without that variable, ``np.geterr`` decides.
_STATE = getattr(np._core.umath, "_extobj_contextvar", None)
_last: tuple[Any, bool] = (object(), False)


def strict() -> bool:
    """True when a floating-point error must reach the caller now: some category neither
    ignored nor only warned about, or warned about while the warnings filters may turn the
    ``RuntimeWarning`` into an error."""
    global _last
    if _STATE is None:
        return _strict_modes() or fp_warnings.raises()
    state = _STATE.get()
    last = _last
    if state is last[0]:
        return last[1] or fp_warnings.raises()
    verdict = _strict_modes()
    _last = (state, verdict)
    return verdict or fp_warnings.raises()


def _strict_modes() -> bool:
    modes = np.geterr()
    return not (
        modes["divide"] in _LAZY_MODES
        and modes["over"] in _LAZY_MODES
        and modes["invalid"] in _LAZY_MODES
        and modes["under"] in _LAZY_MODES
    )


def plain(value: Any) -> Any:
    """``value`` with a lazy array replaced by its contents."""
    return value._value() if is_lazy(value) else value


def _lazy_result(value: Any, scalar: bool) -> ndarray:
    result = from_numpy(np.asarray(value), copy=False)
    result._scalar = scalar
    return result


def eager_ufunc(ufunc: np.ufunc, inputs: tuple[Any, ...], outs: tuple[Any, ...], where: Any, options: dict[str, Any]) -> Any:
    """``ufunc(*inputs)`` computed now by NumPy under the caller's error state, after the
    warnings of earlier recorded work, so they come in program order (a lazy ``1 / a`` warned
    after a later ``np.log(a)`` computed at its call under an ``error`` filter)."""
    runtime.give_pending_warnings()
    values = tuple(plain(v) for v in inputs)
    # A lazy ``out`` is computed into a private copy and written back, also when NumPy raises
    # (NumPy checks the error flags after the loop: its outputs hold the results then).
    np_outs = tuple(None if o is None else (np.array(o._value()) if is_lazy(o) else o) for o in outs)
    given = any(o is not None for o in outs)
    try:
        if given:
            options = {**options, "out": np_outs}
        with fp_warnings.relayed():  # NumPy's other warnings (``where`` without ``out``) at the user's line
            computed = fp_warnings.at_user_line(ufunc, *values, where=plain(where), **options)
    finally:
        for user_out, np_out in zip(outs, np_outs):
            if is_lazy(user_out):
                user_out[...] = np_out
    computed = computed if ufunc.nout > 1 else (computed,)
    results = []
    for value, user_out in zip(computed, outs):
        if user_out is None and not is_supported(np.asarray(value).dtype):
            results.append(value)  # NumPy's own result: no lazy array holds strings or objects
        elif user_out is None:
            results.append(_lazy_result(value, scalar=not given and np.ndim(value) == 0))
        else:
            results.append(user_out)
    return tuple(results) if ufunc.nout > 1 else results[0]


def eager_reduction(function: Callable[..., Any], array: ndarray, out: Any, **kwargs: Any) -> Any:
    """A reduction or scan computed now by NumPy under the caller's error state (after the
    warnings of earlier recorded work, as :func:`eager_ufunc`)."""
    runtime.give_pending_warnings()
    value = array._value()
    with fp_warnings.relayed():
        return deliver_now(function(value, **kwargs), out)


def deliver_now(value: Any, out: Any) -> Any:
    """An operation's result computed now: written into ``out`` if given, else a lazy array
    (0-d standing for a scalar, as :func:`deliver` makes it)."""
    value = np.asarray(value)
    if is_lazy(out):
        out[...] = value
        return out
    return deliver(_lazy_result(value, scalar=False), out)


def cast_now(value: Any, dtype: np.dtype) -> Any:
    """``value`` cast to ``dtype`` now when it is an array of another dtype (the cast may
    signal); anything else unchanged."""
    if (is_lazy(value) or isinstance(value, np.ndarray)) and value.dtype != dtype and strict():
        value = np.asarray(plain(value))
        with fp_warnings.relayed():
            return value.astype(dtype)
    return value
