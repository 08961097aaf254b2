"""Loops of small work on bases of a component that offers no memory but prefers local loops (the
cluster manager; here a pass-through that says so, ``shoal/local_loops.py``): a row loop writing a
base takes the base back into the program's process, an element loop over a freshly computed base
reads one fetched copy, and the values stay NumPy's through every transition."""

from __future__ import annotations

import gc

import numpy
import pytest

import shoal.numpy as snp
from shoal import local_loops, mirrors, runtime
from shoal.engine.node.engine import NodeEngine
from shoal.engine.passthrough import PassConfig, PassThrough


def _stack(local_loops: bool = True) -> PassThrough:
    return PassThrough(PassConfig(local_loops=local_loops), NodeEngine())


@pytest.fixture
def cluster_like():
    """Every array lazy, rows of 100 elements small, batches checked by the verifier."""
    with runtime.configure(engine=_stack(), eager_threshold=0, flush_threshold=4096, settled_threshold=256) as rt:
        rt.verify = True
        yield rt


def _grid() -> numpy.ndarray:
    return numpy.arange(10000.0).reshape(100, 100) / 7.0


def _relax_rows(np, grid, rows: range) -> None:
    for i in rows:
        grid[i, 1:-1] = 0.25 * (grid[i - 1, 1:-1] + grid[i + 1, 1:-1] + grid[i, :-2] + grid[i, 2:])


def test_a_row_loop_writing_a_base_takes_it_back(cluster_like):
    expected = _grid() * 1.0
    _relax_rows(numpy, expected, range(1, 99))
    grid = snp.array(_grid()) * 1.0
    float(grid[0, 0])
    flushes = cluster_like.stats.flushes
    _relax_rows(snp, grid, range(1, 99))
    assert grid._base.id in cluster_like._deferred  # its values are here now, NumPy's memory
    assert cluster_like.stats.flushes - flushes <= 6  # the first rows recorded, the copy, the release: not one per row
    assert cluster_like._taken_back[grid._base.id] == local_loops.TAKE_BACK_ACCESSES
    assert grid._base.id in cluster_like.held  # the loop paid for the transfers: NumPy's indexing now
    numpy.testing.assert_array_equal(numpy.array(grid, copy=True), expected)


def test_whole_array_work_after_the_loop_declares_the_values_again(cluster_like):
    expected = _grid() * 1.0
    grid = snp.array(_grid()) * 1.0
    for _ in range(3):
        _relax_rows(numpy, expected, range(1, 99))
        _relax_rows(snp, grid, range(1, 99))
        expected += expected.sum() / 1e6
        grid += grid.sum() / 1e6  # names the base: uploaded, and the component runs the work
        assert grid._base.id not in cluster_like._deferred
        numpy.testing.assert_allclose(numpy.array(grid, copy=True), expected, rtol=1e-13)
    assert cluster_like._taken_back[grid._base.id] >= 0  # each loop paid its transfers: taken back every sweep


def test_an_element_loop_over_a_fresh_result_reads_one_copy(cluster_like):
    """One copy a step, fetched once the loop is under way; a long loop then keeps it as the
    base's data, held (NumPy's own indexing), and the next step's work uploads it."""
    grid = snp.array(_grid())
    expected_grid = _grid()
    for _ in range(3):
        grid = grid + 1.0
        expected_grid = expected_grid + 1.0
        flushes = cluster_like.stats.flushes
        total, expected = 0.0, 0.0
        for i in range(100):
            total += snp.tanh(grid[i, i])
            expected += numpy.tanh(expected_grid[i, i])
        assert float(total) == expected
        assert cluster_like.stats.flushes - flushes <= 3  # the recorded start of the loop, the copy, its take-over
        assert grid._base.id in cluster_like.held  # the copy served enough reads to become the base's data


