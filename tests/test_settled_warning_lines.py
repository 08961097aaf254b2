"""Warnings of operations NumPy computes at the call on settled views (``shoal/numpy/_settled.py``)
name the user's line, as NumPy's own do: category, text, file and line compared with NumPy's for
ufuncs with and without ``out``, operators, in-place operators, casts on assignment and
reductions of small views of a large lazy base.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy
import pytest

import shoal.numpy as snp
from shoal import held, runtime


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Every array lazy on the node engine; views under 64 elements of settled bases computed by
    NumPy at once; bases never held, so the settled path itself is what runs."""
    monkeypatch.setenv("SHOAL_COMPILE", "off")
    monkeypatch.setattr(held, "HOLD_RUN", 1 << 40)
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=4096, settled_threshold=64) as rt:
        yield rt


def shown(case: Callable[[ModuleType], list[Any]], xp: ModuleType) -> list[tuple[Any, ...]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        values = [numpy.asarray(value) for value in case(xp)]
    return [(w.category, str(w.message), w.filename, w.lineno) for w in caught] + [values]


def row_operations(xp: ModuleType) -> list[Any]:
    a = xp.ones((16, 16))
    a[3, 5] = 0.0
    a[4, 6] = -1.0
    float(a[0, 0])  # the writes run: the base is settled
    target = xp.zeros((16, 16))
    float(target[0, 0])
    xp.log(a[3], out=a[3])
    xp.divide(1.0, a[3], out=target[2])
    b = a[4] ** 0.5
    c = xp.sqrt(a[4]) * 2
    a[5] /= a[3]
    return [a, target, b, c]


def casts_and_reductions(xp: ModuleType) -> list[Any]:
    a = xp.full((16, 16), 1e300)
    small = xp.zeros((16, 16), xp.float32)
    float(a[0, 0]), float(small[0, 0])
    small[1] = a[2]
    total = a[3].sum() * 1e300
    return [small, total]


@pytest.mark.parametrize("case", [row_operations, casts_and_reductions], ids=lambda case: case.__name__)
def test_settled_operations_warn_at_numpys_lines(settled: Any, case: Callable[[ModuleType], list[Any]]) -> None:
    expected = shown(case, numpy)
    assert len(expected) > 2
    got = shown(case, snp)
    assert got[:-1] == expected[:-1]
    for want, have in zip(expected[-1], got[-1]):
        numpy.testing.assert_array_equal(have, want)
