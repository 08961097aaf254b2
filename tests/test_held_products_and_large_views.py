"""Products and large views of bases held in NumPy memory (``shoal/held.py``): a product of
held bases is NumPy's call on the held memory; a view of the settled threshold or more goes back
to lazy work unless NumPy views of the memory are alive or it is updated in place; a product with
a small result reads a large view in place and leaves the base held. Each program runs on NumPy
and on Shoal (``lazy``: every array lazy on the node engine, as in ``tests/test_held.py``)."""

from __future__ import annotations

import warnings

import numpy
import pytest
from test_held import gauss_seidel, same

import shoal.numpy as snp
from shoal import held


@pytest.fixture
def lazy(held_on_node):
    return held_on_node


def test_products_of_held_bases_are_numpys(lazy, monkeypatch):
    """``a @ v``, ``v @ a``, ``np.dot`` and ``np.matmul`` of held bases are NumPy's calls on the
    held memory: values, dtypes, shape errors and overflow warnings (at the caller's line) as
    NumPy's, nothing recorded or settled on the way."""
    from shoal.numpy import _linalg

    def program(np):
        grid = np.arange(144.0).reshape(12, 12) / 7.0
        ints = np.arange(144).reshape(12, 12)
        gauss_seidel(np, grid, 1)
        for i in range(12):
            ints[i, 0] = ints[i, 1]
        v = numpy.linspace(0.0, 1.0, 12)  # NumPy's: the products read held memory only
        results = [grid @ v, v @ grid, np.dot(grid, v), np.matmul(grid, grid), grid @ ints, ints @ ints, np.dot(ints, 2)]
        with pytest.raises(ValueError) as error:
            grid @ numpy.ones(5)
        results.append(str(error.value))
        with pytest.raises(ValueError) as error:
            np.dot(grid, numpy.ones(5))
        results.append(str(error.value))
        return results

    expected = program(numpy)
    monkeypatch.setattr(_linalg, "settled_product", lambda *args: pytest.fail("settled, not held"))
    got = program(snp)
    assert lazy.held
    same(expected[:-2], got[:-2])
    assert got[-2:] == expected[-2:]

    big = snp.full((4, 4), 1e300)
    for i in range(4):
        big[i, 0] = big[i, 1]
    assert big._base.id in lazy.held
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        big @ big  # overflows, as under NumPy
        snp.dot(big, big)
    assert [(w.category, str(w.message), w.filename) for w in caught] == [
        (RuntimeWarning, "overflow encountered in matmul", __file__),
        (RuntimeWarning, "overflow encountered in dot", __file__),
    ]


def test_a_large_view_of_a_held_base_goes_back_to_lazy_work(lazy):
    """A boundary loop of small column writes holds a grid; the stencil after it takes views of
    most of the grid. Those views are lazy (the stencil's recorded work hands the base back), not
    NumPy views of the held memory, which lazy work would copy into every batch; with a NumPy row
    of the memory still alive the view is NumPy's. Values are NumPy's throughout."""
    from shoal.numpy._held_indexing import held_memory

    def program(np, watch=None):
        grid = np.arange(400.0).reshape(20, 20) * 0.5
        for _ in range(6):
            for j in (0, -1):
                grid[:, j] = 2.0 * grid[:, j + 1 if j == 0 else j - 1]
        held_before = watch is not None and held_memory(grid) is not None
        inner = grid[1:-1, 1:-1]
        smoothed = 0.25 * (grid[:-2, 1:-1] + grid[2:, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:])
        if watch is not None:
            watch += [held_before, type(inner) is snp.ndarray, held_memory(grid) is None]
        row = grid[3, 1:5]  # kept: a NumPy view once the base is held again
        for _ in range(6):
            for j in (0, -1):
                grid[:, j] = grid[:, j] + 1.0
        kept_view = grid[:-2, :]
        if watch is not None:
            watch.append((type(kept_view) is numpy.ndarray) == (type(row) is numpy.ndarray))
        return [inner, smoothed, row, kept_view, grid]

    watch: list[bool] = []
    expected = program(numpy)
    got = program(snp, watch)
    same(expected, got)
    assert watch == [True, True, True, True]


def test_a_large_view_updated_in_place_stays_numpys(lazy):
    """``a[k + 1:, k + 1:] -= np.outer(...)`` (an LU step) reads its large target view only to
    update it in place with NumPy data: that view stays NumPy's view of the held memory, so the
    loop stays in NumPy instead of handing the base back every step."""
    from shoal.numpy._held_indexing import held_memory

    def program(np, watch=None):
        a = np.arange(400.0).reshape(20, 20) % 7.0 + np.eye(20) * 20.0
        for k in range(12):
            a[k + 1 :, k] /= a[k, k]
            a[k + 1 :, k + 1 :] -= np.outer(a[k + 1 :, k], a[k, k + 1 :])
            if watch is not None and k >= 8:
                watch.append(held_memory(a) is not None)
        return [a]

    watch: list[bool] = []
    expected = program(numpy)
    got = program(snp, watch)
    same(expected, got)
    assert watch == [True] * 4


def test_a_large_view_read_by_a_product_with_a_small_result_leaves_the_base_held(lazy, monkeypatch):
    """A triangular matrix product's row loop, ``p = a[i + 1:, i] @ b[i + 1:]`` then ``b[i] += p``:
    the large view is lazy but its base stays held, and the product reads the held memory at
    once; the base is not handed back and held again every row (about 3x NumPy's time a row)."""
    from shoal.numpy._held_indexing import held_memory

    holds: list[int] = []
    original = held.hold
    monkeypatch.setattr(held, "hold", lambda runtime, base, memory: holds.append(base.id) or original(runtime, base, memory))

    def program(np, watch=None):
        a = np.tril(np.arange(1200.0).reshape(40, 30) % 7.0, -1)
        b = np.arange(1200.0).reshape(40, 30) * 0.25
        for i in range(30):
            p = a[i + 1 :, i] @ b[i + 1 :]
            b[i] += p
            if watch is not None and i == 29:
                watch.append(held_memory(b) is not None)
        return [b, a]

    watch: list[bool] = []
    expected = program(numpy)
    got = program(snp, watch)
    same(expected, got)
    assert watch == [True]
    assert len(holds) <= 3, holds  # each base held once (a, b; a fresh result at most once more)


def test_a_matrix_read_whole_by_products_is_held_within_a_few_steps(lazy, monkeypatch):
    """BiCG's loop (``q = a @ p; s = r @ a``) reads the whole settled matrix in every product:
    such a read counts as several settled accesses (``HEAVY_READ_WEIGHT``), so the matrix is held
    after a few steps rather than after 16 (each step ran the products on the settled path at
    about 1.5x NumPy's time before the hold)."""
    from shoal.numpy._held_indexing import held_memory

    def program(np, watch=None):
        a = np.arange(400.0).reshape(20, 20) % 7.0 + 1.0
        p = numpy.ones(20)
        r = numpy.linspace(0.5, 1.5, 20)
        for _ in range(6):
            q = a @ p
            s = r @ a
            p = s / numpy.sqrt(s @ s)
            r = q / numpy.sqrt(q @ q)
            if watch is not None:
                watch.append(held_memory(a) is not None)
        return [p, r, a]

    watch: list[bool] = []
    same(program(numpy), program(snp, watch))
    assert all(watch[1:]), watch  # held from the second step (the third before)
