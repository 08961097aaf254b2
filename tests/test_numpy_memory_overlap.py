"""``np.shares_memory`` and ``np.may_share_memory`` of lazy arrays (``shoal/numpy/_memory_overlap.py``):
NumPy's answers for views of one base. Through the fallback they compared copies, so a view and
its base never shared memory."""

from __future__ import annotations

import numpy
from hypothesis import given
from hypothesis import strategies as st
from numpy_fixtures import DIFFERENTIAL, needs_runtime

VIEWS = {
    "whole": lambda a: a,
    "rows": lambda a: a[2:5],
    "odd rows": lambda a: a[1::2],
    "even rows": lambda a: a[::2],
    "column": lambda a: a[:, 3],
    "next column": lambda a: a[:, 4],
    "reversed": lambda a: a[::-1, ::-1],
    "transposed": lambda a: a.T[1:3],
    "flat tail": lambda a: a.reshape(-1)[37:],
    "empty": lambda a: a[:, :0],
    "block": lambda a: a[4:6, 5:7],
}


@DIFFERENTIAL
@given(first=st.sampled_from(sorted(VIEWS)), second=st.sampled_from(sorted(VIEWS)), work=st.sampled_from([None, -1, 0]))
def test_views_of_one_base_overlap_as_numpy_says(snp, first: str, second: str, work) -> None:
    needs_runtime()
    values = numpy.arange(80.0).reshape(8, 10)
    lazy = snp.array(values) * 1.0
    for function in ("shares_memory", "may_share_memory"):
        expected = _outcome(getattr(numpy, function), VIEWS[first](values), VIEWS[second](values), work)
        got = _outcome(getattr(numpy, function), VIEWS[first](lazy), VIEWS[second](lazy), work)
        assert got == expected, (function, first, second)


def _outcome(function, first, second, work) -> object:
    """The answer, or the type of the error (``TooHardError`` past ``max_work``)."""
    try:
        return bool(function(first, second, max_work=work))
    except Exception as error:
        return type(error)


def test_different_arrays_and_copies_never_overlap(snp) -> None:
    needs_runtime()
    values = numpy.arange(80.0).reshape(8, 10)
    lazy = snp.array(values)
    assert not numpy.shares_memory(lazy, snp.array(values)) and not numpy.may_share_memory(lazy, lazy.copy())
    assert not numpy.shares_memory(lazy, values) and not numpy.may_share_memory(values, lazy[2:])
    assert numpy.shares_memory(lazy[1:], lazy[:-1]) and numpy.may_share_memory(lazy, lazy.T)


def test_a_numpy_view_of_a_held_base_overlaps_the_lazy_array() -> None:
    needs_runtime()
    import shoal.numpy as snp
    from shoal import runtime

    with runtime.configure(engine="node", eager_threshold=0, settled_threshold=1 << 19) as rt:
        grid = snp.arange(1 << 12, dtype=float).reshape(64, 64) * 2.0
        for _ in range(2):
            for i in range(1, 63):  # a row loop of small operations: the base is held
                grid[i, 1:-1] = grid[i - 1, 1:-1] * 0.5 + grid[i + 1, 1:-1]
        assert rt.held, "the loop did not hold the base"
        row = grid[10, 1:-1]
        assert type(row) is numpy.ndarray
        assert numpy.shares_memory(row, grid) and numpy.may_share_memory(grid[10], row)
        assert not numpy.shares_memory(row, grid[11]) and not numpy.shares_memory(row.copy(), grid)
