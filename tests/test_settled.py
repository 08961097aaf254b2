"""Small views of settled bases read and written in the component's memory (``_settled.py``).

Every case runs the same program on NumPy and on Shoal (every array lazy, the node engine and
the reference engine) and compares every value read, its type and dtype, and the errors and
warnings. The adversarial cases are the ones where reading or writing in place would be wrong:
a base with recorded writes or reads still pending, an engine alias whose region a write would
change, views that overlap the written region, negative strides, 0-d arrays, casts.
"""

from __future__ import annotations

import random
import warnings

import numpy
import pytest

import shoal
import shoal.numpy as snp
from shoal import runtime
from shoal.engine.node.engine import NodeEngine

ENGINES = ["node", "reference"]


@pytest.fixture(params=ENGINES)
def lazy(request, monkeypatch):
    """A runtime where every array is lazy and batches are long; views of fewer than 16 elements
    of settled bases are read and written in place, larger work is recorded."""
    monkeypatch.setenv("SHOAL_COMPILE", "off")
    with runtime.configure(engine=request.param, eager_threshold=0, flush_threshold=4096, settled_threshold=16) as rt:
        yield rt


def both(program):
    """``program`` on NumPy and on Shoal, each read converted to NumPy data."""
    expected = program(numpy)
    got = program(snp)
    return expected, got


def assert_same_reads(expected, got):
    assert len(expected) == len(got)
    for want, have in zip(expected, got):
        assert type(numpy.asarray(have).dtype) is type(numpy.asarray(want).dtype)
        assert numpy.asarray(have).dtype == numpy.asarray(want).dtype
        assert numpy.shape(have) == numpy.shape(want)
        numpy.testing.assert_array_equal(numpy.asarray(have), numpy.asarray(want))


def test_an_element_of_a_settled_base_is_numpy_scalar_read_without_a_flush(lazy):
    a = snp.arange(48.0).reshape(6, 8)
    float(a[0, 0])  # runs the batch that made ``a``
    flushes = lazy.stats.flushes
    b = a * 2.0  # recorded: reads ``a``, writes a new base
    element = a[3, -2]
    assert type(element) is numpy.float64 and element == 30.0
    assert lazy.stats.flushes == flushes  # the pending batch did not have to run
    assert float(b[3, -2]) == 60.0


def test_a_base_with_a_pending_write_is_read_after_that_write(lazy):
    def program(np):
        a = np.arange(48.0).reshape(6, 8)
        reads = [a[2, 3]]
        a[2:4] = a[2:4] * 10.0  # recorded (the base is not settled yet) or in place
        reads.append(a[2, 3])
        a[:, 1] = -a[:, 7]
        reads += [a[5, 1], a[3], a[::-1, ::-2].sum()]
        return reads

    assert_same_reads(*both(program))


def test_a_write_in_place_never_reaches_a_recorded_read(lazy):
    a = snp.arange(48.0).reshape(6, 8)
    float(a[0, 0])
    doubled = a * 2.0  # recorded, not run: it must see the values before the writes below
    a[1, 2] = 100.0
    a[0, :] = snp.arange(8.0)[::-1]
    row = a[1]
    row[3] = -1.0
    expected = numpy.arange(48.0).reshape(6, 8) * 2.0
    numpy.testing.assert_array_equal(numpy.asarray(doubled), expected)
    assert a[1, 2] == 100.0 and a[1, 3] == -1.0 and a[0, 0] == 7.0


def test_a_recorded_write_is_ordered_after_a_write_in_place(lazy):
    def program(np):
        a = np.zeros((5, 7))
        float(a[0, 0])
        a[1, :] = 3.0  # in place
        a += 1.0  # recorded: reads the row written in place
        a[1, 2] = 9.0  # the base now has a pending write: recorded too
        return [a.copy()[1], a[0], a[1, 2]]

    assert_same_reads(*both(program))


def test_overlapping_views_in_place(lazy):
    def program(np):
        a = np.arange(40.0).reshape(5, 8)
        float(a[0, 0])
        a[0, 1:] = a[0, :-1]  # overlapping source and target: NumPy's result
        a[1, ::-1] = a[1]  # reversed onto itself
        a[2, 2:6] += a[2, 0:4]  # in-place ufunc through overlapping views
        numpy_add = np.add(a[3, ::2], a[3, 1::2], out=a[4, :4])
        a[3, ::-2] *= 2.0
        return [a[0], a[1], a[2], a[3], a[4], numpy_add]

    assert_same_reads(*both(program))


