"""Integer arithmetic on results that stand for NumPy scalars overflows as NumPy's scalars do.

NumPy's operators on integer scalars (``a.sum() * k``) check for overflow and warn ``overflow
encountered in scalar multiply`` at the line, or raise under ``errstate(over="raise")``; its array
loops wrap in silence. A reduction's lazy 0-d result wrapped in silence too. Now, where the
result's value is at hand (it was read: ``read``), each case runs as on NumPy (every array lazy,
and at default settings on arrays large enough to be lazy): the results with their types, and
each warning's category, text, file and line, are NumPy's. A value still to be computed keeps
the operation lazy (a loop adding up counts is not cut at every count).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest

N = 1 << 20  # lazy at default settings too
BIG = 2**62


def read(*values: Any) -> None:
    """Read each value (its work runs; NumPy's scalars are read already)."""
    for value in values:
        value.item()


def products(xp: ModuleType) -> list[Any]:
    total = xp.full(N, 2**40, dtype=np.int64).sum()
    counts = (xp.arange(N) < 3).sum()
    read(total, counts)
    return [total * total, 3 * total, total - np.int64(-BIG) * 2, counts * BIG, np.int64(BIG) * counts, counts + True]


def narrow_and_unsigned(xp: ModuleType) -> list[Any]:
    top = xp.arange(N, dtype=np.int8).max()
    unsigned = xp.zeros(N, dtype=np.uint8).min()
    read(top, unsigned)
    return [top + np.int8(100), top - np.int8(-100), unsigned - 1, 1 - unsigned, unsigned * np.uint8(7)]


def unary(xp: ModuleType) -> list[Any]:
    lowest = xp.full(N, -(2**63), dtype=np.int64).min()
    read(lowest)
    return [-lowest, abs(lowest), -(lowest + 1), abs(lowest + 5)]


def in_place(xp: ModuleType) -> list[Any]:
    total = xp.full(N, 2**40, dtype=np.int64).sum()
    read(total)
    kept = total
    total *= total  # rebinds, as for NumPy's scalars
    step = np.int64(BIG)
    two = (xp.arange(N) < 2).sum()
    read(two)
    step += two * BIG
    return [total, kept, step]


def quiet(xp: ModuleType) -> list[Any]:
    """What stays array arithmetic in NumPy too: a ufunc called by name, floating-point results."""
    total = xp.full(N, 2**40, dtype=np.int64).sum()
    explicit = [np.multiply(total, total), xp.multiply(total, total), np.multiply(np.int64(BIG), total), np.add(np.int64(BIG), total)]
    return [*explicit, total * 2.5, total / 7, total // 7, total**2]


def shown(case: Callable[[ModuleType], list[Any]], xp: ModuleType) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Each result's repr (``np.int8(-56)``: value and dtype), and (category, message, file,
    line) of each warning."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        values = [repr(value) for value in case(xp)]
    return values, [(w.category.__name__, str(w.message), w.filename, w.lineno) for w in caught]


CASES = [products, narrow_and_unsigned, unary, in_place]


def values_here() -> bool:
    """True if the arrays' memory is in this process (not behind a server or MPI ranks, which the
    ``pass:`` modes stand for): only there is a read value at hand for an operator."""
    from shoal import runtime

    return runtime.current().offers_memory()


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.__name__)
def test_integer_scalar_results_overflow_as_numpys(snp: ModuleType, case: Callable[[ModuleType], list[Any]]) -> None:
    expected = shown(case, np)
    assert expected[1], "the case overflows under NumPy"
    values, signals = shown(case, snp)
    assert values == expected[0]
    assert signals == (expected[1] if values_here() else [])  # elsewhere the operation stays lazy: it wraps in silence


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.__name__)
def test_integer_scalar_results_overflow_as_numpys_at_default_settings(snp_default: ModuleType, case: Callable[[ModuleType], list[Any]]) -> None:
    assert shown(case, snp_default) == shown(case, np)


def test_array_arithmetic_on_scalar_results_stays_quiet_and_lazy(snp: ModuleType) -> None:
    values, signals = shown(quiet, snp)
    assert (values, signals) == shown(quiet, np)
    assert signals == []
    total = snp.full(N, 2**40, dtype=np.int64).sum()
    assert type(total * 2.5) is snp.ndarray  # no read: a float result signals as NumPy's array loop does


def overflow_under_raise(xp: ModuleType) -> Any:
    total = xp.full(N, 2**40, dtype=np.int64).sum()
    read(total)
    with np.errstate(over="raise"):
        return total * total


def overflow_under_ignore(xp: ModuleType) -> Any:
    total = xp.full(N, 2**40, dtype=np.int64).sum()
    read(total)
    with np.errstate(over="ignore"):
        return total * total


def test_errstate_applies_to_integer_scalar_results(snp: ModuleType) -> None:
    if not values_here():  # the operation stays lazy: it wraps, as an array's would
        assert overflow_under_raise(snp).item() == 0
        return
    with pytest.raises(FloatingPointError, match="overflow encountered in scalar multiply") as caught:
        overflow_under_raise(snp)
    assert caught.traceback[-1].frame.code.name in {"overflow_under_raise", "<numpy call>"}
    assert caught.traceback[-1].lineno + 1 == overflow_under_raise.__code__.co_firstlineno + 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert overflow_under_ignore(snp) == overflow_under_ignore(np) == 0


def test_arithmetic_on_a_pending_result_stays_lazy(snp: ModuleType) -> None:
    """A count still to be computed is not read for the operator: a loop adding up counts runs as
    one batch (its overflow wraps without NumPy's scalar warning, the README's difference)."""
    counts = [(snp.arange(N) < k).sum() for k in range(3)]
    total = 0
    for count in counts:
        total += count
    assert type(total) is snp.ndarray
    assert total.item() == 3


def test_python_integers_out_of_range_raise_numpys_error(snp: ModuleType) -> None:
    def case(xp: ModuleType) -> Any:
        return xp.arange(N, dtype=np.int8).max() + 300

    with pytest.raises(OverflowError) as expected:
        case(np)
    with pytest.raises(OverflowError) as got:
        case(snp)
    assert str(got.value) == str(expected.value)
