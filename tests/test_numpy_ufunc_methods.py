"""``ufunc.accumulate``, ``ufunc.reduceat`` and ``np.fill_diagonal`` on lazy arrays: NumPy's
results and errors, and no fallback (a ``ShoalFallbackWarning`` fails the test)."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy_fixtures import DIFFERENTIAL, NUMERIC_DTYPES, arrays, check_same

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
