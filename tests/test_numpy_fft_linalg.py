"""``np.fft`` and ``np.linalg`` on lazy arrays: engine instructions with NumPy's results, dtypes,
named tuples and errors (``LinAlgError`` at the call for singular matrices), no fallback (a
``ShoalFallbackWarning`` fails the test) and no flush for the transforms."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy_fixtures import DIFFERENTIAL, arrays, check_same, flush_count, needs_runtime

FFT_DTYPES = st.sampled_from([np.dtype(n) for n in ("int16", "float32", "float64", "complex64", "complex128")])
fft_inputs = arrays(FFT_DTYPES, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6), bound=50)
ONE_AXIS = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
MANY_AXES = ["fftn", "ifftn", "fft2", "ifft2", "rfftn", "irfftn", "rfft2", "irfft2"]


def _tolerance(value: np.ndarray) -> float:
    return 1e-4 if value.dtype in (np.float32, np.complex64, np.int16) else 1e-9


@DIFFERENTIAL
@given(value=fft_inputs, name=st.sampled_from(ONE_AXIS), n=st.none() | st.integers(1, 8), axis=st.integers(-3, 2), norm=st.sampled_from([None, "ortho", "forward", "backward"]))
def test_one_axis_transforms(snp: ModuleType, value: np.ndarray, name: str, n, axis: int, norm) -> None:
    if name in ("rfft", "ihfft") and value.dtype.kind == "c":
        return  # NumPy discards the imaginary part with a ComplexWarning on both sides
    tolerance = _tolerance(value)
    check_same(snp, lambda xp, v: getattr(xp.fft, name)(v, n, axis, norm), value, rtol=tolerance, atol=tolerance * 10)


@DIFFERENTIAL
@given(value=fft_inputs, name=st.sampled_from(MANY_AXES), data=st.data())
def test_many_axes_transforms(snp: ModuleType, value: np.ndarray, name: str, data) -> None:
    if name.startswith("rfft") and value.dtype.kind == "c":
        return
    axes = data.draw(st.none() | st.lists(st.integers(-value.ndim, value.ndim - 1), min_size=1, max_size=value.ndim, unique_by=lambda a: a % value.ndim).map(tuple))
    lengths = None if axes is None else data.draw(st.none() | st.lists(st.integers(1, 7), min_size=len(axes), max_size=len(axes)).map(tuple))
    tolerance = _tolerance(value)
    if lengths is None:
        check_same(snp, lambda xp, v: getattr(xp.fft, name)(v, axes=axes), value, rtol=tolerance, atol=tolerance * 10)
    else:
        check_same(snp, lambda xp, v: getattr(xp.fft, name)(v, lengths, axes), value, rtol=tolerance, atol=tolerance * 10)


@pytest.mark.parametrize(
    "call",
    [
        lambda xp, v: xp.fft.fft(v, 0),
        lambda xp, v: xp.fft.fft(v, axis=2),
        lambda xp, v: xp.fft.fft(v, norm="sideways"),
        lambda xp, v: xp.fft.irfft(v[:, :1]),
        lambda xp, v: xp.fft.fftn(v, (2, 3), axes=(0,)),
        lambda xp, v: xp.fft.fft2(v[0]),
    ],
)
def test_fft_errors_are_numpys(snp: ModuleType, call) -> None:
    assert check_same(snp, call, np.arange(12.0).reshape(3, 4)) is not None


def test_transforms_neither_flush_nor_read(snp: ModuleType) -> None:
    needs_runtime()
    signal = snp.sin(snp.arange(64.0))
    before = flush_count()
    spectrum = snp.fft.rfft(signal * 2)
    back = snp.fft.irfft(spectrum, 64)
    assert flush_count() == before
    np.testing.assert_allclose(np.asarray(back), 2 * np.sin(np.arange(64.0)), atol=1e-12)


@pytest.mark.parametrize(("name", "lengths"), [("rfft", 100_000), ("irfft", 100_000), ("fft2", (400, 300)), ("irfftn", (400, 300))])
def test_recording_a_transform_runs_no_transform_of_its_size(snp: ModuleType, monkeypatch: pytest.MonkeyPatch, name: str, lengths) -> None:
    """The result dtype comes from a probe of at most two points an axis: a probe of the asked
    lengths ran the whole transform at the call, then the engine ran it again (an FFT
    convolution loop at 2^20 points took twice NumPy's time)."""
    needs_runtime()
    from shoal.numpy import _spectral

    called = []
    real_call = _spectral._call
    monkeypatch.setattr(_spectral, "_call", lambda function, source, n, axes, norm: called.append(n) or real_call(function, source, n, axes, norm))
    many = isinstance(lengths, tuple)
    signal = snp.sin(snp.arange(64.0)).reshape(8, 8) if many else snp.sin(snp.arange(64.0))
    options = {"axes": (0, 1)} if many else {}
    before = flush_count()
    result = getattr(snp.fft, name)(signal, lengths, **options)
    assert flush_count() == before and called
    assert all(max(np.atleast_1d(n)) <= 2 for n in called)
    expected = getattr(np.fft, name)(np.asarray(signal), lengths, **options)
    assert result.shape == expected.shape and result.dtype == expected.dtype
    np.testing.assert_allclose(np.asarray(result), expected, atol=1e-9)


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
@pytest.mark.parametrize("axes", [None, 1, (0,), (-1, 0)])
def test_shifts_are_lazy_rolls(snp: ModuleType, name: str, axes) -> None:
    """``fftshift``/``ifftshift``: NumPy's roll, recorded (they went through the fallback)."""
    from shoal.numpy import _dispatch

    before = sum(_dispatch.FALLBACKS.values())
    check_same(snp, lambda xp, v: getattr(xp.fft, name)(v[::-1], axes), np.arange(35.0).reshape(5, 7))
    assert sum(_dispatch.FALLBACKS.values()) == before


def _matrices(draw_shape: tuple[int, ...]) -> st.SearchStrategy:
    return arrays(st.sampled_from([np.dtype("float64"), np.dtype("complex128"), np.dtype("float32")]), st.just(draw_shape), bound=10, finite=True)


square_stacks = st.tuples(st.lists(st.integers(1, 3), max_size=2), st.integers(1, 4)).map(lambda d: (*d[0], d[1], d[1]))


def _well_conditioned(value: np.ndarray) -> np.ndarray:
    size = value.shape[-1]
    return value + (4 * size * 10) * np.eye(size, dtype=value.dtype)


@DIFFERENTIAL
@given(data=st.data(), shape=square_stacks, name=st.sampled_from(["det", "slogdet", "inv", "eigvalsh", "eigh", "cholesky"]))
def test_square_functions(snp: ModuleType, data, shape, name: str) -> None:
    value = _well_conditioned(data.draw(_matrices(shape)))
    if name in ("eigvalsh", "eigh", "cholesky"):
        value = value @ np.conj(np.swapaxes(value, -1, -2))
    tolerance = 1e-3 if value.dtype == np.float32 else 1e-8

    def call(xp, v):
        result = getattr(xp.linalg, name)(v)
        if name == "eigh":  # eigenvectors have free signs: compare what they reconstruct
            values, vectors = result
            assert type(result).__name__ == "EighResult"
            return values, np.asarray(vectors * values[..., None, :]) @ np.conj(np.swapaxes(np.asarray(vectors), -1, -2))
        if name == "slogdet":
            assert type(result).__name__ == "SlogdetResult"
        return result

    check_same(snp, call, value, rtol=tolerance, atol=tolerance)


@DIFFERENTIAL
@given(data=st.data(), rows=st.integers(1, 5), columns=st.integers(1, 5), stack=st.lists(st.integers(1, 2), max_size=1))
def test_rectangular_functions(snp: ModuleType, data, rows: int, columns: int, stack) -> None:
    value = data.draw(_matrices((*stack, rows, columns)))
    tolerance = 1e-3 if value.dtype == np.float32 else 1e-8
    check_same(snp, lambda xp, v: xp.linalg.svdvals(v), value, rtol=tolerance, atol=tolerance)
    check_same(snp, lambda xp, v: xp.linalg.svd(v, compute_uv=False), value, rtol=tolerance, atol=tolerance)
    check_same(snp, lambda xp, v: xp.linalg.pinv(v) @ v @ xp.linalg.pinv(v), value, rtol=1e-2, atol=1e-2)

    def reconstructed(xp, v):
        q, r = xp.linalg.qr(v)
        assert type(xp.linalg.qr(v)).__name__ == "QRResult"
        return q @ r

    check_same(snp, reconstructed, value, rtol=tolerance, atol=tolerance)


@DIFFERENTIAL
@given(data=st.data(), size=st.integers(1, 4), right=st.sampled_from(["vector", "matrix", "stack"]))
def test_solve(snp: ModuleType, data, size: int, right: str) -> None:
    matrix = _well_conditioned(data.draw(_matrices((size, size))))
    shape = {"vector": (size,), "matrix": (size, 2), "stack": (3, size, 1)}[right]
    values = data.draw(_matrices(shape))
    tolerance = 1e-3 if np.float32 in (matrix.dtype, values.dtype) else 1e-8
    check_same(snp, lambda xp, a, b: xp.linalg.solve(a, b), matrix, values, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize(
    "call",
    [
        lambda xp, v: xp.linalg.inv(v),
        lambda xp, v: xp.linalg.solve(v, v[0]),
        lambda xp, v: xp.linalg.cholesky(v),
        lambda xp, v: xp.linalg.inv(v[:, :2]),
        lambda xp, v: xp.linalg.det(v[0]),
        lambda xp, v: xp.linalg.solve(v, v[:2]),
        lambda xp, v: xp.linalg.eigh(v.astype(np.float16)),
    ],
)
def test_linalg_errors_are_numpys_and_come_from_the_call(snp: ModuleType, call) -> None:
    singular = np.arange(9.0).reshape(3, 3)
    assert check_same(snp, call, singular) is not None


def test_a_singular_matrix_raises_at_the_call_and_later_work_runs(snp: ModuleType) -> None:
    needs_runtime()
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        snp.linalg.inv(snp.zeros((3, 3)))
    np.testing.assert_array_equal(np.asarray(snp.linalg.inv(snp.eye(3) * 2)), np.eye(3) / 2)


def test_determinants_do_not_flush(snp: ModuleType) -> None:
    """``det`` stays lazy; ``eigvalsh`` runs at the call, where its ``LinAlgError`` (eigenvalues
    that do not converge) must come from."""
    needs_runtime()
    matrices = snp.arange(8.0).reshape(2, 2, 2) + snp.eye(2)
    before = flush_count()
    determinants = snp.linalg.det(matrices)
    assert flush_count() == before
    eigenvalues = snp.linalg.eigvalsh(matrices + matrices.mT)
    assert flush_count() == before + 1
    expected = np.arange(8.0).reshape(2, 2, 2) + np.eye(2)
    np.testing.assert_allclose(np.asarray(determinants), np.linalg.det(expected))
    np.testing.assert_allclose(np.asarray(eigenvalues), np.linalg.eigvalsh(expected + np.swapaxes(expected, -1, -2)))


@pytest.mark.parametrize(
    ("first", "second"),
    [((3, 3), (3, 0)), ((0, 0), (0,)), ((0, 0), (0, 2)), ((2, 0, 0), (0,))],
)
def test_solve_with_empty_operands(snp: ModuleType, first, second) -> None:
    matrix = np.broadcast_to(np.eye(first[-1]), first).copy()
    check_same(snp, lambda xp, a, b: xp.linalg.solve(a, b), matrix, np.ones(second))
    check_same(snp, lambda xp, a: (xp.linalg.inv(a), xp.linalg.det(a), xp.linalg.eigh(a)), matrix)
