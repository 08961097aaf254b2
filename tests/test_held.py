"""Bases held in NumPy memory during loops of small operations (``shoal/held.py``).

Each program runs on NumPy and on Shoal (every array lazy, the node engine, holds after a few
settled accesses) and every value read is compared, with its type and dtype. The adversarial
cases are where holding could lose NumPy's semantics: a NumPy view of the held memory kept while
recorded work writes the base, recorded work still pending from before the hold, read-only
views, lazy values written into held memory, errors, and the switch back to lazy arrays.
"""

from __future__ import annotations

import warnings

import numpy
import pytest

import shoal.numpy as snp
from shoal import held, runtime


@pytest.fixture
def lazy(held_on_node):
    return held_on_node


def same(expected, got):
    assert len(expected) == len(got)
    for want, have in zip(expected, got):
        lazy_stand_in = type(have) is snp.ndarray and isinstance(want, numpy.ndarray | numpy.generic)
        assert type(have) is type(want) or lazy_stand_in
        have_array, want_array = numpy.asarray(have), numpy.asarray(want)
        assert have_array.dtype == want_array.dtype
        assert have_array.shape == want_array.shape
        numpy.testing.assert_array_equal(have_array, want_array)


def gauss_seidel(np, grid, sweeps):
    for _ in range(sweeps):
        for i in range(1, grid.shape[0] - 1):
            grid[i, 1:-1] = 0.2 * (grid[i - 1, 1:-1] + grid[i, 1:-1] + grid[i + 1, 1:-1] + grid[i, :-2] + grid[i, 2:])
    return grid


def test_a_row_loop_holds_its_base_and_returns_it(lazy):
    def program(np, watch=None):
        grid = np.arange(144.0).reshape(12, 12) / 7.0
        gauss_seidel(np, grid, 3)
        if watch is not None:
            watch.append(bool(lazy.held))
        reads = [grid[5, 5], grid[3].copy(), grid.sum()]  # the sum is recorded: the base goes back
        if watch is not None:
            watch.append(bool(lazy.held))
        grid *= 2.0
        reads += [grid[1:3, 2:4], grid[7, 7]]
        kept = grid[2]  # held again by now: a NumPy view that stays alive
        grid += 1.0
        reads += [kept, grid]
        return reads

    watch: list = []
    same(program(numpy), program(snp, watch))
    assert watch[0] and not watch[1]


def test_a_kept_numpy_view_sees_recorded_writes(lazy):
    def program(np):
        a = np.arange(100.0).reshape(10, 10)
        for i in range(10):
            a[i, :3] = a[i, 3:6] + 1.0
        row = a[4]  # under Shoal a NumPy view of the held memory
        a *= 2.0  # recorded: runs at once and is copied back while ``row`` lives
        first = row.copy()
        a[4, 0] = -1.0
        b = a + 1.0  # recorded read: sees the held values now
        row[1] = -2.0  # a write through the kept view after the recorded read
        return [first, row, a[4], b[4], a.sum()]

    same(program(numpy), program(snp))


def test_work_recorded_before_the_hold_sees_the_values_before_it(lazy):
    def program(np):
        a = np.arange(64.0).reshape(8, 8)
        float(a[0, 0])
        doubled = a * 2.0  # recorded, not run
        for i in range(8):
            a[i, 1:-1] = a[i, :-2] - a[i, 2:]
        return [doubled, a]

    same(program(numpy), program(snp))


def test_reads_writes_and_errors_in_held_memory_are_numpy_s(lazy):
    def program(np):
        a = np.arange(30, dtype=np.int32).reshape(5, 6)
        reads = []
        for i in range(5):
            reads.append(a[i, i])  # NumPy's scalars
            a[i, 0] = 2.75  # a float stored into int32: truncated, as NumPy does
        lazy_row = np.arange(6, dtype=np.int64) * 3
        a[2] = lazy_row
        reads += [a, a[::-1, ::2], a[a > 10], a[[0, 2], 1:3]]
        for key in [(5, 0), (0, 6)]:
            try:
                a[key]
            except IndexError as error:
                reads.append(str(error))
        try:
            a[0] = np.arange(4)
        except ValueError as error:
            reads.append(str(error))
        return reads

    same(program(numpy), program(snp))


