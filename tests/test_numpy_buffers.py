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
from shoal.numpy import _dispatch, _held_indexing


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
    monkeypatch.setattr(_held_indexing, "held_memory", lambda array: None)
    monkeypatch.setattr(_dispatch, "FALLBACKS", collections.Counter())
    with pytest.warns(ShoalFallbackWarning, match="frombuffer of a lazy array"):
        values = snp.frombuffer(snp.arange(4.0) * 2)
    assert values.tolist() == [0.0, 2.0, 4.0, 6.0]


def test_the_array_interface_gives_numpy_an_array_of_its_own(lazy):
    grid = (snp.arange(24.0).reshape(4, 6) * 3)[:, 1:5]
    interface = grid.__array_interface__
    assert (interface["shape"], interface["typestr"]) == ((4, 4), "<f8")
    converted = numpy.asarray(grid)  # NumPy's own conversion reads the interface first
    expected = (numpy.arange(24.0).reshape(4, 6) * 3)[:, 1:5]
    del grid, interface
    numpy.testing.assert_array_equal(converted, expected)  # its memory outlives the lazy array
    assert converted.flags.writeable


def test_the_array_interface_of_a_read_only_array_is_read_only(lazy):
    values = snp.arange(8.0) * 2
    values.flags.writeable = False
    assert not numpy.asarray(values).flags.writeable


def test_pillow_makes_an_image_of_a_lazy_array(lazy):
    image = pytest.importorskip("PIL.Image")

    def pixels(np):
        rgb = (np.linspace(0, 1, 40 * 30 * 3).reshape(40, 30, 3) * 255).astype(np.uint8)
        made = image.fromarray(rgb)
        return made.size, made.mode, made.tobytes()

    assert pixels(snp) == pixels(numpy)


def test_the_array_interface_of_a_zero_dimensional_result_has_no_axes(lazy):
    total = (snp.arange(6.0) * 2).sum()
    assert numpy.asarray(total).shape == ()
    assert numpy.asarray(total) == 30.0
