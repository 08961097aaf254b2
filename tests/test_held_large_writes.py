"""Large lazy work written into a held base: recorded into the base, not read out and copied in
(``lazy``: tests/held_fixtures.py, on the node engine and on the reference engine).

Reading one element of a fresh result holds its base (``shoal/held.py``); a whole-array write
into it afterwards (``b[1:-1] = (a[:-2] + a[1:-1] + a[2:]) / 3``) was NumPy's store of the lazy
value, which read the value out into a new array first. The write is now recorded and the base
goes back to the engine; values, dtypes, casts and errors stay NumPy's, also with a NumPy view of
the held memory alive.
"""

from __future__ import annotations

import numpy
import pytest
from test_held import same

import shoal.numpy as snp
from shoal.numpy._held_indexing import held_memory


def jacobi_1d(np, size: int, steps: int, watch: list | None = None):
    a = np.arange(float(size)) % 13.0
    b = a.copy()
    first = b[0]  # an element read: ``b`` is held from here on
    if watch is not None:
        watch.append(held_memory(b) is not None)
    for _ in range(steps):
        b[1:-1] = (a[:-2] + a[1:-1] + a[2:]) / 3.0
        if watch is not None:
            watch.append(held_memory(b) is None)
        a[1:-1] = (b[:-2] + b[1:-1] + b[2:]) / 3.0
    return [first, a, b]


def test_a_large_lazy_value_written_into_a_held_base_is_recorded(lazy, monkeypatch):
    reads: list[int] = []
    read = lazy.read

    def counted(view):
        reads.append(view.size)
        return read(view)

    monkeypatch.setattr(lazy, "read", counted)
    watch: list[bool] = []
    got = jacobi_1d(snp, 1000, 3, watch)
    large_reads = [size for size in reads if size >= 64]
    same(jacobi_1d(numpy, 1000, 3), got)
    assert watch[0] and all(watch[1:])  # held, then handed back by each recorded write
    assert not large_reads  # no large value read out of the engine


def test_a_numpy_view_of_the_held_memory_sees_the_recorded_write(lazy):
    def program(np):
        source = np.arange(300.0).reshape(3, 100) * 0.5
        grid = source * 1.0
        first = grid[0, 0]  # held
        row = grid[1]  # a NumPy view of the held memory once held: kept alive
        grid[:, 1:] = source[:, :-1] + source[:, 1:]
        return [first, row.copy(), grid, source]

    same(program(numpy), program(snp))


@pytest.mark.parametrize(("target", "value"), [("float32", "float64"), ("int64", "float64"), ("float64", "int32")])
def test_casts_of_a_large_lazy_value_into_held_memory_are_numpys(lazy, target, value):
    def program(np):
        out = np.zeros(500, dtype=target)
        first = out[0]  # held
        source = np.arange(500, dtype=value) * 3
        out[:] = source + 1
        return [first, out]

    same(program(numpy), program(snp))


def test_a_large_lazy_value_of_the_wrong_shape_raises_numpys_error(lazy):
    def attempt(np):
        out = np.zeros(200)
        out[0]  # held
        with pytest.raises(ValueError) as raised:
            out[:100] = np.arange(200.0) * 2.0
        return str(raised.value)

    assert attempt(snp) == attempt(numpy)