def test_a_read_only_view_of_a_held_base_stays_read_only(lazy):
    def program(np):
        a = np.arange(20.0).reshape(4, 5)
        for i in range(4):
            a[i, 0] = a[i, 1] * 3.0
        view = np.broadcast_to(a[0], (3, 5))
        try:
            view[0, 0] = 1.0
        except ValueError as error:
            return [str(error), view[2, 1], a]
        return ["no error"]

    same(program(numpy), program(snp))


def test_holding_off_with_settled_views_off(monkeypatch):
    monkeypatch.setenv("SHOAL_COMPILE", "off")
    monkeypatch.setattr(held, "HOLD_RUN", 1)
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=4096, settled_threshold=0) as rt:
        grid = snp.arange(36.0).reshape(6, 6)
        gauss_seidel(snp, grid, 1)
        assert not rt.held
        expected = gauss_seidel(numpy, numpy.arange(36.0).reshape(6, 6), 1)
        numpy.testing.assert_array_equal(numpy.asarray(grid), expected)


def test_a_cast_into_held_memory_warns_at_the_caller_s_line(lazy):
    a = snp.zeros((4, 4), snp.float32)
    float(a[0, 0])
    for i in range(4):
        a[i, 0] = a[i, 1]
    assert lazy.held
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a[2] = numpy.full(4, 1e300)  # overflows in the cast to float32, as under NumPy
    assert [(w.category, str(w.message), w.filename) for w in caught] == [(RuntimeWarning, "overflow encountered in cast", __file__)]
    assert numpy.isinf(numpy.asarray(a)[2]).all()


def diagonal_steps(np, a, steps):
    sums = []
    for _ in range(steps):
        trace = 0.0
        for i in range(a.shape[0]):
            trace += np.tanh(a[i, i])
        sums.append(trace)
        a = a + trace / a.shape[0]
        a[0, 1] = -a[1, 0]  # the new array written in place, then read again
        sums.append(a[0, 1])
    return [*sums, a]


def test_a_fresh_result_read_by_element_is_held_at_its_first_read(lazy):
    source = numpy.random.default_rng(3).random((30, 30))
    a = snp.array(source) * 1.0
    assert a._base.id not in lazy.held
    first = a[2, 2]  # its flush holds it: the next reads are NumPy's indexing
    assert a._base.id in lazy.held
    same([source[2, 2] * 1.0], [first])
    same(diagonal_steps(numpy, source.copy(), 4), diagonal_steps(snp, snp.array(source), 4))


def test_an_array_index_into_held_memory_gives_a_new_lazy_array(lazy, monkeypatch):
    """``grid[mask]``, ``grid[[1, 3]]`` of a held base are new arrays NumPy computed from the held
    memory; a large one is lazy, so a lazy operation takes it as it is (no snapshot copy)."""
    from shoal.numpy import _uploads

    snapshots = []
    original = _uploads.UploadCache.store
    monkeypatch.setattr(_uploads.UploadCache, "store", lambda self, *args: snapshots.append(args[0].shape) or original(self, *args))

    def program(np, watch=None):
        grid = np.arange(144.0).reshape(12, 12) / 7.0
        mask = grid > 5.0  # lazy, computed before the hold
        gauss_seidel(np, grid, 1)
        picked, rows, columns = grid[mask], grid[[1, 3, 3]], grid[:, np.arange(3)]
        if watch is not None:
            watch += [grid._base.id in lazy.held, type(picked), type(rows)]
        doubled = picked * 2.0
        grid[mask] = 0.0  # the picked values were copied out before
        return [picked, rows, columns, doubled, grid]

    watch: list = []
    same(program(numpy), program(snp, watch))
    assert watch == [True, snp.ndarray, snp.ndarray]
    assert not snapshots


