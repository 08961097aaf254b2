"""NumPy functions, ``copy``, ``astype``, ``np.where`` and ``np.clip`` of small views of settled
bases, computed by NumPy at once (``shoal/numpy/_settled_functions.py``): values, dtypes, errors
and warnings as NumPy's, nothing recorded, and no engine memory handed out."""

from __future__ import annotations

import warnings

import numpy
import pytest
import test_settled
from test_settled import assert_same_reads, both

import shoal.numpy as snp
from shoal import held

lazy = test_settled.lazy  # the fixture: every array lazy, views of fewer than 16 elements settled


def test_copies_and_wheres_of_small_settled_views_run_at_once(lazy, monkeypatch):
    """``row.copy()`` and ``np.where(row > c, row, 0)`` of a settled base's small rows are NumPy's
    at once, as operators on them are: a loop of them records nothing (each copy was a recorded
    instruction read back by a flush, 30x NumPy's time)."""

    def rows(np, a):
        reads = []
        for i in range(6):
            reads.append(a[i, 1:5].copy())
            reads.append(np.where(a[i, :6] > -3.0, a[i, :6], 0.0))
            reads.append(np.where(a[i, 2] > 0.0, a[i, ::2], a[i, 1::2]))
        return reads

    expected = rows(numpy, numpy.arange(48.0).reshape(6, 8) - 20.0)
    monkeypatch.setattr(held, "HOLD_RUN", 10**9)  # settled, never held: the rows stay lazy views
    a = snp.arange(48.0).reshape(6, 8) - 20.0
    lazy.flush()
    recorded = lazy.stats.instructions
    got = rows(snp, a)
    lazy.flush()
    assert lazy.stats.instructions == recorded
    a[2, 3] = 99.0  # later writes do not reach the copies
    assert_same_reads(expected, got)


def test_a_copy_of_a_settled_view_with_pending_work_still_sees_it(lazy):
    def program(np):
        a = np.arange(48.0).reshape(6, 8)
        float(a[0, 0])
        a[1] *= 2.0  # a small write in place
        b = a + 1.0  # recorded
        return [a[1, :4].copy(), b[1, :4].copy(), np.where(b[2, :4] > 18.0, b[2, :4], -1.0)]

    assert_same_reads(*both(program))


def _row_functions(np, a):
    reads = []
    for i in range(6):
        row = a[i, :7]
        reads += [np.cumsum(row), np.cumprod(row[:3], 0), np.sort(row)[::-1], np.argsort(row), np.diff(row, 2)]
        reads += [np.concatenate([row, a[(i + 1) % 6, 2:5]]), np.stack((row, row)), np.vstack([row, row[::-1]])]
        reads += [np.unique(np.floor(row / 8.0)), np.median(row), np.percentile(row, 30.0), np.isclose(row, -3.0)]
        reads += [np.searchsorted(np.sort(row), 0.5), np.convolve(row, row[:2]), np.outer(row[:3], row[:2])]
        reads += [np.nonzero(row > 0.0)[0], np.count_nonzero(row > 1.0), np.repeat(row[:2], 3), np.average(row)]
        reads += [row.astype(np.int32), row.astype(np.float32), row.copy(), np.clip(row, -4.0, 4.0)]
        reads += [np.minimum.accumulate(row), np.multiply.accumulate(row[:3]), np.add.reduce(row), np.maximum.reduce(row[::2])]
        reads += [np.add.reduceat(row, [0, 2, 5]), np.logical_or.reduce(row > 3.0), np.subtract.accumulate(row, dtype=np.float32)]
    return reads


def test_numpy_functions_of_small_settled_views_run_at_once(lazy, monkeypatch):
    """Functions that build new arrays from small views of a settled base, and the methods of
    binary ufuncs (``np.minimum.accumulate(row)``, ``np.add.reduceat``), run in NumPy at once:
    the loop records nothing, and every value and dtype is NumPy's."""
    monkeypatch.setattr(held, "HOLD_RUN", 10**9)  # the rows stay lazy views
    expected = _row_functions(numpy, numpy.arange(48.0).reshape(6, 8) - 20.0)
    a = snp.arange(48.0).reshape(6, 8) - 20.0
    lazy.flush()
    recorded = lazy.stats.instructions
    got = _row_functions(snp, a)
    lazy.flush()
    assert lazy.stats.instructions - recorded <= 6  # np.diff(row, 2) of a strided view, if any: recorded
    assert_same_reads(expected, got)


