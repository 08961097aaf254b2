"""``ufunc.accumulate``, ``ufunc.reduceat`` and ``np.fill_diagonal`` on lazy arrays: NumPy's
results and errors, and no fallback (a ``ShoalFallbackWarning`` fails the test)."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy_fixtures import DIFFERENTIAL, NUMERIC_DTYPES, arrays, check_same, needs_runtime

UFUNCS = ["minimum", "maximum", "add", "subtract", "logical_or", "bitwise_xor", "fmax"]
numeric = arrays(st.sampled_from(NUMERIC_DTYPES), hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5), bound=20)


@DIFFERENTIAL
@given(value=numeric, name=st.sampled_from([*UFUNCS, "multiply"]), axis=st.integers(-3, 2) | st.none())
def test_accumulate(snp: ModuleType, value: np.ndarray, name: str, axis) -> None:
    check_same(snp, lambda xp, v: getattr(xp, name).accumulate(v, axis=axis), value)


@DIFFERENTIAL
@given(value=numeric, name=st.sampled_from(UFUNCS), axis=st.integers(-3, 2), indices=st.lists(st.integers(-1, 6), max_size=5))
def test_reduceat(snp: ModuleType, value: np.ndarray, name: str, axis: int, indices) -> None:
    check_same(snp, lambda xp, v: getattr(xp, name).reduceat(v, indices, axis=axis), value)
    check_same(snp, lambda xp, v: getattr(xp, name).reduceat(v, np.asarray(indices, dtype=np.int32), axis), value)


@pytest.mark.parametrize(
    "call",
    [
        lambda xp, v: xp.minimum.accumulate(v[0, 0]),
        lambda xp, v: xp.add.reduceat(v, np.array([0.5])),
        lambda xp, v: xp.add.reduceat(v, [[0]]),
        lambda xp, v: xp.add.reduceat(v, [0, 9]),
        lambda xp, v: xp.minimum.accumulate(v, axis=3),
    ],
)
def test_errors_are_numpys(snp: ModuleType, call) -> None:
    assert check_same(snp, call, np.arange(12.0).reshape(3, 4)) is not None


@DIFFERENTIAL
@given(
    shape=st.sampled_from([(4, 4), (3, 5), (7, 2), (3, 3, 3), (2, 2, 2, 2), (5,), (2, 3, 4), (0, 3)]),
    value=st.integers(-5, 5) | st.lists(st.integers(-5, 5), min_size=1, max_size=4),
    wrap=st.booleans(),
)
def test_fill_diagonal(snp: ModuleType, shape, value, wrap: bool) -> None:
    def fill(xp, v):
        result = xp.fill_diagonal(v, value, wrap)
        return v if result is None else result

    check_same(snp, fill, np.arange(float(np.prod(shape))).reshape(shape))


@pytest.mark.parametrize(
    "call",
    [
        lambda xp, v, i: xp.add.reduceat(v, i),
        lambda xp, v, i: xp.maximum.reduceat(v, i[1:]),
        lambda xp, v, i: xp.add.reduceat(v, i[::-1]),
        lambda xp, v, i: xp.add.reduceat(v, i - 1),
        lambda xp, v, i: xp.add.reduceat(v, i + 3),
        lambda xp, v, i: xp.add.reduceat(v, i.astype(xp.int32)),
        lambda xp, v, i: xp.add.reduceat(v, i.reshape(2, 2)),
    ],
)
def test_reduceat_lazy_indices(snp: ModuleType, call) -> None:
    """Indices that are lazy arrays themselves: NumPy's results and errors."""
    check_same(snp, call, np.arange(12.0), np.array([0, 2, 5, 9]))


def test_reduceat_reads_its_values_at_the_call(snp: ModuleType) -> None:
    """Writing the indices after the call changes nothing, lazy or NumPy indices alike."""
    for kind in (snp, np):
        indices = kind.array(np.array([0, 2, 5, 9]), copy=True)
        value = snp.array(np.arange(12.0), copy=True)
        result = snp.add.reduceat(value, indices)
        indices[:] = 0
        np.testing.assert_array_equal(np.asarray(result), np.add.reduceat(np.arange(12.0), [0, 2, 5, 9]))


def _recorded_instructions(monkeypatch) -> list:
    """The (opcode, inputs) of every instruction recorded from now on in this test."""
    from shoal import runtime

    needs_runtime()
    recorded = []
    original = runtime.Runtime.record

    def spy(self, op, outputs, inputs, **attrs):
        recorded.append((op, inputs))
        return original(self, op, outputs, inputs, **attrs)

    monkeypatch.setattr(runtime.Runtime, "record", spy)
    return recorded


def test_reduceat_reads_lazy_indices_in_place(snp: ModuleType, monkeypatch) -> None:
    """Lazy intp indices are read where they are: the instruction reads the array's own base,
    no copy of them is carried into the batch."""
    recorded = _recorded_instructions(monkeypatch)
    size = 1 << 20  # beyond the settled threshold: recorded, not computed at once
    indices = snp.array(np.arange(0, size, 4096), copy=True)
    value = snp.array(np.arange(float(size)), copy=True) * 2.0
    result = snp.add.reduceat(value, indices)
    reads = [inputs for op, inputs in recorded if op == "reduceat"]
    assert len(reads) == 1 and reads[0][1] == indices._view
    np.testing.assert_array_equal(np.asarray(result), np.add.reduceat(np.arange(float(size)) * 2.0, np.arange(0, size, 4096)))


def test_reduceat_uploads_large_numpy_indices_once(snp: ModuleType, monkeypatch) -> None:
    """A large NumPy index array used again unchanged is read from one upload, not copied into
    every call; once it changes, the new values count."""
    recorded = _recorded_instructions(monkeypatch)
    size = 1 << 20
    indices = np.arange(0, size, 8)  # as many as the threshold beyond which NumPy data is lazy
    value = snp.array(np.arange(float(size)), copy=True)
    first, second = snp.add.reduceat(value, indices), snp.add.reduceat(value, indices)
    indices[0] = 3
    third = snp.add.reduceat(value, indices)
    reads = [inputs[1] for op, inputs in recorded if op == "reduceat"]
    assert len(reads) == 3 and reads[0] == reads[1] != reads[2]
    expected = np.add.reduceat(np.arange(float(size)), np.arange(0, size, 8))
    np.testing.assert_array_equal(np.asarray(first), expected)
    np.testing.assert_array_equal(np.asarray(second), expected)
    indices_now = np.arange(0, size, 8)
    indices_now[0] = 3
    np.testing.assert_array_equal(np.asarray(third), np.add.reduceat(np.arange(float(size)), indices_now))
