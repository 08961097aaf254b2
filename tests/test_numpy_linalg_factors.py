"""``np.linalg.svd`` with its factors and ``np.linalg.qr`` in every mode on lazy arrays: engine
instructions (``linalg``, ``linalg_pair``, ``linalg_triple``) with NumPy's results, dtypes,
result types (``SVDResult``, ``QRResult``, the plain ``(h, tau)`` tuple of "raw"), warnings and
errors (``LinAlgError`` at the call for non-finite input), and no fallback (a
``ShoalFallbackWarning`` fails the test)."""

from __future__ import annotations

import warnings
from types import ModuleType

import numpy as np
import pytest
from bytecode_cases import F8, contiguous
from hypothesis import given
from hypothesis import strategies as st
from numpy_fixtures import DIFFERENTIAL, arrays, check_same, flush_count, needs_runtime

from shoal.bytecode.opcodes import BY_NAME
from shoal.bytecode.shapes import check_shapes

MATRIX_DTYPES = st.sampled_from([np.dtype(n) for n in ("float64", "float32", "complex128", "complex64", "int64", "bool")])
QR_MODES = ["reduced", "complete", "r", "raw"]


def _tolerance(value: np.ndarray) -> float:
    return 1e-3 if value.dtype in (np.float32, np.complex64) else 1e-8


def _matrices(shape: tuple[int, ...]) -> st.SearchStrategy:
    return arrays(MATRIX_DTYPES, st.just(shape), bound=10, finite=True)


matrix_shapes = st.tuples(st.lists(st.integers(1, 3), max_size=2), st.integers(1, 5), st.integers(1, 5)).map(lambda d: (*d[0], d[1], d[2]))


@DIFFERENTIAL
@given(data=st.data(), shape=matrix_shapes, mode=st.sampled_from(QR_MODES))
def test_qr_every_mode(snp: ModuleType, data, shape, mode: str) -> None:
    value = data.draw(_matrices(shape))
    tolerance = _tolerance(value)

    def call(xp, v):
        result = xp.linalg.qr(v, mode)
        expected_type = {"reduced": "QRResult", "complete": "QRResult", "raw": "tuple", "r": "ndarray"}[mode]
        assert type(result).__name__ == expected_type
        return tuple(result) if isinstance(result, tuple) else result

    check_same(snp, call, value, rtol=tolerance, atol=tolerance)


@DIFFERENTIAL
@given(data=st.data(), shape=matrix_shapes, full_matrices=st.booleans())
def test_svd_factors(snp: ModuleType, data, shape, full_matrices: bool) -> None:
    value = data.draw(_matrices(shape))
    tolerance = _tolerance(value)

    def call(xp, v):
        result = xp.linalg.svd(v, full_matrices)
        assert type(result).__name__ == "SVDResult"
        u, s, vh = result
        k = s.shape[-1]
        # singular vectors have free phases: compare magnitudes and the reconstruction
        reconstructed = (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :]
        return np.zeros(tuple(u.shape), u.dtype), np.zeros(tuple(vh.shape), vh.dtype), s, reconstructed

    check_same(snp, call, value, rtol=tolerance, atol=tolerance * 10)


@DIFFERENTIAL
@given(data=st.data(), size=st.integers(1, 4), stack=st.lists(st.integers(1, 2), max_size=1), compute_uv=st.booleans())
def test_hermitian_svd(snp: ModuleType, data, size: int, stack, compute_uv: bool) -> None:
    value = data.draw(arrays(st.sampled_from([np.dtype("float64"), np.dtype("complex128")]), st.just((*stack, size, size)), bound=10, finite=True))
    value = value + np.conj(np.swapaxes(value, -1, -2))

    def call(xp, v):
        result = xp.linalg.svd(v, compute_uv=compute_uv, hermitian=True)
        if not compute_uv:
            return result
        assert type(result).__name__ == "SVDResult"
        u, s, vh = result
        return s, (u * s[..., None, :]) @ vh

    check_same(snp, call, value, rtol=1e-8, atol=1e-8)


def test_exact_factors_match_numpy(snp: ModuleType) -> None:
    """The same LAPACK on the same data: the factors themselves, signs included, are NumPy's."""
    value = np.arange(12.0).reshape(4, 3) ** 1.5
    check_same(snp, lambda xp, v: tuple(xp.linalg.svd(v)), value, rtol=1e-10, atol=1e-10)
    check_same(snp, lambda xp, v: tuple(xp.linalg.svd(v, full_matrices=False)), value, rtol=1e-10, atol=1e-10)
    for mode in ("reduced", "complete", "raw"):
        check_same(snp, lambda xp, v, m=mode: tuple(xp.linalg.qr(v, m)), value, rtol=1e-10, atol=1e-10)
        check_same(snp, lambda xp, v, m=mode: tuple(xp.linalg.qr(v.T, m)), value, rtol=1e-10, atol=1e-10)