def test_a_function_whose_result_is_its_input_is_recorded_not_handed_settled_memory(lazy, monkeypatch):
    """``np.diff(a, n=0)`` returns ``a`` itself in NumPy: computed on settled memory it would hand
    engine memory out, so such a call is recorded as before and the result is Shoal's array."""
    monkeypatch.setattr(held, "HOLD_RUN", 10**9)
    a = snp.arange(48.0).reshape(6, 8)
    lazy.flush()
    row = a[2, :5]
    same = snp.diff(row, n=0)
    assert type(same) is snp.ndarray
    a[2, 1] = 100.0
    numpy.testing.assert_array_equal(numpy.asarray(same), numpy.diff(numpy.asarray(a[2, :5]), n=0))


@pytest.mark.parametrize(
    "call",
    [
        lambda np, row: np.concatenate([row, row[None]]),
        lambda np, row: np.sort(row, axis=2),
        lambda np, row: np.cumsum(row, axis=1),
        lambda np, row: np.percentile(row, 130.0),
        lambda np, row: np.stack([row, row[:3]]),
        lambda np, row: np.add.accumulate(row, axis=1),
        lambda np, row: np.add.reduceat(row, [0, 9]),
        lambda np, row: np.maximum.reduce(row[:0]),
    ],
)
def test_numpy_functions_of_settled_views_raise_numpys_errors(lazy, monkeypatch, call):
    monkeypatch.setattr(held, "HOLD_RUN", 10**9)
    with pytest.raises(Exception) as expected:
        call(numpy, (numpy.arange(48.0).reshape(6, 8))[1, :6])
    a = snp.arange(48.0).reshape(6, 8)
    lazy.flush()
    with pytest.raises(type(expected.value)) as got:
        call(snp, a[1, :6])
    assert str(got.value) == str(expected.value)


def test_a_cast_of_a_settled_view_warns_at_the_callers_line(lazy, monkeypatch):
    monkeypatch.setattr(held, "HOLD_RUN", 10**9)

    def program(np):
        a = np.zeros((6, 8)) + np.array([numpy.nan, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
        if np is snp:
            lazy.flush()
        return a[1, :4].astype(np.int64)  # invalid value encountered in cast

    with warnings.catch_warnings(record=True) as expected_warnings:
        warnings.simplefilter("always")
        program(numpy)
    with warnings.catch_warnings(record=True) as got_warnings:
        warnings.simplefilter("always")
        program(snp)
    assert [(w.category, str(w.message), w.lineno) for w in got_warnings] == [(w.category, str(w.message), w.lineno) for w in expected_warnings]
    assert expected_warnings



@pytest.mark.parametrize(
    ("values", "target"),
    [
        (numpy.array([True, False, True, True]), numpy.int8),  # booleans fit every type: no warning
        (numpy.array([True, False, True, True]), numpy.float16),
        (numpy.array([300, -2**40, 2**62, 7]), numpy.int8),  # integers wrap silently
        (numpy.array([2**64 - 1, 0, 3, 9], numpy.uint64), numpy.bool_),
        (numpy.array([100000, 1, 2, 3]), numpy.float16),  # overflow encountered in cast
        (numpy.array([1e300, 1.0, 2.0, 3.0]), numpy.float32),
    ],
)
def test_casts_of_settled_views_warn_as_numpys_and_only_then(lazy, monkeypatch, values, target):
    monkeypatch.setattr(held, "HOLD_RUN", 10**9)

    def program(np):
        a = np.zeros((6, 4), values.dtype) + np.asarray(values)
        if np is snp:
            lazy.flush()
        return a[1].astype(target)

    with warnings.catch_warnings(record=True) as expected_warnings:
        warnings.simplefilter("always")
        want = program(numpy)
    with warnings.catch_warnings(record=True) as got_warnings:
        warnings.simplefilter("always")
        have = numpy.asarray(program(snp))
    numpy.testing.assert_array_equal(have, want)
    assert have.dtype == want.dtype
    assert [(w.category, str(w.message), w.lineno) for w in got_warnings] == [(w.category, str(w.message), w.lineno) for w in expected_warnings]
