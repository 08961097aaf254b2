"""``np.fft`` on lazy arrays: each transform is one ``fft`` instruction that the engine runs
with pocketfft over the whole view, so a call neither flushes the batch nor reads the data.

The frontend works out NumPy's default lengths and axes (``_cook_nd_args``), records them
explicitly, and runs NumPy on a probe for the result dtype and for the errors a call raises
(bad axes, lengths below one, an unknown ``norm``). ``out=`` and repeated axes go through the
fallback.
"""

from __future__ import annotations

import operator
import warnings
from typing import Any

import numpy as np
import numpy.fft as _fft
from numpy.lib.array_utils import normalize_axis_index

from shoal.bytecode.opcodes import FFT_ONE_AXIS
from shoal.numpy import _dispatch
from shoal.numpy._numpy_data import as_lazy, materialize, new_array
from shoal.numpy._probe import quietly, value_probe

_REAL_FORWARD = ("rfft", "ihfft", "rfftn", "rfft2")
_REAL_INVERSE = ("irfft", "hfft", "irfftn", "irfft2")


def _one_axis(shape: tuple[int, ...], function: str, n: Any, axis: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    axis = normalize_axis_index(axis, len(shape))
    if n is None:
        n = 2 * (shape[axis] - 1) if function in _REAL_INVERSE else shape[axis]
    return (operator.index(n),), (axis,)  # NumPy's TypeError for ``n=100.0``


def _many_axes(shape: tuple[int, ...], function: str, s: Any, axes: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """NumPy's ``_cook_nd_args``: the lengths and (normalized) axes of an n-dimensional transform."""
    if s is None:
        axes = list(range(len(shape))) if axes is None else list(axes)
        lengths = [shape[normalize_axis_index(a, len(shape))] for a in axes]
        if function in _REAL_INVERSE and lengths:
            lengths[-1] = (lengths[-1] - 1) * 2
    else:
        lengths = list(s)
        if axes is None:
            warnings.warn(_S_WITHOUT_AXES, DeprecationWarning, stacklevel=_dispatch.caller_stacklevel())
        axes = list(range(-len(lengths), 0)) if axes is None else list(axes)
        if len(lengths) != len(axes):
            raise ValueError("Shape and axes have different lengths.")
        # None (deprecated) and -1 (NumPy 2) keep the input's length along that axis
        lengths = [shape[normalize_axis_index(a, len(shape))] if n is None or n == -1 else n for n, a in zip(lengths, axes)]
    if len(lengths) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    return tuple(operator.index(n) for n in lengths), tuple(normalize_axis_index(a, len(shape)) for a in axes)


_S_WITHOUT_AXES = (  # NumPy 2.0's deprecation, as ``numpy.fft`` words it
    "`axes` should not be `None` if `s` is not `None` (Deprecated in NumPy 2.0). In a future version of NumPy, "
    "this will raise an error and `s[i]` will correspond to the size along the transformed axis specified by "
    "`axes[i]`. To retain current behaviour, pass a sequence [0, ..., k-1] to `axes` for an array of dimension k."
)


def _call(function: str, source: Any, lengths: Any, axes: Any, norm: Any) -> Any:
    """The NumPy transform with the arguments as the user gave them."""
    return getattr(_fft, function)(source, lengths, axes, norm)


def _transform(function: str, a: Any, lengths: Any, axes: Any, norm: Any, out: Any) -> Any:
    numpy_function = getattr(_fft, function)
    if out is not None:
        return _dispatch.fallback_call(f"fft.{function}", numpy_function, (a, lengths, axes, norm), {"out": out})
    source = as_lazy(a)
    lengths, axes, norm = materialize(lengths), materialize(axes), materialize(norm)
    probe = value_probe(source.dtype, source.shape)
    try:
        if function in FFT_ONE_AXIS:
            n, axis = _one_axis(source.shape, function, lengths, axes)
        else:
            n, axis = _many_axes(source.shape, function, lengths, axes)
    except Exception:
        _call(function, probe, lengths, axes, norm)  # NumPy's own error for these arguments
        raise
    one = function in FFT_ONE_AXIS
    short = [min(length, 2) for length in n]  # the dtype does not depend on the lengths; a probe of n[i] points costs the real transform
    dtype = np.asarray(quietly(_call, function, probe, short[0] if one else short, axis[0] if one else axis, norm)).dtype
    if not axis or len(set(axis)) != len(axis):
        return _dispatch.fallback_call(f"fft.{function}", numpy_function, (a, lengths, axes, norm), {})
    shape = list(source.shape)
    for length, position in zip(n, axis):
        shape[position] = length
    if function in _REAL_FORWARD:
        shape[axis[-1]] = n[-1] // 2 + 1
    result = new_array(dtype, tuple(shape))
    attrs = {"function": function, "n": n, "axes": axis, "norm": norm}
    result._base.runtime.record("fft", (result._view,), (source._view,), **attrs)
    return result


def _one_axis_function(function: str) -> Any:
    def transform(a: Any, n: Any = None, axis: int = -1, norm: Any = None, out: Any = None) -> Any:
        return _transform(function, a, n, axis, norm, out)

    transform.__name__ = transform.__qualname__ = function
    transform.__doc__ = f"``np.fft.{function}`` as one lazy engine instruction."
    return transform


def _many_axes_function(function: str) -> Any:
    default_axes = (-2, -1) if function.endswith("2") else None

    def transform(a: Any, s: Any = None, axes: Any = default_axes, norm: Any = None, out: Any = None) -> Any:
        return _transform(function, a, s, axes, norm, out)

    transform.__name__ = transform.__qualname__ = function
    transform.__doc__ = f"``np.fft.{function}`` as one lazy engine instruction."
    return transform


def _register() -> None:
    table = _dispatch.IMPLEMENTATIONS
    for function in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"):
        table[getattr(_fft, function)] = _one_axis_function(function)
    for function in ("fftn", "ifftn", "fft2", "ifft2", "rfftn", "irfftn", "rfft2", "irfft2"):
        table[getattr(_fft, function)] = _many_axes_function(function)
    from shoal.numpy._composed import _ASARRAY, _rebound

    for shift in (_fft.fftshift, _fft.ifftshift):  # NumPy's roll of the array, lazily (its asarray computed it)
        table[shift] = _rebound(shift, asarray=_ASARRAY)


_register()
