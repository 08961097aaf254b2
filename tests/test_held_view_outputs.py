"""A NumPy view of a held base as a lazy operation's output (``shoal/numpy/_held_views.py``).

Indexing a held base gives NumPy's views of the engine's memory; ``view -= lazy`` then records
on the held base instead of copying the view in and the result out. Each program runs on NumPy
and on Shoal and every value read is compared; the cases that could go wrong: the right-hand
side overlapping the written view, views of another dtype, a view of a second held base as an
input, a view kept by the program, and the copies that must not happen.
"""

from __future__ import annotations

import numpy
import pytest

import shoal.numpy as snp
from shoal import held, runtime
from shoal.numpy import _lazy


@pytest.fixture(params=["node", "reference"])
def lazy(monkeypatch, request):
    """Every array lazy; a base is held after 4 settled accesses in a row."""
    monkeypatch.setenv("SHOAL_COMPILE", "off")
    monkeypatch.setattr(held, "HOLD_RUN", 4)
    with runtime.configure(engine=request.param, eager_threshold=0, flush_threshold=4096, settled_threshold=64) as rt:
        yield rt


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
    view = a[:, 1:]
    assert type(view) is numpy.ndarray  # held: NumPy's view of the engine's memory
    got = _program(snp)
    _assert_same(expected, got)


def test_the_view_is_written_where_it_lies_and_nothing_is_copied(lazy, monkeypatch):
    copies = []
    original = _lazy.from_numpy
    monkeypatch.setattr(_lazy, "from_numpy", lambda value, copy=True: copies.append(value.shape) or original(value, copy))
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
