"""Gathers and scatters through lazy index arrays and small-result products, computed by NumPy
at once on the component's memory (``_indexed.py``, ``settled_product`` in ``_settled.py``).

Every case runs the same program on NumPy and on Shoal (every array lazy, the node engine and
the reference engine, which offers no memory and so records everything) and compares every
value read, its type and dtype, and the errors. Adversarial cases: masks and indices computed
by work still pending, values read from the base being written, duplicate indices, negative
indices, out-of-bounds indices, wrong mask shapes, casts, and the switch between the path in
memory and the recorded one (settled views off, an operand with pending writes, a result above
the threshold).
"""

from __future__ import annotations

import math

import numpy
import pytest

import shoal.numpy as snp
from shoal import runtime
from shoal.settled_memory import PRODUCT_READ_FACTOR

ENGINES = ["node", "reference"]


@pytest.fixture(params=ENGINES)
def lazy(request, monkeypatch):
    """Every array lazy, long batches; views under 16 elements are settled views."""
    monkeypatch.setenv("SHOAL_COMPILE", "off")
    with runtime.configure(engine=request.param, eager_threshold=0, flush_threshold=4096, settled_threshold=16) as rt:
        yield rt


def same(program):
    """``program`` on NumPy and on Shoal give the same reads (values, shapes, dtypes)."""
    expected, got = program(numpy), program(snp)
    assert len(expected) == len(got)
    for want, have in zip(expected, got):
        have_array, want_array = numpy.asarray(have), numpy.asarray(want)
        assert have_array.dtype == want_array.dtype
        assert have_array.shape == want_array.shape
        numpy.testing.assert_array_equal(have_array, want_array)


def same_error(program):
    """``program`` raises the same exception type and message on NumPy and on Shoal."""
    with pytest.raises(Exception) as expected:
        program(numpy)
    with pytest.raises(type(expected.value)) as got:
        program(snp)
    assert str(got.value) == str(expected.value)


def test_escape_time_masks_update_in_place(lazy):
    def program(np):
        c = np.linspace(-2.0, 0.6, 40).reshape(5, 8) + 1j * np.linspace(-1.3, 1.3, 40).reshape(5, 8)
        z = np.zeros_like(c)
        counts = np.zeros(c.shape)
        for _ in range(6):
            m = np.abs(z) <= 2.0
            z[m] = z[m] ** 2 + c[m]
            counts[m] += 1.0
        return [z, counts, counts.sum()]

    same(program)


def test_mask_computed_by_pending_work_sees_that_work(lazy):
    def program(np):
        a = np.arange(30.0).reshape(5, 6)
        a[1:3] = a[1:3] * -1.0  # a write still pending when the mask is made
        m = a > 4.0
        gathered = a[m]
        a[m] = a[m] - 100.0  # the value reads the base being written
        return [gathered, a, a[a < -50.0]]

    same(program)


def test_integer_index_arrays_gather_and_scatter(lazy):
    def program(np):
        x = np.arange(12.0) * 1.5
        indices = (np.arange(40) * 7) % 12
        gathered = x[indices]
        y = np.zeros(12)
        y[indices] = np.arange(40.0)  # duplicates: the last value written wins, as in NumPy
        negative = x[indices - 12]
        table = np.arange(24).reshape(4, 6)
        rows = np.arange(4)[::-1]
        return [gathered, y, negative, table[rows], table[rows, 2:], table[:, rows]]

    same(program)


@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "uint32", "uint64", "uint8"])
def test_gathers_by_one_index_array_of_any_integer_dtype(lazy, monkeypatch, dtype):
    """One integer index array over the first axis is NumPy's ``take`` along it where that casts
    the index safely (not ``uint64``): the same values, shapes and dtypes either way."""
    taken: list[int] = []
    take = numpy.take

    def counting(*args, **kwargs):
        taken.append(1)
        return take(*args, **kwargs)

    monkeypatch.setattr(numpy, "take", counting)

    def program(np):
        x = np.arange(30.0).reshape(10, 3) * 0.5
        indices = (np.arange(40) * 7 % 10).astype(dtype)
        return [x[indices], x[indices[::3]], x[indices.reshape(5, 8)], x[:, 0][indices], x[(indices,)]]

    same(program)
    assert bool(taken) == (lazy.offers_memory() and dtype != "uint64")


@pytest.mark.parametrize("source", ["empty", "first_of_several", "negative"])
def test_gather_errors_are_numpy_errors(lazy, source):
    def program(np):
        if source == "empty":
            return np.zeros((0, 3))[np.arange(2)]
        if source == "first_of_several":  # the first index out of bounds is the one named
            return (np.arange(10.0) * 2.0)[np.arange(12)[::-1] + np.zeros(12, dtype=np.int64)]
        return (np.arange(10.0) * 2.0)[np.arange(3) - 12]

    same_error(program)


def test_scatter_casts_as_numpy(lazy):
    def program(np):
        a = np.zeros(20, dtype=np.int32)
        m = np.arange(20) % 3 == 0
        a[m] = np.arange(7) * 2.75  # float into int32: truncated, no error (same_kind on assignment)
        b = np.zeros(20, dtype=np.float32)
        b[m] = 3
        return [a, b]

    same(program)


