"""Held bases share the engine's memory (``shoal/held.py``): nothing is copied in or out.

The program runs on NumPy and on Shoal and the values are compared; the engine's side is
checked directly: the held ndarray is the component's memory of the base, a base of any size
is held, a hold ends without a batch of its own, a NumPy view kept past the base's release keeps
its memory (the engine frees it, and reuses it, only once the view is gone), and the views that
lazy arrays keep for their indexing are dropped when the base is handed back.
"""

from __future__ import annotations

import gc

import numpy

import shoal.numpy as snp
from shoal import runtime
from shoal.bytecode import View
from shoal.numpy import _numpy_data


def _engine_memory(rt: runtime.Runtime, array: snp.ndarray) -> numpy.ndarray:
    base = array._base
    return rt.engine.memory(View(base.id, base.dtype, 0, (base.size,), (base.dtype.itemsize,)))


def _row_loop(np, a, rows):
    for i in range(1, rows):
        a[i, :3] = a[i - 1, 1:4] * 0.5 + 1.0


def test_the_held_memory_is_the_engine_s_and_any_size_is_held(lazy):
    a = snp.arange(100_000.0).reshape(100, 1000)  # 1,500x the settled threshold
    float(a[0, 0])
    _row_loop(snp, a, 100)
    assert a._base.id in lazy.held
    assert numpy.shares_memory(lazy.held[a._base.id], _engine_memory(lazy, a))
    address = lazy.held[a._base.id].ctypes.data
    flushes = lazy.stats.flushes
    total = float(a.sum())  # recorded: the base goes back with no copy and no batch of its own
    assert a._base.id not in lazy.held and lazy.stats.flushes == flushes + 1
    expected = numpy.arange(100_000.0).reshape(100, 1000)
    _row_loop(numpy, expected, 100)
    assert total == float(expected.sum())
    assert _engine_memory(lazy, a).ctypes.data == address  # the engine kept that very memory


def test_a_base_given_from_numpy_data_is_held_as_that_data_and_the_engine_takes_it_over(lazy):
    """A base held back with its data (``_deferred``) is held as that very array, with no
    declaration and no batch; an instruction that names it later gives the engine that array."""
    source = numpy.random.default_rng(1).random((20, 20))
    a = snp.array(source)
    assert type(a) is snp.ndarray and a._base.id in lazy._deferred  # NumPy memory, not yet the engine's
    flushes = lazy.stats.flushes
    for i in range(1, 20):
        a[i, 1:-1] = a[i - 1, 1:-1] + a[i, 2:]
    assert a._base.id in lazy.held and a._base.id in lazy._deferred and lazy.stats.flushes == flushes
    kept = lazy.held[a._base.id]
    expected = source.copy()
    for i in range(1, 20):
        expected[i, 1:-1] = expected[i - 1, 1:-1] + expected[i, 2:]
    numpy.testing.assert_array_equal(numpy.asarray(a * 2.0), expected * 2.0)
    assert numpy.shares_memory(kept, _engine_memory(lazy, a))  # the engine took that very memory
    numpy.testing.assert_array_equal(source, numpy.random.default_rng(1).random((20, 20)))  # not written


def test_a_view_kept_past_the_release_of_its_base_keeps_its_values(lazy):
    def program(np):
        a = np.arange(400.0).reshape(20, 20)
        _row_loop(np, a, 20)
        row = a[7]  # under Shoal a NumPy view of the engine's memory
        del a
        b = np.full((20, 20), -1.0)  # the same size: would be given the released memory
        b += 1.0
        float(b[0, 0])
        return row.copy(), row, b

    want = program(numpy)
    got = program(snp)
    for expected, value in zip(want, got):
        numpy.testing.assert_array_equal(numpy.asarray(value), expected)


def test_an_orphaned_base_is_released_once_its_views_are_gone(lazy):
    a = snp.arange(400.0).reshape(20, 20)
    _row_loop(snp, a, 20)
    row = a[3]
    base_id = a._base.id
    gc.collect()
    runtime.flush()
    live = lazy.engine.live_bases()
    del a
    gc.collect()
    runtime.flush()
    assert base_id in lazy.orphans and lazy.engine.live_bases() == live
    value = row.copy()
    del row
    runtime.flush()
    assert base_id not in lazy.orphans and lazy.engine.live_bases() == live - 1
    expected = numpy.arange(400.0).reshape(20, 20)
    _row_loop(numpy, expected, 20)
    numpy.testing.assert_array_equal(value, expected[3])