NON_FINITE = np.array([[1.0, np.nan], [2.0, 3.0]])


@pytest.mark.parametrize(
    "call",
    [
        lambda xp, v: xp.linalg.svd(v),
        lambda xp, v: xp.linalg.svd(v, full_matrices=False),
        lambda xp, v: xp.linalg.svd(v, compute_uv=False),
        lambda xp, v: xp.linalg.svdvals(v),
        lambda xp, v: xp.linalg.pinv(v),
        lambda xp, v: xp.linalg.svd(v[0]),
        lambda xp, v: xp.linalg.svd(v[0, 0]),
        lambda xp, v: xp.linalg.svd(v.astype(np.float16)),
        lambda xp, v: xp.linalg.svd(v[:, :1], hermitian=True),
        lambda xp, v: xp.linalg.svd(v[:, :1], compute_uv=False, hermitian=True),
        lambda xp, v: xp.linalg.pinv(v[:, :1], hermitian=True),
        lambda xp, v: xp.linalg.qr(v[0]),
        lambda xp, v: xp.linalg.qr(v[0], "raw"),
        lambda xp, v: xp.linalg.qr(v, "sideways"),
        lambda xp, v: xp.linalg.qr(v[0], "sideways"),
        lambda xp, v: xp.linalg.qr(v.astype(np.float16), "complete"),
        lambda xp, v: xp.linalg.qr(v, None),
    ],
)
def test_errors_are_numpys_and_come_from_the_call(snp: ModuleType, call) -> None:
    assert check_same(snp, call, NON_FINITE) is not None


def test_eigenvalues_that_do_not_converge_raise_at_the_call(snp: ModuleType) -> None:
    """``eigvalsh`` of NaNs raises NumPy's ``LinAlgError`` from the call, not at the next read."""
    assert check_same(snp, lambda xp, v: xp.linalg.eigvalsh(v), np.full((60, 60), np.nan)) is not None


def test_nan_passes_through_qr_and_hermitian_svd(snp: ModuleType) -> None:
    """NumPy's qr and the eigh behind ``hermitian=True`` raise nothing on NaN."""
    for mode in QR_MODES:
        check_same(snp, lambda xp, v, m=mode: xp.linalg.qr(v, m), NON_FINITE)
    check_same(snp, lambda xp, v: xp.linalg.svd(v, compute_uv=False, hermitian=True), NON_FINITE)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (2, 0, 0), (0, 2, 2)])
def test_empty_matrices(snp: ModuleType, shape) -> None:
    value = np.zeros(shape)
    check_same(snp, lambda xp, v: tuple(xp.linalg.svd(v)), value)
    check_same(snp, lambda xp, v: tuple(xp.linalg.svd(v, full_matrices=False)), value)
    for mode in QR_MODES:
        check_same(snp, lambda xp, v, m=mode: xp.linalg.qr(v, m), value)


@pytest.mark.parametrize(("mode", "outputs"), [("full", 2), ("f", 2), ("economic", 1), ("e", 1)])
def test_deprecated_qr_modes_warn_at_the_callers_line(snp: ModuleType, mode: str, outputs: int) -> None:
    value = np.arange(6.0).reshape(3, 2) ** 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        expected = np.linalg.qr(value, mode)
        actual = snp.linalg.qr(snp.array(value, copy=True), mode)
    assert [w.category for w in caught] == [DeprecationWarning, DeprecationWarning]
    assert caught[0].message.args == caught[1].message.args
    assert {w.filename for w in caught} == {__file__}
    expected = expected if outputs == 2 else (expected,)
    actual = actual if outputs == 2 else (actual,)
    for left, right in zip(actual, expected):
        assert left.dtype == right.dtype and left.shape == right.shape
        np.testing.assert_allclose(np.asarray(left), right, atol=1e-12)


def test_qr_does_not_flush_and_svd_keeps_data_on_the_engine(snp: ModuleType) -> None:
    needs_runtime()
    import shoal.numpy._lazy as lazy

    matrix = snp.arange(12.0).reshape(4, 3) ** 1.5
    before = flush_count()
    q, r = snp.linalg.qr(matrix, "complete")
    h, tau = snp.linalg.qr(matrix, "raw")
    assert flush_count() == before
    assert lazy.is_lazy(q) and lazy.is_lazy(r) and lazy.is_lazy(h) and lazy.is_lazy(tau)
    u, s, vh = snp.linalg.svd(matrix)
    assert lazy.is_lazy(u) and lazy.is_lazy(s) and lazy.is_lazy(vh)
    np.testing.assert_allclose(np.asarray((u[:, :3] * s) @ vh), np.arange(12.0).reshape(4, 3) ** 1.5, atol=1e-10)


