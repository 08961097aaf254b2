"""``np.linalg`` on lazy arrays: each function is one ``linalg`` (``linalg_pair``,
``linalg_triple`` for two or three results) instruction that the engine runs with LAPACK over
whole views.

Shapes are worked out here (the same rules as the verifier's), dtypes by running NumPy on a
probe, and a malformed call raises NumPy's error at once (NumPy runs on zeros of the real shapes
to produce it). The functions that NumPy lets raise ``LinAlgError`` on the values run the batch at
the call (the data stays on the engine), so that error comes from the user's line: ``inv``,
``solve`` and ``cholesky`` (singular or indefinite matrices) and the SVD-based ``svd``, ``svdvals``
and ``pinv`` (non-finite input: "SVD did not converge"; not with ``hermitian=True``, which runs
``eigh``). ``det``, ``slogdet``, ``eigvalsh``, ``eigh`` and ``qr`` (every mode) never raise on
values and do not flush.
"""

from __future__ import annotations

import math
import re
import warnings
from typing import Any

import numpy as np
from numpy.linalg import _linalg as _numpy_linalg

from shoal.engine.component import EngineError
from shoal.numpy import _dispatch
from shoal.numpy._lazy import is_lazy
from shoal.numpy._numpy_data import as_lazy, materialize, new_array

_RAISES_ON_VALUES = frozenset({"inv", "solve", "cholesky", "eigvalsh", "eigh"})  # eigh: no convergence on NaN
_SVD_BASED = frozenset({"svd", "svdvals", "pinv"})  # raise on non-finite values unless hermitian
_NAMED = {
    "eigh": _numpy_linalg.EighResult,
    "slogdet": _numpy_linalg.SlogdetResult,
    "qr": _numpy_linalg.QRResult,
    "svd": _numpy_linalg.SVDResult,
}
_OPS = {1: "linalg", 2: "linalg_pair", 3: "linalg_triple"}


def _out_shapes(function: str, shapes: list[tuple[int, ...]], attrs: dict[str, Any]) -> list[tuple[int, ...]] | None:
    """The output shapes NumPy gives, or None where NumPy raises."""
    source = shapes[0]
    if len(source) < 2:
        return None
    stack, rows, columns = source[:-2], source[-2], source[-1]
    square = ("det", "slogdet", "inv", "cholesky", "eigvalsh", "eigh", "solve")
    if (function in square or (function in _SVD_BASED and attrs.get("hermitian"))) and rows != columns:
        return None
    if function == "solve":
        other = shapes[1]
        if len(other) == 1:
            return [(*stack, rows)] if other[0] == rows else None
        if other[-2] != rows:
            return None
        try:
            batch = np.broadcast_shapes(stack, other[:-2])
        except ValueError:
            return None
        return [(*batch, rows, other[-1])]
    k = min(rows, columns)
    full = attrs.get("full_matrices", True)
    return {
        "det": [stack],
        "slogdet": [stack, stack],
        "inv": [source],
        "cholesky": [source],
        "pinv": [(*stack, columns, rows)],
        "eigvalsh": [(*stack, rows)],
        "eigh": [(*stack, rows), source],
        "svdvals": [(*stack, k)],
        "svd": [(*stack, rows, rows if full else k), (*stack, k), (*stack, columns if full else k, columns)],
        "qr": {
            "reduced": [(*stack, rows, k), (*stack, k, columns)],
            "complete": [(*stack, rows, rows), (*stack, rows, columns)],
            "raw": [(*stack, columns, rows), (*stack, k)],
            "r": [(*stack, k, columns)],
            "economic": [source],
        }[attrs.get("mode", "reduced")],
    }[function]