def test_views_kept_by_lazy_arrays_are_dropped_at_the_hand_back(lazy):
    a = snp.arange(64.0).reshape(8, 8)
    t = a.T
    float(a[0, 0])
    _row_loop(snp, a, 8)
    assert a._base.id in lazy.held
    t[1, 2]  # the transpose keeps its view of the held memory too
    assert a._held is not None and t._held is not None
    b = a + 1.0  # recorded: no NumPy view of the program is alive, so the base goes back
    assert a._base.id not in lazy.held and a._held is None and t._held is None
    expected = numpy.arange(64.0).reshape(8, 8)
    _row_loop(numpy, expected, 8)
    numpy.testing.assert_array_equal(numpy.asarray(b), expected + 1.0)
    numpy.testing.assert_array_equal(numpy.asarray(t), expected.T)


def test_a_hold_kept_by_a_live_view_keeps_the_arrays_views_for_their_indexing(lazy):
    """``a[i] += x @ a[i + 1:]``: the row read for the update is alive when the large view is
    taken, so the base stays held; the lazy array's view of the memory stays the same one (not
    dropped and made again at every access), noted once."""

    def program(np, watch=None):
        a = np.arange(400.0).reshape(20, 20)
        x = np.linspace(0.0, 1.0, 20)
        _row_loop(np, a, 20)
        first = None
        for i in range(12):
            a[i] += x[i + 1 :] @ a[i + 1 :]
            if watch is not None:
                first = a._held if first is None else first
                watch.append((a._base.id in runtime.current().held, a._held is first, len(a._base.holders)))
        return a

    watch: list = []
    numpy.testing.assert_array_equal(numpy.asarray(program(snp, watch)), program(numpy))
    assert watch == [(True, True, 1)] * 12


def test_a_kept_view_makes_recorded_reads_and_writes_run_at_once_until_it_dies(lazy):
    def program(np, watch=None):
        a = np.arange(100.0).reshape(10, 10)
        _row_loop(np, a, 10)
        row = a[2]
        doubled = a * 2.0  # recorded read: must not see the write through ``row`` below
        row[0] = 1000.0
        a += 1.0  # recorded write: ``row`` sees it
        seen = row.copy()
        del row
        if watch is not None:
            watch.append(a._base.id in runtime.current().held)
        tripled = a * 3.0  # no view alive: the base goes back
        if watch is not None:
            watch.append(a._base.id in runtime.current().held)
        return [doubled, seen, a, tripled]

    watch: list = []
    want = program(numpy)
    got = program(snp, watch)
    for expected, value in zip(want, got):
        numpy.testing.assert_array_equal(numpy.asarray(value), expected)
    assert watch == [True, False]


def test_reshaping_in_place_drops_the_kept_view(lazy):
    a = snp.arange(36.0).reshape(6, 6)
    float(a[0, 0])
    _row_loop(snp, a, 6)
    assert a._held is not None
    a.shape = (4, 9)
    expected = numpy.arange(36.0).reshape(6, 6)
    _row_loop(numpy, expected, 6)
    expected.shape = (4, 9)
    numpy.testing.assert_array_equal(numpy.asarray(a[3]), expected[3])
    a[3, 8] = -5.0
    expected[3, 8] = -5.0
    numpy.testing.assert_array_equal(numpy.asarray(a), expected)


def test_a_kept_view_of_a_base_from_numpy_data_sees_recorded_writes(lazy):
    source = numpy.random.default_rng(2).random((12, 12))

    def program(np):
        a = np.array(source)
        _row_loop(np, a, 12)
        row = a[5]
        a *= 3.0  # recorded under Shoal; runs at once while ``row`` lives
        first = row.copy()
        row[2] = -7.0
        total = a.sum()
        return [first, row, total, a]

    want = program(numpy)
    got = program(snp)
    for expected, value in zip(want, got):
        numpy.testing.assert_array_equal(numpy.asarray(value), expected)
    numpy.testing.assert_array_equal(source, numpy.random.default_rng(2).random((12, 12)))


# A NumPy view of a held base as a lazy operation's output (``shoal/numpy/_held_views.py``):
# ``view -= lazy`` records on the held base instead of copying the view in and the result out.
# The cases that could go wrong: a right-hand side overlapping the written view, views of another
# dtype, a view of a second held base as an input, and the copies that must not happen.


def _held(np, rows=40, columns=30, start=0.0):
    """A matrix that a row loop has made held (under Shoal)."""
    a = np.arange(start, start + rows * columns).reshape(rows, columns) % 11.0
    float(a[0, 0])
    for i in range(1, 12):
        a[i, :3] = a[i - 1, 1:4] * 0.5 + 1.0
    return a


def _gram_schmidt_update(np, a, q, r, k):
    a[:, k + 1 :] -= np.outer(q[:, k], r[k, k + 1 :])


def _program(np):
    a = _held(np)
    q = np.arange(40.0 * 30).reshape(40, 30) % 5.0 + 1.0
    r = np.arange(30.0 * 30).reshape(30, 30) % 3.0
    for k in range(6):
        _gram_schmidt_update(np, a, q, r, k)
    return [a[:, 1:].sum(), a[5, :], a[:, 7]]


