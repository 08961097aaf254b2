"""Functions that return views (``np.split``, ``np.atleast_2d``, ``np.rot90``, ``np.diag`` of a
matrix, ``np.unstack``, ``np.rollaxis``, ``sliding_window_view``) share memory with a lazy
argument, as NumPy's share it with theirs.

They ran on a copy: writes through the result were lost to the argument and the argument's later
writes to the result, flags and ``is`` differed. Each program runs on NumPy and on Shoal with every
array lazy and reports what sharing shows: values after writes on either side, flags, identity.
"""

from __future__ import annotations

import numpy
import pytest
from numpy.lib.stride_tricks import sliding_window_view

import shoal.numpy as snp


def plain(value):
    return numpy.asarray(value).tolist()


def windows(np):
    x = np.arange(20.0)
    w = sliding_window_view(x, 5)
    x[0] = -1
    try:
        w[0, 0] = 1
        error = None
    except ValueError as caught:
        error = str(caught)
    return [w.shape, w.strides, w.flags.writeable, plain(w[0]), error]


def rotated(np):
    m = np.zeros((3, 4))
    r = np.rot90(m)
    r[0, 0] = 5
    turned = np.rot90(m, 2, axes=(1, 0))
    m[1, 1] = 7
    return [plain(m), r.shape, plain(turned), bool(np.shares_memory(r, m))]


def pieces(np):
    x = np.zeros(12)
    a, _ = np.split(x, 2)
    a[0] = 1.0
    m = np.arange(24.0).reshape(4, 6)
    left, right = np.hsplit(m, [2])
    right[0, 0] = -5
    top, bottom = np.vsplit(m, 2)
    return [plain(x), [p.shape for p in np.array_split(x, 5)], plain(m), plain(top), bottom.shape, left.shape]


def at_least(np):
    m = np.zeros((3, 4))
    v = np.atleast_2d(m)
    v[0, 0] = 1.0
    x = np.arange(4.0)
    row = np.atleast_2d(x)
    row[0, 1] = 9
    both = np.atleast_3d(x, m)
    return [v is m, plain(m), plain(x), row.shape, [t.shape for t in both], np.atleast_1d(x) is x]


def diagonals_and_axes(np):
    m = np.arange(12.0).reshape(3, 4)
    d = np.diag(m, 1)
    m[0, 1] = 50.0
    rows = np.unstack(m)
    rows[2][3] = -1.0
    rolled = np.rollaxis(m.reshape(3, 2, 2), 2)
    rolled[0, 0, 0] = 99.0
    scalars = np.unstack(np.arange(3.0) * 2)  # a vector unstacks into scalars, read at once
    return [plain(d), d.flags.writeable, plain(m), rolled.shape, len(rows), [float(value) for value in scalars]]


def stacked(np):
    x = np.arange(6.0)
    m = x.reshape(2, 3)
    return [plain(np.vstack([m, m])), plain(np.hstack([x, x])), plain(np.column_stack([x, x])), plain(np.dstack([m, m]))]


@pytest.mark.parametrize("program", [windows, rotated, pieces, at_least, diagonals_and_axes, stacked], ids=lambda p: p.__name__)
def test_view_functions_share_memory_as_numpys(every_array_lazy, program):
    assert program(snp) == program(numpy)


@pytest.mark.parametrize(
    "call",
    [lambda np: np.split(np.zeros(12), 5), lambda np: np.rot90(np.zeros(12)), lambda np: np.rot90(np.zeros((3, 4)), axes=(0, 0))],
    ids=["unequal_split", "rot90_of_a_vector", "rot90_same_axes"],
)
def test_their_errors_are_numpys(every_array_lazy, call):
    with pytest.raises(ValueError) as expected:
        call(numpy)
    with pytest.raises(ValueError) as got:
        call(snp)
    assert str(got.value) == str(expected.value)