def _probe(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A small stand-in with the same core squareness: an identity-like stack of 1x1 matrices."""
    if len(shape) < 2:
        return np.ones(tuple(min(n, 1) for n in shape), dtype)
    return np.ones((*(min(n, 1) for n in shape[:-2]), 1, 1), dtype)


def _run(function: str, numpy_function: Any, args: list[Any], options: dict[str, Any], attrs: dict[str, Any]) -> Any:
    arrays = [as_lazy(value) for value in args]
    shapes = [array.shape for array in arrays]
    expected = _out_shapes(function, shapes, attrs)
    if expected is None:  # NumPy's error, from zeros of the real shapes
        numpy_function(*(np.zeros(shape, array.dtype) for shape, array in zip(shapes, arrays)), **options)
        return _dispatch.fallback_call(f"linalg.{function}", numpy_function, tuple(args), options)
    if any(math.prod(shape) == 0 for shape in shapes):  # NumPy's empty results (rare: computed here)
        return _dispatch._wrap_all(numpy_function(*(materialize(array) for array in arrays), **options))
    with np.errstate(all="ignore"):
        probe = numpy_function(*(_probe(array.shape, array.dtype) for array in arrays), **options)
    probes = probe if isinstance(probe, tuple) else (probe,)
    dtypes = [np.asarray(value).dtype for value in probes]
    outputs = [new_array(dtype, shape) for dtype, shape in zip(dtypes, expected)]
    runtime = arrays[0]._base.runtime
    runtime.record(_OPS[len(outputs)], tuple(out._view for out in outputs), tuple(array._view for array in arrays), function=function, **attrs)
    if function in _RAISES_ON_VALUES or (function in _SVD_BASED and not attrs.get("hermitian")):
        _flush_for_errors(runtime)
    results = [out[()] if not out.shape else out for out in outputs]
    if len(results) == 1:
        return results[0]
    named = _NAMED.get(function)
    return named(*results) if named is not None and attrs.get("mode") != "raw" else tuple(results)


def _flush_for_errors(runtime: Any) -> None:
    """Run the batch now; a ``LinAlgError`` from the engine (under any component that wraps
    failures in ``EngineError``) is raised as NumPy raises it: without the engine's frames and
    notes, and outside the handler, so that an exception the program is handling stays its
    context."""
    failure = _linalg_failure(runtime)
    if failure is not None:
        raise np.linalg.LinAlgError(*failure)


def _linalg_failure(runtime: Any) -> tuple[Any, ...] | None:
    """Flush; the arguments of the ``LinAlgError`` the engine met, or None."""
    try:
        runtime.flush(wait=True)
    except np.linalg.LinAlgError as error:  # NumPy's own error, raised in the engine
        return error.args
    except EngineError as error:
        cause: BaseException | None = error
        while cause is not None and not isinstance(cause, np.linalg.LinAlgError):
            cause = cause.__cause__
        if cause is not None:
            return cause.args
        told = _LINALG_ERROR_TOLD.search(str(error))  # from another process (a server, a rank): as text
        if told is None:
            raise
        return (told.group(1),)
    return None


_LINALG_ERROR_TOLD = re.compile(r"LinAlgError: (.+?)(?: \(in instruction \d+|\n|$)")


def det(a: Any) -> Any:
    """``np.linalg.det``."""
    return _run("det", np.linalg.det, [a], {}, {})


def slogdet(a: Any) -> Any:
    """``np.linalg.slogdet``."""
    return _run("slogdet", np.linalg.slogdet, [a], {}, {})


def inv(a: Any) -> Any:
    """``np.linalg.inv``; a singular matrix raises ``LinAlgError`` here."""
    return _run("inv", np.linalg.inv, [a], {}, {})


def solve(a: Any, b: Any) -> Any:
    """``np.linalg.solve``; a singular matrix raises ``LinAlgError`` here."""
    return _run("solve", np.linalg.solve, [a, b], {}, {})


def cholesky(a: Any, /, *, upper: bool = False) -> Any:
    """``np.linalg.cholesky``; a matrix that is not positive definite raises ``LinAlgError`` here."""
    return _run("cholesky", np.linalg.cholesky, [a], {"upper": upper}, {"upper": bool(upper)})


def eigvalsh(a: Any, UPLO: str = "L") -> Any:
    """``np.linalg.eigvalsh``."""
    return _run("eigvalsh", np.linalg.eigvalsh, [a], {"UPLO": UPLO}, {"uplo": UPLO})


def eigh(a: Any, UPLO: str = "L") -> Any:
    """``np.linalg.eigh``: ``EighResult(eigenvalues, eigenvectors)``."""
    return _run("eigh", np.linalg.eigh, [a], {"UPLO": UPLO}, {"uplo": UPLO})


def svdvals(x: Any, /) -> Any:
    """``np.linalg.svdvals``."""
    return _run("svdvals", np.linalg.svdvals, [x], {}, {})


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False) -> Any:
    """``np.linalg.svd``: ``SVDResult(U, S, Vh)``, or the singular values (``compute_uv=False``);
    non-finite input raises ``LinAlgError`` here."""
    if not compute_uv:
        if hermitian:
            options = {"compute_uv": False, "hermitian": True}
            return _run("svdvals", np.linalg.svd, [a], options, {"hermitian": True})
        return _run("svdvals", np.linalg.svdvals, [a], {}, {})
    options = {"full_matrices": full_matrices, "hermitian": hermitian}
    return _run("svd", np.linalg.svd, [a], options, {"full_matrices": bool(full_matrices), "hermitian": bool(hermitian)})


def qr(a: Any, mode: str = "reduced") -> Any:
    """``np.linalg.qr``: ``QRResult(Q, R)`` (modes "reduced", "complete"), ``R`` ("r") or the
    plain tuple ``(h, tau)`` ("raw"); the deprecated "full" and "economic" warn as NumPy does."""
    if mode in ("f", "full"):
        warnings.warn(_FULL_DEPRECATED, DeprecationWarning, stacklevel=_dispatch.caller_stacklevel())
        mode = "reduced"
    elif mode in ("e", "economic"):
        warnings.warn("The 'economic' option is deprecated.", DeprecationWarning, stacklevel=_dispatch.caller_stacklevel())
        return _run("qr", _economic, [a], {}, {"mode": "economic"})
    elif mode not in ("reduced", "complete", "r", "raw"):
        raise ValueError(f"Unrecognized mode '{mode}'")
    return _run("qr", np.linalg.qr, [a], {"mode": mode}, {} if mode == "reduced" else {"mode": mode})


_FULL_DEPRECATED = "The 'full' option is deprecated in favor of 'reduced'.\nFor backward compatibility let mode default."


def _economic(a: Any) -> Any:
    """``qr(a, mode="economic")`` without its deprecation warning (given once, at the call)."""
    return np.swapaxes(np.linalg.qr(a, mode="raw")[0], -1, -2)


def pinv(a: Any, rcond: Any = None, hermitian: bool = False, *, rtol: Any = np._NoValue) -> Any:
    """``np.linalg.pinv``; a cut-off that is one number (``rcond``, or ``rtol`` in its place) is
    an attribute of the instruction, an array of cut-offs goes through the fallback."""
    options = {"hermitian": hermitian, "rcond": materialize(rcond)}
    if rtol is not np._NoValue:
        options["rtol"] = materialize(rtol)
    cutoff = options["rcond"]
    if cutoff is None and rtol is not np._NoValue:
        cutoff = options["rtol"]
        if cutoff is None:  # NumPy's default for rtol=None (its error for an exact dtype)
            dtype = a.dtype if is_lazy(a) else np.asarray(a).dtype
            shape = a.shape if is_lazy(a) else np.shape(a)
            cutoff = max(shape[-2:], default=0) * np.finfo(dtype).eps if dtype.kind in "fc" and len(shape) >= 2 else None
    attrs: dict[str, Any] = {"hermitian": bool(hermitian)}
    if cutoff is not None:
        if not isinstance(cutoff, int | float | np.integer | np.floating):
            return _dispatch.fallback_call("linalg.pinv", np.linalg.pinv, (a,), options)
        attrs["rcond"] = float(cutoff)
    if rcond is None and rtol is np._NoValue:
        options.pop("rcond")
    return _run("pinv", np.linalg.pinv, [a], options, attrs)


def _register() -> None:
    table = _dispatch.IMPLEMENTATIONS
    for function in (det, slogdet, inv, solve, cholesky, eigvalsh, eigh, svdvals, svd, qr, pinv):
        table[getattr(np.linalg, function.__name__)] = function


_register()