def test_a_base_uploaded_again_too_soon_is_not_taken_back_again(cluster_like):
    grid = snp.array(_grid()) * 1.0
    expected = _grid() * 1.0
    for _ in range(4):  # a few small writes, then whole-array work on the same base, repeatedly
        for i in range(1, 21):  # taken back after 32 recorded small instructions, a few accesses before the upload
            grid[i, :50] = grid[i - 1, :50] * 0.5
            expected[i, :50] = expected[i - 1, :50] * 0.5
        grid *= 1.5
        expected *= 1.5
    assert cluster_like._taken_back[grid._base.id] == mirrors.NOT_AGAIN
    assert grid._base.id not in cluster_like._deferred
    numpy.testing.assert_array_equal(numpy.array(grid, copy=True), expected)


def test_a_component_that_records_its_loops_keeps_them_recorded():
    with runtime.configure(engine=_stack(local_loops=False), eager_threshold=0, flush_threshold=4096, settled_threshold=256) as rt:
        grid = snp.array(_grid()) * 1.0
        expected = _grid() * 1.0
        _relax_rows(snp, grid, range(1, 99))
        _relax_rows(numpy, expected, range(1, 99))
        assert not rt._taken_back and grid._base.id not in rt._deferred
        numpy.testing.assert_array_equal(numpy.array(grid, copy=True), expected)


def test_a_base_larger_than_the_limit_stays_in_the_component(cluster_like, monkeypatch):
    monkeypatch.setattr(mirrors, "MIRROR_BYTES", 1024)
    grid = snp.array(_grid()) * 1.0
    expected = _grid() * 1.0
    _relax_rows(snp, grid, range(1, 40))
    _relax_rows(numpy, expected, range(1, 40))
    assert not cluster_like._taken_back
    numpy.testing.assert_array_equal(numpy.array(grid, copy=True), expected)


def test_a_taken_back_base_leaves_nothing_behind_when_it_dies(cluster_like):
    before = cluster_like.engine.live_bases()
    grid = snp.array(_grid()) * 1.0
    _relax_rows(snp, grid, range(1, 99))
    base_id = grid._base.id
    assert base_id in cluster_like._deferred
    del grid
    gc.collect()
    snp.ones(300) + 1.0  # a flush records the releases
    cluster_like.flush(wait=True)
    assert base_id not in cluster_like._deferred and base_id not in cluster_like._taken_back
    assert cluster_like.engine.live_bases() <= before


def test_held_back_data_read_in_a_loop_stays_here(cluster_like):
    data = numpy.random.default_rng(3).random((100, 100))
    grid = snp.array(data)  # held back until an instruction names it
    values = [grid[i, i] for i in range(100)]
    assert all(type(value) is numpy.float64 for value in values)
    assert values == list(numpy.diag(data)) and grid._base.id in cluster_like._deferred


def test_views_kept_of_a_held_base_see_the_work_that_names_it(cluster_like):
    grid = snp.array(_grid()) * 1.0
    expected = _grid() * 1.0
    _relax_rows(snp, grid, range(1, 99))
    _relax_rows(numpy, expected, range(1, 99))
    assert grid._base.id in cluster_like.held
    row, expected_row = grid[5], expected[5]  # NumPy's view of the held memory, kept
    grid *= 2.0  # recorded: the component runs it at once, and the values come back into the memory
    expected *= 2.0
    numpy.testing.assert_array_equal(row, expected_row)
    row[3] = -7.0  # written through the view: the base sees it, as NumPy's would
    expected_row[3] = -7.0
    assert float(grid.sum()) == float(expected.sum())
    numpy.testing.assert_array_equal(numpy.array(grid, copy=True), expected)
    del row
    grid += 1.0
    expected += 1.0
    numpy.testing.assert_array_equal(numpy.array(grid, copy=True), expected)