@pytest.mark.parametrize(
    "case",
    ["out_of_bounds", "negative_out_of_bounds", "mask_shape", "value_count", "float_index"],
)
def test_index_errors_are_numpy_errors(lazy, case):
    def program(np):
        a = np.arange(20.0)
        if case == "out_of_bounds":
            return a[np.arange(5) * 6]
        if case == "negative_out_of_bounds":
            a[np.arange(3) - 25] = 1.0
        if case == "mask_shape":
            return a[np.arange(10) > 4]
        if case == "value_count":
            a[np.arange(20) > 4] = np.arange(3.0)
        if case == "float_index":
            return a[np.arange(4) * 1.0]
        return a

    same_error(program)


def test_a_scalar_lazy_index_keeps_numpy_view_semantics(lazy):
    """A reduction's result stands for a NumPy scalar and indexes like an integer (a view)."""

    def program(np):
        a = np.arange(12.0).reshape(3, 4)
        i = np.sum(np.arange(2))  # 1: a NumPy scalar (lazy and 0-d under Shoal)
        row = a[i]
        a[1, 0] = -5.0
        return [row, a]

    same(program)


def test_settled_views_off_records_the_same_program(monkeypatch):
    monkeypatch.setenv("SHOAL_COMPILE", "off")

    def program(np):
        x = np.arange(50.0)
        m = x % 4 == 1
        x[m] = x[m] * 2.0
        return [x, x[(np.arange(10) * 3) % 50]]

    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=4096, settled_threshold=0):
        same(program)


def test_gathers_in_memory_skip_the_index_fetch(monkeypatch):
    """With settled views on, a gather through a lazy mask reads the mask in the engine's
    memory: the node engine fetches nothing (the recorded path fetches the mask)."""
    monkeypatch.setenv("SHOAL_COMPILE", "off")
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=4096, settled_threshold=16) as rt:
        a = snp.arange(100.0)
        m = a > 50.0
        fetched = []
        original = rt.engine.fetch
        monkeypatch.setattr(rt.engine, "fetch", lambda view: fetched.append(view) or original(view))
        result = a[m]
        assert fetched == []
        numpy.testing.assert_array_equal(numpy.asarray(result), numpy.arange(51.0, 100.0))


def test_products_with_small_results_read_settled_operands(lazy):
    def program(np):
        a = np.arange(64.0).reshape(8, 8) / 10.0
        p = np.arange(8.0)
        reads = []
        for _ in range(3):
            q = a @ p  # a matrix of 64 elements, a result of 8: at once in memory
            s = p @ a
            p = s / np.sqrt(s @ s)
            reads += [q, s, np.dot(a, q), a[2:, 1:] @ p[1:]]
        a[3] = a[3] * 2.0  # pending write on the matrix: the next product is recorded
        reads.append(a @ p)
        reads.append(a @ a)  # a result of 64 elements: recorded
        return reads

    same(program)


def test_product_errors_are_numpy_errors(lazy):
    def program(np):
        a = np.arange(12.0).reshape(3, 4)
        return a @ np.arange(3.0)

    same_error(program)


def test_a_matrix_product_with_a_large_operand_stays_recorded(monkeypatch):
    """Beyond ``PRODUCT_READ_FACTOR`` times the settled threshold the product is recorded."""
    monkeypatch.setenv("SHOAL_COMPILE", "off")
    n = math.isqrt(4 * PRODUCT_READ_FACTOR) + 1  # an n x n matrix is over the limit
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=4096, settled_threshold=4) as rt:
        a = snp.arange(float(n * n)).reshape(n, n)
        v4, vn = snp.arange(4.0), snp.arange(float(n))
        float(a[0, 0] + v4[0] + vn[0])
        before = rt.stats.instructions + len(rt._pending.instructions)
        small = a[:2, :4] @ v4  # 8 elements read, 2 written: at once
        assert rt.stats.instructions + len(rt._pending.instructions) == before
        large = a @ vn  # n * n elements read, over the limit: recorded
        assert rt.stats.instructions + len(rt._pending.instructions) > before
        expected = numpy.arange(float(n * n)).reshape(n, n)
        numpy.testing.assert_array_equal(numpy.asarray(small), expected[:2, :4] @ numpy.arange(4.0))
        numpy.testing.assert_array_equal(numpy.asarray(large), expected @ numpy.arange(float(n)))


def test_outer_products_and_large_broadcasts_of_small_views(lazy):
    def program(np):
        a = np.arange(48.0).reshape(6, 8) + 10.0 * np.eye(6, 8)
        for k in range(3):  # LU's update: the outer product of a column and a row
            a[k + 1 :, k] /= a[k, k]
            a[k + 1 :, k + 1 :] -= np.outer(a[k + 1 :, k], a[k, k + 1 :])
        small = np.outer(np.arange(3.0), [1, 2])
        return [a, small, a[0, :3][:, None] * a[1, :2][None, :]]

    same(program)


def test_small_views_broadcasting_to_large_work_are_recorded(monkeypatch):
    monkeypatch.setenv("SHOAL_COMPILE", "off")
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=4096, settled_threshold=16) as rt:
        column, row = snp.arange(10.0), snp.arange(10.0) * 2.0
        float(column[0] + row[0])
        before = rt.stats.instructions + len(rt._pending.instructions)
        same_shape = column[:5] + row[:5]  # 5 elements: computed at once
        assert rt.stats.instructions + len(rt._pending.instructions) == before
        product = column[:, None] * row[None, :]  # 100 elements from two 10-element views: recorded
        assert rt.stats.instructions + len(rt._pending.instructions) > before
        numpy.testing.assert_array_equal(numpy.asarray(same_shape), numpy.arange(5.0) * 3.0)
        numpy.testing.assert_array_equal(numpy.asarray(product), numpy.outer(numpy.arange(10.0), numpy.arange(10.0) * 2.0))
