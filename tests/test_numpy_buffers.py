"""``bytes(a)`` and ``np.frombuffer(a)`` of lazy arrays, as NumPy gives them for its arrays.

A lazy array has no buffer protocol (Python 3.11 offers it to C types alone): ``bytes(a)``
iterated the array and raised, and NumPy's ``frombuffer`` refused it. Each case runs on NumPy
and on Shoal with every array lazy.
"""

from __future__ import annotations

import collections

import numpy
import pytest

import shoal.numpy as snp
from shoal import runtime
from shoal.errors import ShoalFallbackWarning
from shoal.numpy import _buffers, _dispatch


@pytest.fixture
def lazy():
    with runtime.configure(engine="node", eager_threshold=0) as rt:
        yield rt


def test_bytes_are_numpys_in_c_order(lazy):
    def program(np):
        grid = np.arange(24.0).reshape(4, 6) * 3
        return [bytes(grid), bytes(grid[:, ::2]), bytes(grid.T), bytes(grid.sum()), bytes(grid.astype(np.int16))]

    assert program(snp) == program(numpy)


def test_frombuffer_shares_memory_both_ways(lazy):
    def program(np):
        values = np.arange(12.0) * 2
        flat = np.frombuffer(values)
        as_ints = np.frombuffer(values, dtype=np.int64, count=4, offset=16)
        values[0] = -1.0
        flat[1] = 7.0
        return [flat.tolist(), as_ints.tolist(), numpy.asarray(values).tolist(), flat.flags.writeable, type(flat).__name__]

    assert program(snp) == program(numpy)


def test_frombuffer_of_a_strided_array_raises_numpys_error(lazy):
    with pytest.raises(ValueError) as expected:
        numpy.frombuffer(numpy.arange(12.0).reshape(3, 4)[:, ::2])
    with pytest.raises(ValueError) as got:
        snp.frombuffer((snp.arange(12.0) * 1).reshape(3, 4)[:, ::2])
    assert str(got.value) == str(expected.value)


def test_frombuffer_of_bytes_is_numpys():
    assert snp.frombuffer(b"\x01\x00\x02\x00", dtype=numpy.int16).tolist() == [1, 2]


def test_frombuffer_where_memory_cannot_be_held_warns_and_copies(lazy, monkeypatch):
    monkeypatch.setattr(_buffers, "held_memory", lambda array: None)
    monkeypatch.setattr(_dispatch, "FALLBACKS", collections.Counter())
    with pytest.warns(ShoalFallbackWarning, match="frombuffer of a lazy array"):
        values = snp.frombuffer(snp.arange(4.0) * 2)
    assert values.tolist() == [0.0, 2.0, 4.0, 6.0]