def test_negative_strides_and_views_of_views(lazy):
    def program(np):
        a = np.arange(60.0).reshape(6, 10)
        float(a[0, 0])
        view = a[::-1, 8:1:-3]
        reads = [view[1], view[-1, -1], view.T[1, ::-1]]
        view[2, :] = [1.0, 2.0, 3.0]
        view[::-2, 0] = -5.0
        reads += [a[3], a[:, 8], a[5], view.sum(axis=0), view @ view.T[:, ::-1][:3]]
        return reads

    assert_same_reads(*both(program))


def test_zero_dimensional_arrays_and_empty_views(lazy):
    def program(np):
        a = np.arange(6.0).reshape(2, 3)
        float(a[0, 0])
        z = a.sum(keepdims=True).reshape(())
        z[()] = 3.5
        reads = [z, z + 1, z[()], np.sqrt(z)]
        reads += [a[1:1], a[2:, 1], a[:, 3:].sum(), a[1, 3:5] * 2.0]
        a[1:1] = 7.0
        reads.append(a)
        return reads

    assert_same_reads(*both(program))


def test_casts_on_assignment_match_numpy(lazy):
    def program(np):
        a = np.zeros((4, 5), dtype=np.int16)
        float(a[0, 0])
        a[0, :3] = [1.7, 2.2, -3.9]
        a[1] = np.arange(5.0) * 1.5
        a[2, 4] = True
        b = np.zeros((3, 3), dtype=np.float32)
        float(b[0, 0])
        b[1] = np.float64(1.0 / 3.0)
        b[2, ::2] = a[0, :2]
        return [a[0], a[1], a[2], b[1], b[2], a[0, :3] + b[2, :3], a[0, 1] * np.float32(2)]

    assert_same_reads(*both(program))


def test_errors_and_warnings_match_numpy(lazy):
    for np in (numpy, snp):
        a = np.zeros((4, 5), dtype=np.int8)
        b = np.zeros((4, 5), dtype=np.float64)
        float(a[0, 0]), float(b[0, 0])
        with pytest.raises(IndexError, match="out of bounds"):
            a[4, 0]
        with pytest.raises(IndexError, match="out of bounds"):
            a[0, -6] = 1
        with pytest.raises(OverflowError):
            a[1, 1] = 300
        with pytest.raises(ValueError, match="could not broadcast"):
            b[1, :3] = [1.0, 2.0]
        with pytest.raises(ValueError, match="mismatch"):
            b[1, :3] @ b[:2, 0]
        with pytest.warns(numpy.exceptions.ComplexWarning):
            b[2, 0] = numpy.complex128(1 + 2j)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(RuntimeWarning, match="encountered in divide"):
                numpy.asarray(b[2, 1:3] / b[3, 1:3])
        assert b[2, 0] == 1.0


def test_a_write_in_place_is_refused_where_an_engine_alias_reads_the_region(monkeypatch):
    monkeypatch.setenv("SHOAL_COMPILE", "off")
    monkeypatch.setenv("SHOAL_DIRECT_WORK", "0")
    monkeypatch.setenv("SHOAL_BLOCK_SIZE", "64")

    def program(np):
        grid = np.arange(100.0).reshape(10, 10)
        center = grid[1:-1, 1:-1]
        work = 0.5 * (grid[:-2, 1:-1] + grid[2:, 1:-1])
        center[:] = work
        total = float(np.sum(grid))  # the batch ends after the copy: ``work`` may be an alias
        first = grid[2, 2]  # read in place: reading the region is fine, writing it is not
        grid[2, 3] = -1.0  # a write into the region that holds ``work``'s values
        grid[4] = 0.0
        return [work.copy(), work[1, 2], grid[2], total, first]

    expected = program(numpy)
    with runtime.configure(engine="node", eager_threshold=0, settled_threshold=16) as rt:
        got = program(snp)
        assert isinstance(rt.engine, NodeEngine)
        assert_same_reads(expected, got)


def test_settled_views_off_records_everything(lazy):
    with runtime.configure(engine="reference", eager_threshold=0, settled_threshold=0) as rt:
        a = snp.arange(12.0).reshape(3, 4)
        float(a[0, 0])
        element = a[1, 1]
        assert isinstance(element, snp.ndarray) and not isinstance(element, numpy.generic)
        assert float(element) == 5.0
        assert rt.stats.flushes >= 2