def _assert_same(expected, got):
    for want, have in zip(expected, got):
        numpy.testing.assert_array_equal(numpy.asarray(have), want)


def test_an_update_of_a_held_view_by_a_lazy_value_is_numpys(lazy):
    expected = _program(numpy)
    a = _held(snp)
    assert a._base.id in lazy.held
    view = a[:, 1:]  # a large view: lazy, the base held until work is recorded on it
    assert type(view) is snp.ndarray and a._base.id in lazy.held
    doubled = view * 2.0  # lazy work: the base goes back to the engine
    assert a._base.id not in lazy.held
    numpy.testing.assert_array_equal(numpy.asarray(doubled), numpy.asarray(a)[:, 1:] * 2.0)
    got = _program(snp)  # its updates in place (``a[:, k + 1:] -= ...``) are NumPy's views
    _assert_same(expected, got)


def test_the_view_is_written_where_it_lies_and_nothing_is_copied(lazy, monkeypatch):
    copies = []
    original = _numpy_data.from_numpy
    monkeypatch.setattr(_numpy_data, "from_numpy", lambda value, copy=True: copies.append(value.shape) or original(value, copy))
    a = _held(snp)
    assert a._base.id in lazy.held
    view = a[:, 4:]
    before = view.copy()
    result = snp.subtract(view, snp.ones((40, 26)) * 2.0, out=view)  # the lazy side is large
    assert result is view  # NumPy's out object comes back
    numpy.testing.assert_array_equal(view, before - 2.0)  # seen at once through the kept view
    assert (40, 26) not in copies  # the view was not copied in as NumPy data
    numpy.testing.assert_array_equal(numpy.asarray(a)[:, 4:], before - 2.0)


def test_a_right_hand_side_overlapping_the_written_view(lazy):
    def program(np):
        a = _held(np)
        np.add(a[1:, :], a[:-1, :] * 2.0, out=a[1:, :])  # reads rows the call writes
        np.multiply(a[:, 1:], a[:, :-1], out=a[:, 1:])
        return [a.sum(), a[3, :]]

    _assert_same(program(numpy), program(snp))


def test_views_of_another_dtype_and_of_a_second_held_base(lazy):
    def program(np):
        a = _held(np)
        b = _held(np, start=3.0)
        bits = a.view(numpy.int64)
        a[2:, :] += b[:-2, :] * 2.0  # an input view of a second held base
        flipped = a[::-1, ::2]
        flipped *= 0.5  # negative strides
        return [a.sum(), b.sum(), numpy.asarray(bits)[1, :4].copy()]

    _assert_same(program(numpy), program(snp))


def test_a_base_held_as_its_own_data_leaves_the_held_table_when_released(lazy):
    """Released while held as its data (never named by an instruction), the base leaves the held
    table; a NumPy row kept from it keeps its values."""
    a = snp.array(numpy.arange(400.0).reshape(20, 20))
    for i in range(1, 20):
        a[i, 1:-1] = a[i - 1, 1:-1] * 0.5
    base = a._base.id
    assert base in lazy.held and base in lazy._deferred
    row = a[7]
    expected = numpy.array(row)
    del a
    gc.collect()
    b = snp.array(numpy.full((20, 20), -1.0))  # another base of the same size
    b += 1.0
    float(b[0, 0])
    assert base not in lazy.held and base not in lazy._deferred
    numpy.testing.assert_array_equal(row, expected)


def test_a_base_held_back_with_its_data_is_held_after_a_few_reads_of_its_own(monkeypatch):
    """Once a loop's run of settled accesses is long (``HOLD_RUN``), a fresh result held back
    with its data is held after ``HOLD_BACK_ACCESSES`` reads of its own, not ``HOLD_RUN``: its hold
    needs no declaration and no batch."""
    from shoal import held

    monkeypatch.setenv("SHOAL_COMPILE", "off")
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=4096, settled_threshold=4096) as rt:
        a = snp.array(numpy.arange(100.0))
        values = [float(a[i]) for i in range(held.HOLD_RUN + 2)]  # a long run: ``a`` is held
        b = a + 1.0  # computed at once, held back with its data
        assert b._base.id in rt._deferred and b._base.id not in rt.held
        read = [float(b[i]) for i in range(held.HOLD_BACK_ACCESSES)]
        assert b._base.id in rt.held and b._base.id in rt._deferred
        assert held.HOLD_BACK_ACCESSES < held.HOLD_RUN
        assert values == list(numpy.arange(100.0)[: held.HOLD_RUN + 2])
        assert read == list(numpy.arange(100.0)[: held.HOLD_BACK_ACCESSES] + 1.0)
