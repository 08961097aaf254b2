"""Which array owns its memory, and ``ndarray.resize``, which needs an owner: each program run on
NumPy and on Shoal with every array lazy.

``a.resize(n)`` of a lazy array ran NumPy's resize on a copy and wrote the copy back into the old
shape (a ``ValueError`` about broadcasting); copies in Fortran order (``copy(order="F")``,
``np.array(a, order="F")``) and the copies ``flatten`` and ``ravel`` make were views of a
temporary (``.base`` not ``None``, ``flags.owndata`` false); ``astype(order="F")`` ignored the
order.
"""

from __future__ import annotations

import numpy
import pytest

import shoal.numpy as snp


def outcome(function):
    try:
        value = function()
    except Exception as error:
        return type(error).__name__, str(error)
    if hasattr(value, "shape"):
        return numpy.asarray(value).tolist(), str(value.dtype), value.shape, value.strides
    return value


def resized(np):
    a = np.arange(40) * 1
    a.resize(45)
    b = np.arange(48.0).reshape(6, 8) * 1
    b.resize((3, 4))
    c = np.arange(6).reshape(2, 3) * 1
    c.resize(2, 5)
    f = np.asfortranarray(np.arange(6).reshape(2, 3) * 1)
    f.resize(3, 3)  # Fortran order stays: the elements keep their order in memory
    same = np.arange(12).reshape(3, 4) * 1
    same.resize(4, 3)
    view = np.arange(40) * 1
    row = view[2:]
    named = np.arange(40) * 1
    other = named
    free = np.arange(40) * 1
    free_view = free[:3]
    free.resize(50, refcheck=False)
    return [outcome(lambda: a), outcome(lambda: b), outcome(lambda: c), outcome(lambda: f), outcome(lambda: same),
            outcome(lambda: row.resize(3)), outcome(lambda: view.resize(50)), (outcome(lambda: named.resize(50)), other is named),
            outcome(lambda: free), free_view.shape, outcome(lambda: np.arange(40)[::2].copy().T[::2].resize(5)),
            outcome(lambda: (np.arange(40) * 1).resize(-1)), outcome(lambda: (np.arange(40) * 1).resize((2,), 3)),
            (np.arange(40) * 1).resize(), (np.arange(40) * 1).resize(None)]  # fmt: skip


def owners(np):
    a = np.arange(48.0).reshape(6, 8) * 1
    made = [a.copy(order="F"), a.T.copy(order="K"), a.T.copy(order="A"), np.array(a, order="F"), np.copy(a, order="F"),
            a.flatten(), a.flatten("F"), a.T.ravel(), a.astype(np.float32, order="F"), a.T.astype(np.int64), np.asfortranarray(a)]  # fmt: skip
    return [(m.base is None, m.flags.owndata, m.flags.c_contiguous, m.flags.f_contiguous, m.strides, m.dtype.name) for m in made]


@pytest.mark.parametrize("program", [resized, owners], ids=lambda p: p.__name__)
def test_ownership_and_resize_are_numpys(every_array_lazy, program):
    assert program(snp) == program(numpy)