@pytest.mark.parametrize("shape", [(3, 2), (2, 3), (2, 4, 3), (3, 3)])
@pytest.mark.parametrize(
    ("op", "attrs", "numpy_call"),
    [
        ("linalg_pair", {"function": "qr"}, lambda a: np.linalg.qr(a)),
        ("linalg_pair", {"function": "qr", "mode": "complete"}, lambda a: np.linalg.qr(a, "complete")),
        ("linalg_pair", {"function": "qr", "mode": "raw"}, lambda a: np.linalg.qr(a, "raw")),
        ("linalg", {"function": "qr", "mode": "r"}, lambda a: (np.linalg.qr(a, "r"),)),
        ("linalg", {"function": "qr", "mode": "economic"}, lambda a: (np.swapaxes(np.linalg.qr(a, "raw")[0], -1, -2),)),
        ("linalg_triple", {"function": "svd"}, lambda a: np.linalg.svd(a)),
        ("linalg_triple", {"function": "svd", "full_matrices": False}, lambda a: np.linalg.svd(a, full_matrices=False)),
        ("linalg_triple", {"function": "svd", "hermitian": True}, lambda a: np.linalg.svd(a, hermitian=True)),
        ("linalg", {"function": "svdvals", "hermitian": True}, lambda a: (np.linalg.svd(a, compute_uv=False, hermitian=True),)),
    ],
)
def test_verifier_shape_rules_match_numpy(shape, op, attrs, numpy_call) -> None:
    try:
        expected = [result.shape for result in numpy_call(np.ones(shape))]
    except np.linalg.LinAlgError:
        expected = None
    outputs = tuple(contiguous(1 + i, F8, s) for i, s in enumerate(expected or [(1, 1)] * BY_NAME[op].nout))
    source = contiguous(0, F8, shape)
    problem = check_shapes(BY_NAME[op], outputs, (source,), attrs)
    assert (problem is None) == (expected is not None), problem
    if expected is not None and expected[0][-1] > 1:
        wrong = (contiguous(1, F8, (*expected[0][:-1], 1)), *outputs[1:])
        assert check_shapes(BY_NAME[op], wrong, (source,), attrs) is not None


@pytest.mark.parametrize(
    ("op", "attrs"),
    [
        ("linalg_pair", {"function": "qr", "mode": "r"}),
        ("linalg", {"function": "qr"}),
        ("linalg", {"function": "qr", "mode": "raw"}),
        ("linalg_pair", {"function": "eigh", "mode": "raw"}),
        ("linalg_triple", {"function": "qr"}),
        ("linalg_pair", {"function": "svd"}),
    ],
)
def test_verifier_rejects_mismatched_functions_and_modes(op, attrs) -> None:
    source = contiguous(0, F8, (3, 3))
    outputs = tuple(contiguous(1 + i, F8, (3, 3)) for i in range(BY_NAME[op].nout))
    assert check_shapes(BY_NAME[op], outputs, (source,), attrs) is not None


@pytest.mark.parametrize(
    "options",
    [{}, {"rcond": 0.5}, {"rcond": 1e-3}, {"rcond": np.float32(0.2)}, {"rcond": 1}, {"rcond": True}, {"rtol": 0.5}, {"rtol": None}, {"hermitian": True}],
)
def test_pinv_cut_offs(snp: ModuleType, options) -> None:
    value = np.arange(16.0).reshape(4, 4) ** 1.2
    value = value + value.T if options.get("hermitian") else value[:3]
    check_same(snp, lambda xp, v: xp.linalg.pinv(v, **options), value, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize(
    "call",
    [
        lambda xp, v: xp.linalg.pinv(v, rcond=0.1, rtol=0.1),
        lambda xp, v: xp.linalg.pinv(v.astype(np.int64), rtol=None),
        lambda xp, v: xp.linalg.pinv(v[0], rcond=0.1),
    ],
)
def test_pinv_cut_off_errors_are_numpys(snp: ModuleType, call) -> None:
    assert check_same(snp, call, np.arange(12.0).reshape(3, 4)) is not None


def test_a_singular_matrix_error_carries_no_engine_notes(snp: ModuleType) -> None:
    """The ``LinAlgError`` from a batch run at the call is NumPy's alone: no note naming the
    engine's instruction, no chained engine exception (the program's traceback shows neither)."""
    needs_runtime()
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix") as caught:
        snp.linalg.solve(snp.zeros((60, 60)), snp.ones(60))
    assert not getattr(caught.value, "__notes__", None)
    assert caught.value.__context__ is None and caught.value.__cause__ is None