def test_small_gathers_and_reductions_from_a_settled_base(lazy):
    def program(np):
        a = np.arange(30.0).reshape(5, 6)
        float(a[0, 0])
        mask = a[1] > 8.0
        return [a[[0, 3]], a[1][mask], a[:, [1, -1]].max(axis=0), a[2].mean(), np.dot(a[0], a[1]), a[3].dot(a[4])]

    assert_same_reads(*both(program))


def test_fromfunction_gives_numpy_array_when_the_result_is_small():
    with runtime.configure(engine="reference"):
        small = snp.fromfunction(lambda i, j: i * 3 + j, (512, 512))
        assert type(small) is numpy.ndarray
        numpy.testing.assert_array_equal(small, numpy.fromfunction(lambda i, j: i * 3 + j, (512, 512)))
        large = snp.fromfunction(lambda i, j: i - j, (1024, 1024), dtype=numpy.int32)
        assert isinstance(large, snp.ndarray) and not isinstance(large, numpy.ndarray)
        assert large.dtype == numpy.int32
        numpy.testing.assert_array_equal(numpy.asarray(large)[5], numpy.arange(5, 5 - 1024, -1, dtype=numpy.int32))
        with pytest.raises(TypeError):
            snp.fromfunction(lambda i: i, 5)


@pytest.mark.parametrize("seed", range(12))
def test_random_programs_of_small_and_large_operations(lazy, seed):
    """Random interleavings of recorded whole-array work and small reads and writes, aliasing
    views included, against NumPy."""
    rng = random.Random(seed)
    steps = []
    for _ in range(40):
        kind = rng.choice(["row_write", "element_write", "whole", "view_ufunc", "read", "column_add", "scalar_chain"])
        steps.append((kind, rng.randrange(8), rng.randrange(8), rng.choice([1, -1, 2, -2])))

    def program(np):
        a = np.arange(64.0).reshape(8, 8) / 7.0
        b = np.ones((8, 8))
        reads = []
        for kind, i, j, step in steps:
            if kind == "row_write":
                a[i, ::step] = b[j, ::step] * 0.5 + a[(i + 1) % 8, ::step]
            elif kind == "element_write":
                a[i, j] = a[j, i] - b[i, j]
            elif kind == "whole":
                b = b * 0.9 + a.T  # recorded, a new base
            elif kind == "view_ufunc":
                a[i, :] += a[:, j][::step] if abs(step) == 1 else 1.0
            elif kind == "read":
                reads.append(a[i, j] + b[j, i])
            elif kind == "column_add":
                np.add(a[:, i], b[::-1, j], out=b[:, (i + 1) % 8])
            else:
                total = a[i, i]
                for k in range(3):
                    total = total + np.tanh(a[(i + k) % 8, j])
                reads.append(total)
        reads += [a.copy(), b.copy()]
        return reads

    expected, got = both(program)
    assert len(expected) == len(got)
    for want, have in zip(expected, got):
        numpy.testing.assert_allclose(numpy.asarray(have), numpy.asarray(want), rtol=1e-13)
    shoal.flush()


@pytest.mark.parametrize(
    "change",
    [
        lambda grid, work: work.__iadd__(1.5),
        lambda grid, work: grid.__imul__(3.0),
        lambda grid, work: grid[1:-1, 1:-1].__isub__(work),
        lambda grid, work: grid.__setitem__((slice(3, 5), slice(None)), 7.0),
        lambda grid, work: grid.__setitem__((4, 5), work[0, 0]),
    ],
    ids=["work", "grid", "grid-from-work", "part-of-grid", "element-from-work"],
)
def test_a_change_in_place_to_either_side_of_an_engine_alias_keeps_the_other(monkeypatch, change):
    """The heat equation's ``work`` alias (``test_engine_node_aliases``) with settled views on:
    the grid is read in place first, then changed."""
    from test_engine_node_aliases import plate, sweep

    monkeypatch.setenv("SHOAL_COMPILE", "off")
    monkeypatch.setenv("SHOAL_DIRECT_WORK", "0")
    monkeypatch.setenv("SHOAL_BLOCK_SIZE", "64")

    def program(np):
        grid = plate(np)
        work, _ = sweep(np, grid)
        reads = [grid[3, 3], work[2, 2]]
        change(grid, work)
        return [*reads, grid.copy(), work.copy(), grid[4, 5]]

    expected = program(numpy)
    with runtime.configure(engine="node", eager_threshold=0) as rt:
        got = program(snp)
        assert rt.settled_threshold > 0
        assert_same_reads(expected, got)