def test_boundary_writes_between_sweeps_stay_recorded(cluster_like):
    grid = snp.array(_grid()) * 1.0
    expected = _grid() * 1.0
    for _ in range(4):
        for field in (grid, expected):
            field[1:-1, 1:-1] = 0.25 * (field[:-2, 1:-1] + field[2:, 1:-1] + field[1:-1, :-2] + field[1:-1, 2:])
            for _side in range(3):  # twelve small writes: fewer than a loop of rows makes
                field[0, :] = -field[1, :]
                field[-1, :] = -field[-2, :]
                field[:, 0] = -field[:, 1]
                field[:, -1] = -field[:, -2]
    assert not cluster_like._taken_back and not cluster_like._mirrors
    numpy.testing.assert_array_equal(numpy.array(grid, copy=True), expected)


def test_a_loop_over_views_larger_than_a_row_stays_recorded(cluster_like, monkeypatch):
    monkeypatch.setattr(local_loops, "LOOP_ELEMENTS", 64)  # the rows below have 98 elements
    grid = snp.array(_grid()) * 1.0
    expected = _grid() * 1.0
    _relax_rows(snp, grid, range(1, 99))
    _relax_rows(numpy, expected, range(1, 99))
    assert not cluster_like._taken_back and not cluster_like._mirrors
    numpy.testing.assert_array_equal(numpy.array(grid, copy=True), expected)


def test_a_product_reading_a_fresh_matrix_reads_its_copy_at_once(cluster_like):
    matrix = snp.array(_grid()) * 2.0  # recorded: the product would have the ranks gather it
    expected = _grid() * 2.0
    vector = numpy.linspace(0.0, 1.0, 100)
    first = matrix @ vector
    assert matrix._base.id in cluster_like._mirrors  # one fetch, no recorded product
    numpy.testing.assert_array_equal(first, expected @ vector)
    for i in range(1, 20):
        numpy.testing.assert_array_equal(matrix[:, i] @ matrix[:, i:], expected[:, i] @ expected[:, i:])


def test_a_read_only_array_stays_read_only_in_a_loop(cluster_like):
    grid = snp.array(_grid()) + 1.0
    grid.flags.writeable = False
    expected = _grid() + 1.0
    total, expected_total = 0.0, 0.0
    for i in range(100):
        total += float(grid[i, :50].sum())  # a loop of small reads: the copy, then the base taken over
        expected_total += float(expected[i, :50].sum())
    assert total == expected_total
    assert grid._base.id in cluster_like.held or grid._base.id in cluster_like._mirrors
    with pytest.raises(ValueError, match="read-only"):
        grid[3, 3] = 0.0
    row = grid[5]
    with pytest.raises(ValueError, match="read-only"):
        row[0] = 1.0


def test_a_cast_in_a_local_loop_warns_at_the_caller_s_line(cluster_like):
    import warnings

    small = snp.zeros((100, 100), snp.float32) + 1.0
    for i in range(1, 60):  # taken back, then held
        small[i, :10] = small[i - 1, :10] * 1.5
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        small[2] = numpy.full(100, 1e300)  # overflows in the cast to float32, as under NumPy
    assert [(w.category, str(w.message), w.filename) for w in caught] == [(RuntimeWarning, "overflow encountered in cast", __file__)]
    assert numpy.isinf(numpy.array(small, copy=True)[2]).all()


def test_a_base_held_for_a_loop_hands_out_only_small_views(cluster_like, monkeypatch):
    monkeypatch.setattr(local_loops, "LOOP_ELEMENTS", 150)  # rows (100) are a loop's, ten rows are not
    grid = snp.array(_grid()) * 1.0
    expected = _grid() * 1.0
    _relax_rows(snp, grid, range(1, 99))
    _relax_rows(numpy, expected, range(1, 99))
    assert grid._base.id in cluster_like.held
    assert type(grid[5]) is numpy.ndarray  # NumPy's view of the held memory
    block = grid[:10]
    assert type(block) is snp.ndarray  # lazy: whole-array work on it is the ranks'
    numpy.testing.assert_array_equal(numpy.array(block * 2.0, copy=True), expected[:10] * 2.0)