def test_lazy_index_arrays_into_held_memory_are_read_in_place(lazy, monkeypatch):
    """``x[indices]`` of a held ``x`` with a lazy index (a CSR product's gather): NumPy's result,
    with the index's pending work run first and its memory read in place, not fetched as a copy
    (a tuple key holding one is NumPy's indexing as before: fetched)."""
    fetched = []
    original = type(lazy).read
    monkeypatch.setattr(type(lazy), "read", lambda self, view, *args, **kwargs: fetched.append(view.dtype.kind) or original(self, view, *args, **kwargs))

    def program(np, watch=None):
        grid = np.arange(144.0).reshape(12, 12) / 7.0
        gauss_seidel(np, grid, 1)
        rows = (np.arange(12) * 5) % 12  # still recorded when it indexes
        before = len(fetched)
        picked, masked = grid[rows], grid[grid > 9.0]
        if watch is not None:
            watch.extend(fetched[before:])
        pairs = grid[rows, rows[::-1]]
        rows[0] = 11  # the results were taken before
        return [picked, pairs, masked, picked.sum(axis=0)]

    expected = program(numpy)
    watch: list = []
    same(expected, program(snp, watch))
    assert watch == []


def test_a_loop_that_only_indexes_rows_holds_its_base(lazy):
    """Rows indexed and handed on without a Shoal operation on them (a list of rows, rows passed
    to plain Python) count towards holding as operations on them do; they were lazy views for
    ever before, each costing a lazy array's creation. The base's data still in the pending
    batch (``copy`` of a row recorded) is flushed first."""

    def program(np, watch=None):
        grid = np.arange(120.0).reshape(10, 12) + 0.5
        first = grid[0].copy()  # recorded: the base is declared in the pending batch
        rows = [grid[i % 10, 1:-1] for i in range(30)]
        if watch is not None:
            watch.append(type(rows[-1]) is numpy.ndarray)
        totals = [sum(float(x) for x in row) for row in rows[-5:]]
        grid[3, 1:-1] = -1.0
        kept = rows[-7]  # grid[3, 1:-1]: a view of the held memory sees the write
        return [first, *rows[-3:], kept, numpy.asarray(totals), grid[3]]

    watch: list[bool] = []
    expected = program(numpy)
    got = program(snp, watch)
    same(expected, got)
    assert watch == [True]


def test_a_read_only_array_indexed_in_a_loop_gives_read_only_rows(lazy):
    grid = snp.arange(120.0).reshape(10, 12) + 1.0  # pending: held by the indexing loop, not a read
    grid.flags.writeable = False
    rows = [grid[i % 10] for i in range(30)]
    assert type(rows[-1]) is numpy.ndarray
    assert not rows[-1].flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        rows[-1][0] = 1.0


@pytest.mark.parametrize(
    ("dtype", "value"),
    [("float64", 7), ("float64", True), ("float64", -(10**300)), ("int64", 2**63 - 1), ("uint8", 255), ("int8", -128)],
)
def test_python_ints_stored_into_held_memory_as_numpy_stores_them(lazy, dtype, value):
    def program(np):
        grid = np.zeros((12, 10), dtype=dtype) + np.ones((12, 10), dtype=dtype)
        rows = [grid[i % 12] for i in range(20)]  # held by now
        for j in range(10):
            grid[:, j] = value
        return [grid, rows[-1]]

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same(program(numpy), program(snp))


