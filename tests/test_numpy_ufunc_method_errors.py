"""Error parity of the ufunc methods on lazy arrays: ``reduce``, ``accumulate``, ``reduceat``,
``outer`` and ``at`` with adversarial arguments (axes that are not one axis, ``None`` on 2-D input,
0-d input, dtypes NumPy refuses or that the engine cannot hold, ``out=`` of the wrong shape, dtype
or kind), each against NumPy: the same result (``out`` included) or the same exception type
from the call. ``ufunc.at`` must change a lazy target as NumPy changes an array."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from numpy_fixtures import check_same, needs_runtime

from shoal.numpy import ShoalFallbackWarning

UFUNCS = ["add", "multiply", "maximum", "subtract", "logical_and", "divide"]
AXES = [None, 0, 1, -1, 2, -3, (0,), (-1,), (0, 1), (), 1.5, True]
DTYPES = ["int8", "bool", "float32", "complex128", "S3", "M8[s]", "bogus"]
OUTS = [((3, 4), "float64"), ((4, 3), "float64"), ((4,), "float64"), ((3, 4), "int64"), ((1, 4), "float64"), ((3, 4), "float32"), ((2,), "float64"), ((3, 2), "complex128")]


def _method_calls() -> dict[str, Callable[..., Any]]:
    calls: dict[str, Callable[..., Any]] = {}
    for name in UFUNCS:
        for axis in AXES:
            calls[f"{name}.accumulate-axis={axis!r}"] = lambda xp, v, n=name, a=axis: getattr(xp, n).accumulate(v, axis=a)
            calls[f"{name}.reduce-axis={axis!r}"] = lambda xp, v, n=name, a=axis: getattr(xp, n).reduce(v, axis=a)
            calls[f"{name}.reduceat-axis={axis!r}"] = lambda xp, v, n=name, a=axis: getattr(xp, n).reduceat(v, [0, 2], axis=a)
        for dtype in DTYPES:
            calls[f"{name}.accumulate-dtype={dtype}"] = lambda xp, v, n=name, d=dtype: getattr(xp, n).accumulate(v, dtype=d)
            calls[f"{name}.reduce-dtype={dtype}"] = lambda xp, v, n=name, d=dtype: getattr(xp, n).reduce(v, dtype=d)
            calls[f"{name}.reduceat-dtype={dtype}"] = lambda xp, v, n=name, d=dtype: getattr(xp, n).reduceat(v, [0, 2], axis=1, dtype=d)
        for shape, dtype in OUTS:
            for method in ("accumulate", "reduce", "reduceat", "outer"):
                calls[f"{name}.{method}-out={shape}{dtype}"] = lambda xp, v, n=name, m=method, s=shape, d=dtype: _with_out(xp, v, n, m, s, d)
        calls[f"{name}.accumulate-0d"] = lambda xp, v, n=name: getattr(xp, n).accumulate(v[0, 0])
        calls[f"{name}.accumulate-1d-None"] = lambda xp, v, n=name: getattr(xp, n).accumulate(v[0], axis=None)
        calls[f"{name}.accumulate-out-tuple"] = lambda xp, v, n=name: _with_tuple_out(xp, v, n, 1)
        calls[f"{name}.accumulate-out-tuple-of-two"] = lambda xp, v, n=name: _with_tuple_out(xp, v, n, 2)
        calls[f"{name}.accumulate-out-list"] = lambda xp, v, n=name: getattr(xp, n).accumulate(v, out=[1.0])
        calls[f"{name}.accumulate-keepdims"] = lambda xp, v, n=name: getattr(xp, n).accumulate(v, keepdims=True)
        calls[f"{name}.reduce-0d"] = lambda xp, v, n=name: getattr(xp, n).reduce(v[0, 0])
        calls[f"{name}.reduce-empty"] = lambda xp, v, n=name: getattr(xp, n).reduce(v[:0], axis=0)
        calls[f"{name}.reduce-initial-where"] = lambda xp, v, n=name: getattr(xp, n).reduce(v, axis=1, where=v > 3, initial=1)
        calls[f"{name}.reduceat-0d"] = lambda xp, v, n=name: getattr(xp, n).reduceat(v[0, 0], [0])
        calls[f"{name}.reduceat-0d-axis-5"] = lambda xp, v, n=name: getattr(xp, n).reduceat(v[0, 0], [0], axis=5)
        calls[f"{name}.reduceat-out-of-range"] = lambda xp, v, n=name: getattr(xp, n).reduceat(v, [0, 7])
        calls[f"{name}.reduceat-float-indices"] = lambda xp, v, n=name: getattr(xp, n).reduceat(v, [0.5])
        calls[f"{name}.reduceat-2d-indices"] = lambda xp, v, n=name: getattr(xp, n).reduceat(v, [[0]])
        calls[f"{name}.reduceat-no-indices"] = lambda xp, v, n=name: getattr(xp, n).reduceat(v, [])
        calls[f"{name}.outer"] = lambda xp, v, n=name: getattr(xp, n).outer(v, v[0])
        calls[f"{name}.outer-scalars"] = lambda xp, v, n=name: getattr(xp, n).outer(2, 3)
        calls[f"{name}.outer-dtype"] = lambda xp, v, n=name: getattr(xp, n).outer(v[0], v[:, 0], dtype="int8")
        calls[f"{name}.outer-three"] = lambda xp, v, n=name: getattr(xp, n).outer(v[0], v[0], v[0])
        calls[f"{name}.at"] = lambda xp, v, n=name: (getattr(xp, n).at(v, ([0, 0, 1], [1, 1, 2]), 2.0), v)[1]
        calls[f"{name}.at-out-of-range"] = lambda xp, v, n=name: getattr(xp, n).at(v, [5], 1.0)
        calls[f"{name}.at-no-values"] = lambda xp, v, n=name: getattr(xp, n).at(v, [0])
        calls[f"{name}.at-mismatched-values"] = lambda xp, v, n=name: getattr(xp, n).at(v, [0, 1], [1.0, 2.0, 3.0])
    for name in ("negative", "sin", "divmod", "isnan"):
        for method in ("reduce", "accumulate", "reduceat", "outer", "at"):
            calls[f"{name}.{method}"] = lambda xp, v, n=name, m=method: _unary_or_two_outputs(xp, v, n, m)
    return calls


def _with_out(xp: Any, value: Any, name: str, method: str, shape: tuple[int, ...], dtype: str) -> Any:
    out = xp.zeros(shape, dtype)
    ufunc = getattr(xp, name)
    if method == "outer":
        result = ufunc.outer(value[:, 0], value[0], out=out)
    elif method == "reduceat":
        result = ufunc.reduceat(value, [0, 2], axis=1, out=out)
    else:
        result = getattr(ufunc, method)(value, out=out)
    assert result is out
    return out


def _with_tuple_out(xp: Any, value: Any, name: str, count: int) -> Any:
    outs = tuple(xp.zeros((3, 4)) for _ in range(count))
    result = getattr(xp, name).accumulate(value, out=outs)
    assert result is outs[0]
    return result


def _unary_or_two_outputs(xp: Any, value: Any, name: str, method: str) -> Any:
    ufunc = getattr(xp, name)
    if method == "at":
        ufunc.at(value, [0])
        return value
    if method == "reduceat":
        return ufunc.reduceat(value, [0])
    if method == "outer":
        return ufunc.outer(value, value)
    return getattr(ufunc, method)(value)


CALLS = _method_calls()
# NumPy computes these (an object result, where= and initial=, ufunc.at's unbuffered repeats) on
# the data; everything else runs on the engine.
THROUGH_NUMPY = ("dtype=object", "initial-where", ".at")


# every call on floats; those with dtype= or out= on integers too (other casts and loops)
CASES = [(name, False) for name in CALLS] + [(name, True) for name in CALLS if "dtype" in name or "out" in name]


@pytest.mark.parametrize(("name", "integers"), CASES, ids=[f"{name}-{'int' if integers else 'float'}" for name, integers in CASES])
def test_method_matches_numpy(snp: ModuleType, name: str, integers: bool) -> None:
    value = np.arange(12).reshape(3, 4) if integers else np.arange(12.0).reshape(3, 4) / 4
    with warnings.catch_warnings():
        if any(part in name for part in THROUGH_NUMPY):
            warnings.simplefilter("ignore", ShoalFallbackWarning)
        check_same(snp, CALLS[name], value)


@pytest.mark.parametrize("method", ["accumulate", "reduceat", "reduce"])
def test_object_dtype_is_numpys(snp: ModuleType, method: str) -> None:
    """An ``object`` result cannot live on the engine: NumPy computes it, and the runtime goes on."""
    needs_runtime()
    value = snp.arange(12.0).reshape(3, 4)
    call = {"accumulate": lambda u, v: u.accumulate(v, dtype=object), "reduceat": lambda u, v: u.reduceat(v, [0, 2], dtype=object), "reduce": lambda u, v: u.reduce(v, dtype=object)}[method]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ShoalFallbackWarning)  # given once per process
        result = call(np.add, value)
    expected = call(np.add, np.arange(12.0).reshape(3, 4))
    assert type(result) is np.ndarray and result.dtype == object
    np.testing.assert_array_equal(result, expected)
    np.testing.assert_array_equal(np.asarray(value + 1), np.arange(12.0).reshape(3, 4) + 1)


def test_at_changes_a_lazy_view_and_a_numpy_target(snp: ModuleType) -> None:
    needs_runtime()
    expected = np.zeros((3, 4))
    np.add.at(expected[1:], (np.array([0, 0, 1]), np.array([2, 2, 3])), 1.5)
    base = snp.zeros((3, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ShoalFallbackWarning)
        np.add.at(base[1:], (snp.array([0, 0, 1]), np.array([2, 2, 3])), 1.5)
        target = np.zeros((3, 4))
        np.add.at(target[1:], (snp.array([0, 0, 1]), snp.array([2, 2, 3])), 1.5)
    np.testing.assert_array_equal(np.asarray(base), expected)
    np.testing.assert_array_equal(target, expected)


def test_accumulate_with_out_stays_lazy(snp: ModuleType) -> None:
    needs_runtime()
    value = snp.arange(12.0).reshape(3, 4) / 2
    out = snp.zeros((3, 4), np.int64)
    assert np.maximum.accumulate(value, axis=1, out=out) is out
    assert np.add.accumulate(value, out=(out,)) is out
    assert isinstance(out, snp.ndarray)
    np.testing.assert_array_equal(np.asarray(out), np.add.accumulate(np.arange(12.0).reshape(3, 4) / 2).astype(np.int64))