def test_a_row_loop_filling_a_new_array_flushes_once(lazy):
    def program(np):
        out = np.zeros((6, 8))
        for i in range(6):
            out[i] = numpy.arange(8.0) * i  # a NumPy row
            out[i, i] += 0.5
        return [out[3], out.sum()]

    before = lazy.stats.flushes
    expected, got = both(program)
    assert lazy.stats.flushes <= before + 2  # the zeros once (no per-row batches), the sum
    assert_same_reads(expected, got)


def test_a_long_pending_batch_is_not_cut_for_a_small_view(lazy):
    a = snp.arange(64.0).reshape(8, 8)
    float(a[0, 0])
    for _ in range(20):
        a *= 1.5  # whole-array work: recorded
    before = lazy.stats.flushes
    a[0, :] = -1.0  # the base has pending writes and the batch is long: recorded too
    row = a[1, :] + 1.0
    assert lazy.stats.flushes == before
    expected = numpy.arange(64.0).reshape(8, 8) * 1.5**20
    expected[0, :] = -1.0
    numpy.testing.assert_array_equal(numpy.asarray(a), expected)
    numpy.testing.assert_array_equal(numpy.asarray(row), expected[1] + 1.0)


def test_a_new_array_given_its_data_is_written_in_place_before_any_flush(lazy):
    def program(np):
        a = np.arange(6.0) * 2.0  # with every array lazy: a new base declared with its data
        a[1] = 7.0
        a[2:4] += a[4:6]
        b = a[::-1] + 1.0
        a[0] = -1.0  # ``b`` was computed before: it keeps the old value
        return [a[0], a, b]

    before = lazy.stats.flushes
    assert_same_reads(*both(program))
    assert lazy.stats.flushes <= before + 1


def test_views_computed_without_a_probe_are_the_probes_views():
    """``simple_view`` (integers and slices, computed in Python) against NumPy's own geometry,
    negative and zero strides, empty and one-element slices and out-of-range keys included."""
    from shoal.bytecode import View
    from shoal.numpy._index import basic_view, simple_view

    class Holder:
        def __init__(self, view):
            self._view = view

    rng = random.Random(7)
    compared = 0
    for _ in range(20000):
        ndim = rng.randint(0, 3)
        shape = tuple(rng.randint(0, 6) for _ in range(ndim))
        view = View(1, numpy.dtype(numpy.float64), 200, shape, tuple(rng.choice([8, -8, 16, 24, -40, 0]) for _ in range(ndim)))
        items = []
        for axis in range(rng.randint(0, ndim)):
            extent = shape[axis]
            choice = rng.random()
            if choice < 0.3:
                items.append(rng.randint(-extent - 1, extent))
            elif choice < 0.4:
                items.append(numpy.int64(rng.randint(-extent - 1, extent)))
            else:
                start, stop = (rng.choice([None, rng.randint(-extent - 2, extent + 2)]) for _ in range(2))
                items.append(slice(start, stop, rng.choice([None, 1, 2, -1, -3, 7])))
        key = tuple(items) if len(items) != 1 or rng.random() < 0.5 else items[0]
        simple = simple_view(view, key)
        try:
            expected, _ = basic_view(Holder(view), key if isinstance(key, tuple) else (key,))
        except IndexError:
            assert simple is None
            continue
        if simple is not None:
            compared += 1
            element = len(items) == ndim and all(not isinstance(item, slice) for item in items)
            assert simple == (expected, element), (shape, view.strides, key)
    assert compared > 15000


@pytest.mark.parametrize("engine", ENGINES)
def test_a_column_loop_of_products_with_small_results_settles(monkeypatch, engine):
    """Products reading large views into small results count as small work: after
    ``SETTLING_RUN`` of them the pending batch runs, and the loop goes on in NumPy on the
    settled memory instead of recording every column (a covariance built column by column)."""
    monkeypatch.setenv("SHOAL_COMPILE", "off")

    def program(np):
        data = np.arange(8.0 * 30).reshape(8, 30) % 7.0
        data = data - np.mean(data, axis=0)  # pending work the loop reads
        cov = np.zeros((30, 30))
        for i in range(30):
            cov[i:, i] = data[:, i] @ data[:, i:] / 7.0
            cov[i, i:] = cov[i:, i]
        return [cov, cov.sum()]

    with runtime.configure(engine=engine, eager_threshold=0, flush_threshold=4096, settled_threshold=32) as rt:
        expected = program(numpy)
        before = rt.stats.instructions + len(rt._pending.instructions)
        got = program(snp)
        recorded = rt.stats.instructions + len(rt._pending.instructions) - before
        assert_same_reads(expected, got)
    assert recorded < 30  # the first columns and the set-up; four instructions a column before
