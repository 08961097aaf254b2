"""Values that alias the array they come from (or must not), as NumPy's do.

Found by trying in-place and aliasing idioms at lazy sizes: ``a[::2].ravel()`` was a view (a
write through it changed ``a``; NumPy copies) and ``m.T.ravel(order="K")`` a copy (NumPy views
memory order); iterating a vector read a snapshot taken at the start of the loop, so writes
ahead of the loop were missed; a Generator method drawing into a lazy ``out`` without a size
filled it with one value, and skipped NumPy's checks of ``out``; ``x[()]`` of a held array
raised IndexError; reshaping a non-contiguous small view raised an internal AttributeError;
``np.nditer`` iterated a copy (``readwrite`` writes lost); ``np.array(a, copy=False)`` copied
where NumPy refuses.
Each program runs on NumPy and on Shoal with every array lazy.
"""

from __future__ import annotations

import numpy
import pytest

import shoal.numpy as snp
from shoal import held, runtime


def outcome(function):
    try:
        value = function()
    except Exception as error:
        return type(error).__name__, str(error)
    return numpy.asarray(value).tolist() if hasattr(value, "shape") else value


def ravelled(np):
    a = np.zeros(20)
    r = a[::2].ravel()
    r[0] = 5
    m = np.zeros((4, 5))
    k = m.T.ravel(order="K")
    k[0] = 1.0
    c = m.ravel()
    c[1] = 2.0
    t = m.T.ravel()
    t[2] = 3.0
    backwards = m[:, ::-1].ravel(order="K")
    return [plain(a), plain(m), bool(np.shares_memory(k, m)), bool(np.shares_memory(t, m)), bool(np.shares_memory(backwards, m))]


def iterated(np):
    a = np.zeros(10)
    seen = []
    for i, x in enumerate(a):
        seen.append(float(x))
        if i < 9:
            a[i + 1] = i + 5
    return [seen, type(x).__name__]


def drawn(np):
    rng = np.random.default_rng(0)
    a = np.zeros(40)
    rng.random(out=a)
    first = plain(a)
    rng.standard_normal(out=a)
    b = np.zeros((5, 8))
    rng.random(out=b.T)
    single = np.zeros(40, np.float32)
    rng.random(dtype=np.float32, out=single)
    errors = [
        outcome(lambda: rng.random(out=a[::2])),
        outcome(lambda: rng.random(out=np.zeros(40, np.int64))),
        outcome(lambda: rng.random(out=single)),
        outcome(lambda: rng.random(5, out=a)),
    ]
    return [first, plain(a), plain(b), plain(single), errors, rng.random()]


def indexed_whole(np):
    x = np.zeros(30) + 1
    x[0]
    for i in range(20):
        x[i % 5]  # held by now
    return [x[()].shape, float(x[()].sum()), plain(x[(Ellipsis,)])]


def reshaped_views(np):
    b = np.arange(40.0).reshape(5, 8) * 1
    for i in range(20):
        b[i % 5, 0]
    return [plain(b[:, :4].reshape(-1)), plain(np.ravel(b[::2])), plain(b[:, ::2].ravel())]


def iterated_by_nditer(np):
    a = np.zeros(20)
    with np.nditer(a, op_flags=["readwrite"]) as it:
        for x in it:
            x[...] = 5
            break
    b = np.ones(20)
    with np.nditer(b, op_flags=["readwrite"]) as it:
        for x in it:
            x[...] = 2 * x
    c = np.zeros(20)
    it = np.nditer([c], op_flags=[["writeonly"]])
    it[0] = 1
    return [plain(a), plain(b), plain(c), sum(1 for _ in np.nditer(np.arange(20.0)[:10]))]


def copies_refused(np):
    a = np.zeros(20)
    return [
        outcome(lambda: np.array(a, dtype=np.float32, copy=False)),
        outcome(lambda: np.array(a.reshape(4, 5), order="F", copy=False)),
        np.array(a, copy=False) is a,
        outcome(lambda: np.array(a.reshape(4, 5).T, order="F", copy=False).shape),
    ]


def plain(value):
    return numpy.asarray(value).tolist()


@pytest.mark.parametrize("program", [ravelled, iterated, drawn, iterated_by_nditer, copies_refused], ids=lambda p: p.__name__)
def test_aliasing_is_numpys(every_array_lazy, program):
    assert program(snp) == program(numpy)


@pytest.fixture
def holding(monkeypatch):
    """Every array lazy; small views of settled bases computed at once, bases held after 4."""
    monkeypatch.setattr(held, "HOLD_RUN", 4)
    with runtime.configure(engine="node", eager_threshold=0, settled_threshold=64) as rt:
        yield rt


@pytest.mark.parametrize("program", [indexed_whole, reshaped_views, ravelled, iterated], ids=lambda p: p.__name__)
def test_aliasing_of_held_and_settled_arrays_is_numpys(holding, program):
    assert program(snp) == program(numpy)


def fortran_orders(np):
    b = np.arange(12.0).reshape(3, 4) * 1
    f = b.copy(order="F")
    t = (np.arange(12.0).reshape(4, 3) * 1).T.copy(order="F")
    return [
        f.flags["F_CONTIGUOUS"],
        f.strides,
        np.array(b, order="F").strides,
        plain(f.ravel(order="A")),
        plain(f.ravel(order="F")),
        f.tobytes(order="A"),
        t.tobytes(order="K"),
        np.copy(b.T, order="K").strides,
        b.T.copy(order="A").strides,
        b.T.copy().strides,
        outcome(lambda: b.copy(order="X")),
    ]


def test_fortran_order_is_numpys(every_array_lazy):
    assert fortran_orders(snp) == fortran_orders(numpy)
