"""``a.item(...)`` of lazy arrays: NumPy's values, types and errors, reading only the element."""

from __future__ import annotations

import math

import numpy
import pytest

import shoal.numpy as snp
from shoal import held, runtime

SHAPES = [(5,), (3, 4), (2, 3, 4)]


def _arguments(shape: tuple[int, ...]) -> list[tuple]:
    ndim = len(shape)
    return [
        (0,), (-1,), (5,), (2,), ((1,),), (1,) * ndim, (-1,) * ndim, ((0,) * ndim,), (100,), (-100,),
        (0, 0), (1, 2, 3, 4), ("a",), (1.5,), (numpy.int64(3),), (),
    ]  # fmt: skip


def _outcome(array, args):
    try:
        value = array.item(*args)
    except Exception as error:
        return ("error", type(error), str(error))
    return ("value", type(value), value)


@pytest.mark.parametrize("hold", [False, True], ids=["settled", "held"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_item_gives_numpys_values_and_errors(shape, hold, monkeypatch):
    monkeypatch.setenv("SHOAL_COMPILE", "off")
    expected = numpy.arange(math.prod(shape), dtype=numpy.float64).reshape(shape) * 1.5 - 2.0
    with runtime.configure(engine="node", eager_threshold=0, settled_threshold=64) as rt:
        array = snp.array(expected) + 0.0
        if hold:
            rt.hold_for_tasks(array._base.id)  # its memory handed to NumPy, as a loop's base
        assert hold == (array._base.held is not None)
        for args in _arguments(shape):
            assert _outcome(array, args) == _outcome(expected, args), args


def test_item_of_a_large_array_reads_one_element(monkeypatch):
    """It read the whole array for one element (1.4 ms a call at 10^6 elements)."""
    monkeypatch.setenv("SHOAL_COMPILE", "off")
    monkeypatch.setattr(held, "HOLD_RUN", 10**9)  # not held: the element is read through the engine
    with runtime.configure(engine="node", eager_threshold=0, settled_threshold=64) as rt:
        array = snp.arange(100_000.0).reshape(100, 1000) * 2.0
        read_sizes: list[int] = []
        read = rt.read

        def recording(view, *args, **kwargs):
            read_sizes.append(math.prod(view.shape))
            return read(view, *args, **kwargs)

        monkeypatch.setattr(rt, "read", recording)
        assert array.item(12_345) == 24_690.0
        assert array.item(7, 8) == 14_016.0
        assert array.item((-1, -1)) == 199_998.0
    assert all(size == 1 for size in read_sizes), read_sizes