@pytest.mark.parametrize(("dtype", "value"), [("float64", 10**400), ("int64", 2**63), ("uint8", 256), ("int8", -129), ("uint8", -1)])
def test_python_ints_out_of_range_raise_numpys_error_from_held_memory(lazy, dtype, value):
    def program(np):
        grid = np.zeros((12, 10), dtype=dtype) + np.ones((12, 10), dtype=dtype)
        rows = [grid[i % 12] for i in range(20)]
        grid[:, 3] = value
        return rows

    with pytest.raises(OverflowError) as expected:
        program(numpy)
    with pytest.raises(OverflowError) as got:
        program(snp)
    assert str(got.value) == str(expected.value)


def test_the_transpose_of_a_held_array_is_numpys_view_of_its_memory(lazy):
    """``a.T`` of a held ``a`` is NumPy's transpose of the held memory (as ``a[i]`` is NumPy's
    row): a loop reading ``a.T[i]`` costs NumPy's indexing, a kept transpose sees later writes,
    and a read-only array's transpose is read-only."""

    def program(np, watch=None):
        grid = np.arange(120.0).reshape(10, 12) * 0.5
        total = 0.0
        for i in range(30):
            total += float(grid.T[i % 12][i % 10])
        kept = grid.T
        if watch is not None:
            watch.append(type(kept) is numpy.ndarray)
        grid[2, 3] = -7.0
        grid *= 2.0  # recorded: the base is handed back (or runs at once while kept lives)
        return [numpy.float64(total), kept, grid.T, grid.T.sum()]

    watch: list[bool] = []
    same(program(numpy), program(snp, watch))
    assert watch == [True]


def test_the_transpose_of_a_held_read_only_array_is_read_only(lazy):
    grid = snp.arange(120.0).reshape(10, 12) + 1.0
    grid.flags.writeable = False
    rows = [grid[i % 10] for i in range(30)]
    assert type(rows[-1]) is numpy.ndarray
    with pytest.raises(ValueError, match="read-only"):
        grid.T[0, 0] = 5.0


def test_numpy_conversion_of_a_held_array_shares_its_memory_as_numpys_does(lazy):
    """``np.asarray`` of a held array (and NumPy indexing by one) reads the held memory itself,
    as it reads a NumPy array's own: no copy a call (a CSR product's ``x[indices]`` copied its
    indices every step). What NumPy's array shares then changes with the lazy array, also by
    recorded work, and stays after the lazy array is gone; a read-only array gives a read-only
    one."""
    from shoal.numpy._held_indexing import held_memory

    def program(np, watch=None):
        a = np.arange(400.0) * 0.5
        index = np.arange(300) % 7 * 3
        total = 0.0
        for i in range(60):  # element reads: both bases held
            total += float(a[i]) + float(index[i])
        if watch is not None:
            watch.append(held_memory(a) is not None and held_memory(index) is not None)
        shared = numpy.asarray(a)
        picked = numpy.arange(100.0)[index]  # NumPy indexing by a lazy (held) index array
        a[3] = -1.0
        a += 1.0  # recorded work: the engine writes what ``shared`` sees
        seen = shared.copy()
        view = a[::-1]
        view.flags.writeable = False
        frozen = numpy.asarray(view)
        del a, view
        fresh = np.ones(400) * 2.0  # new bases after the old one is gone
        return [seen, shared, picked, total, frozen.flags.writeable, fresh]

    watch: list[bool] = []
    same(program(numpy), program(snp, watch))
    assert watch == [True]


def test_python_floats_into_held_float32_memory_warn_at_the_caller_s_line(lazy):
    """Only float64 memory takes Python floats without a cast that may warn: into float32 an
    overflowing float warns as under NumPy, at the line that stores it."""
    a = snp.zeros((4, 4), snp.float32)
    for i in range(8):
        a[i % 4, 0] = a[i % 4, 1]
    assert lazy.held
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a[1, 1] = 1e300
        a[2] = numpy.ones(4, numpy.float32)  # the memory's own dtype: no cast
    assert [(w.category, w.filename) for w in caught] == [(RuntimeWarning, __file__)]
    assert numpy.isinf(numpy.asarray(a)[1, 1]) and (numpy.asarray(a)[2] == 1).all()
