"""Array API compatibility: the conformance suite (NumPy's passes are Shoal's), and NumPy's
signatures on every public function of ``shoal.numpy``."""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from array_api_compare import SUITE, compare
from numpy_fixtures import AGAINST_NUMPY


def _plain_signature(function: Any) -> str | None:
    """The signature without annotations (NumPy's have none), or None where there is none."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return None
    parameters = [parameter.replace(annotation=inspect.Parameter.empty) for parameter in signature.parameters.values()]
    return str(signature.replace(parameters=parameters, return_annotation=inspect.Signature.empty))


def _own_functions(module: ModuleType, reference: ModuleType, prefix: str) -> Iterator[tuple[str, Any, Any]]:
    names = set(getattr(reference, "__all__", ())) | {n for n in dir(reference) if not n.startswith("_")}
    for name in sorted(names):
        theirs = getattr(reference, name, None)
        ours = getattr(module, name)
        if ours is not theirs and callable(theirs):
            yield prefix + name, ours, theirs


def _namespace() -> Iterator[tuple[str, Any, Any]]:
    import shoal.numpy as snp

    yield from _own_functions(snp, np, "")
    yield from _own_functions(snp.linalg, np.linalg, "linalg.")
    yield from _own_functions(snp.random, np.random, "random.")
    for name in dir(np.ndarray):
        numpy_method = getattr(np.ndarray, name)
        if callable(numpy_method) and (not name.startswith("_") or name in _ARRAY_API_DUNDERS):
            yield f"ndarray.{name}", getattr(snp.ndarray, name, None), numpy_method


_ARRAY_API_DUNDERS = {"__array_namespace__", "__dlpack__", "__dlpack_device__", "__reduce__", "__reduce_ex__"}


@pytest.mark.skipif(AGAINST_NUMPY, reason="walks shoal.numpy itself")
def test_every_public_function_has_numpys_signature() -> None:
    checked, different = 0, []
    for name, ours, theirs in _namespace():
        expected = _plain_signature(theirs)
        if expected is None:
            continue
        checked += 1
        found = None if ours is None else _plain_signature(ours)
        if found != expected:
            different.append(f"{name}: {found} instead of NumPy's {expected}")
    assert not different, "\n".join(different)
    assert checked > 150  # the walk saw the namespace, the linalg and random modules and ndarray


@pytest.mark.skipif(AGAINST_NUMPY, reason="walks shoal.numpy itself")
def test_signature_walk_notices_a_difference(monkeypatch: pytest.MonkeyPatch) -> None:
    import shoal.numpy as snp

    monkeypatch.setattr(snp, "zeros", lambda shape, dtype=float: None)
    assert any(name == "zeros" and _plain_signature(ours) != _plain_signature(theirs) for name, ours, theirs in _namespace())


@pytest.mark.full
@pytest.mark.timeout(900)
@pytest.mark.skipif(not SUITE.is_dir(), reason=f"the Array API suite is not at {SUITE}")
def test_array_api_suite_passes_where_numpy_does() -> None:
    # NumPy runs only what Shoal did not pass. At 25 examples a test NumPy's draws and Shoal's
    # part ways (NumPy passed test_argsort, not drawing an input its unstable sort fails on).
    comparison = compare(max_examples=50, numpy_everywhere=False)
    print(comparison.summary())
    assert comparison.passed(comparison.shoal) > 1000  # the suite really ran
    assert not comparison.differences, "\n".join(comparison.differences)


def test_arange_accepts_numpys_argument_forms(snp_any: ModuleType) -> None:
    from numpy_fixtures import check_same

    for args, kwargs in [((5, None), {}), ((2, 9, None), {}), ((), {"stop": 5}), ((), {"start": 1, "stop": 4}),
                         ((3,), {"step": 2}), ((), {"start": 3}), ((), {}), ((1.5, 4), {"dtype": np.float32})]:  # fmt: skip
        check_same(snp_any, lambda xp, a=args, k=kwargs: xp.arange(*a, **k))


@pytest.mark.skipif(AGAINST_NUMPY, reason="checks lazy arrays")
def test_lazy_arrays_speak_the_array_api(snp: ModuleType) -> None:
    lazy = snp.arange(12.0).reshape(3, 4)
    assert type(lazy) is snp.ndarray and type(lazy) is not np.ndarray
    assert lazy.__array_namespace__() is snp
    assert lazy.__array_namespace__(api_version="2024.12") is snp
    with pytest.raises(ValueError):
        lazy.__array_namespace__(api_version="1999.01")
    assert lazy.device == "cpu" and lazy.to_device("cpu") is lazy
    assert lazy.__dlpack_device__() == (1, 0)
    np.testing.assert_array_equal(np.from_dlpack(lazy), np.arange(12.0).reshape(3, 4), strict=True)
    np.testing.assert_array_equal(lazy.mT, np.arange(12.0).reshape(3, 4).mT, strict=True)


@pytest.mark.skipif(AGAINST_NUMPY, reason="checks lazy arrays")
def test_named_tuple_results_keep_their_types(snp: ModuleType) -> None:
    matrix = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
    lazy = snp.asarray(matrix)
    values = snp.asarray(np.array([3, 1, 3, 2, 1, 3]))
    for name, call, reference in [
        ("linalg.eigh", lambda: snp.linalg.eigh(lazy), np.linalg.eigh(matrix)),
        ("linalg.qr", lambda: snp.linalg.qr(lazy), np.linalg.qr(matrix)),
        ("linalg.slogdet", lambda: snp.linalg.slogdet(lazy), np.linalg.slogdet(matrix)),
        ("linalg.svd", lambda: snp.linalg.svd(lazy), np.linalg.svd(matrix)),
        ("unique_all", lambda: snp.unique_all(values), np.unique_all(np.asarray(values))),
        ("unique_counts", lambda: snp.unique_counts(values), np.unique_counts(np.asarray(values))),
        ("unique_inverse", lambda: snp.unique_inverse(values), np.unique_inverse(np.asarray(values))),
    ]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", snp.ShoalFallbackWarning)  # these run in NumPy
            result = call()
        assert type(result) is type(reference), name
        assert result._fields == reference._fields
        for got, expected in zip(result, reference):
            np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-12)

