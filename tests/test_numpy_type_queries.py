"""Questions about an array's type and small element-wise helpers that NumPy writes in Python
(``iscomplexobj``, ``isrealobj``, ``common_type``, ``can_cast``, ``min_scalar_type``,
``iscomplex``, ``isreal``, ``isposinf``, ``isneginf``, ``angle``, ``sinc``, ``append``): NumPy's
results, dtypes and errors, no fallback (none counted while a test runs), and a question
about the dtype alone reads no value. Library code asks them of its inputs (SciPy's
``iscomplexobj``), where a fallback computed the whole array and warned."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy_fixtures import (
    DIFFERENTIAL,
    arrays,
    check_same,
    count_reads,
    dtypes,
    needs_runtime,
    shapes,
)

small = arrays(dtypes, shapes, bound=100)

pytestmark = pytest.mark.usefixtures("no_fallback")
with_infinities = arrays(st.sampled_from([np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.int16), np.dtype(np.complex128)]), shapes)


@DIFFERENTIAL
@given(value=small, name=st.sampled_from(["iscomplexobj", "isrealobj", "common_type", "iscomplex", "isreal", "min_scalar_type"]))
def test_type_questions_are_numpys(snp: ModuleType, value: np.ndarray, name: str) -> None:
    answer = (lambda result: np.dtype(result).num) if name in ("common_type", "min_scalar_type") else lambda result: result
    check_same(snp, lambda xp, v: answer(getattr(xp, name)(v)), value)


@DIFFERENTIAL
@given(value=small, to=dtypes, casting=st.sampled_from(["no", "equiv", "safe", "same_kind", "unsafe"]))
def test_can_cast_is_numpys(snp: ModuleType, value: np.ndarray, to: np.dtype, casting: str) -> None:
    check_same(snp, lambda xp, v: xp.can_cast(v, to, casting), value)


@DIFFERENTIAL
@given(value=with_infinities, name=st.sampled_from(["isposinf", "isneginf", "angle", "sinc"]), degrees=st.booleans())
def test_element_wise_helpers_are_numpys(snp: ModuleType, value: np.ndarray, name: str, degrees: bool) -> None:
    if name == "angle":
        check_same(snp, lambda xp, v: xp.angle(v, deg=degrees), value, rtol=1e-6)
    else:
        check_same(snp, lambda xp, v: getattr(xp, name)(v), value, rtol=1e-6)


@DIFFERENTIAL
@given(first=small, second=small, axis=st.none() | st.integers(-3, 2))
def test_append_is_numpys(snp: ModuleType, first: np.ndarray, second: np.ndarray, axis) -> None:
    check_same(snp, lambda xp, a, b: xp.append(a, b, axis=axis), first, second)


def test_dtype_questions_read_no_value(snp: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    needs_runtime()
    matrix = snp.arange(24.0).reshape(4, 6) * 1j + 1.0
    read = count_reads(monkeypatch)
    assert snp.iscomplexobj(matrix) and not snp.isrealobj(matrix)
    assert snp.common_type(matrix, snp.arange(3, dtype=np.float32)) is np.complex128
    assert snp.can_cast(matrix, np.complex64, "same_kind") and not snp.can_cast(matrix, np.float64)
    assert snp.min_scalar_type(matrix) == np.complex128
    assert not read
