"""Strings, objects, dates and records stay NumPy's: bytecode carries numbers and booleans only.

A large ``np.array`` of strings or dates, ``np.full(n, None)``, a date plus a lazy range,
``np.where`` choosing strings, a ``datetime64`` ``arange`` and ``a == None`` made lazy arrays or
instructions of such dtypes, which every later read refused with an internal ``BytecodeError``.
Each program runs on NumPy and on Shoal with every array lazy, and must give the same values,
dtypes and types.
"""

from __future__ import annotations

import numpy
import pytest

import shoal.numpy as snp

N = 2000


def summary(value):
    array = numpy.asarray(value)
    return type(value).__name__ == "ndarray", array.dtype.str, array.shape, array.tolist()


PROGRAMS = {
    "strings_from_a_list": lambda np: [np.array(["a", "bc"] * N), (np.array(["a"] * N) == "a").sum()],
    "strings_parsed": lambda np: [np.array(["1.5"] * N).astype(float).sum()],
    "dates_from_a_list": lambda np: [np.array([np.datetime64("2020-01-01")] * N) + np.timedelta64(1, "D")],
    "date_plus_a_range": lambda np: [np.datetime64("2020-01-01T00:00:00") + np.arange(N)],
    "range_of_dates_by_dtype": lambda np: [np.arange(0, N, dtype="M8[s]")],
    "range_of_dates_by_strings": lambda np: [np.arange("2000-01-01", "2010-01-01", dtype="datetime64[D]")],
    "range_of_durations": lambda np: [np.arange(np.timedelta64(0, "s"), np.timedelta64(N, "s"))],
    "objects_filled": lambda np: [np.full(N, None), np.where(np.arange(N) % 2 == 0, np.full(N, None), 1)],
    "where_chooses_strings": lambda np: [np.where(np.arange(N) % 3 == 0, np.full(N, "ab"), "x")],
    "where_chooses_a_string_constant": lambda np: [np.where(np.arange(N, dtype=float) > 5, np.arange(N, dtype=float), "x")],
    "compared_with_a_string": lambda np: [np.arange(N, dtype=float) == "x", np.arange(N, dtype=float) != "x", np.logical_and(np.arange(N, dtype=float), "x")],
    "compared_with_none": lambda np: [np.arange(N, dtype=float) == None, np.arange(N, dtype=float) != None],  # noqa: E711
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs_on_strings_objects_and_dates_are_numpys(every_array_lazy, name):
    program = PROGRAMS[name]
    expected = [summary(value) for value in program(numpy)]
    got = [summary(value) for value in program(snp)]
    assert [entry[1:] for entry in got] == [entry[1:] for entry in expected]


def test_numbers_made_the_same_ways_stay_lazy(every_array_lazy):
    assert type(snp.array([1.5, 2.5] * N)) is snp.ndarray
    assert type(snp.arange(0, N, dtype="int32")) is snp.ndarray
    assert type(snp.full(N, 2.0)) is snp.ndarray
    assert type(snp.where(snp.arange(N) > 3, 1.0, 2.0)) is snp.ndarray


JOINED = {
    "concatenate_strings": lambda np, x, i: np.concatenate([x, ["n/a"]]),
    "append_a_string": lambda np, x, i: np.append(x, "n/a"),
    "hstack_strings": lambda np, x, i: np.hstack([x, ["n/a"]]),
    "vstack_strings": lambda np, x, i: np.vstack([x, np.full(N, "ab")]),
    "stack_objects": lambda np, x, i: np.stack([x, np.full(N, None)]),
    "concatenate_none": lambda np, x, i: np.concatenate([x, [None]]),
    "concatenate_flattened_strings": lambda np, x, i: np.concatenate([x.reshape(2, -1), [["s"]]], axis=None),
    "concatenate_bytes": lambda np, x, i: np.concatenate([x, numpy.array([b"ab"])]),
    "concatenate_long_doubles": lambda np, x, i: np.concatenate([x, numpy.array([1.5], numpy.longdouble)]),
    "concatenate_complex_long_doubles": lambda np, x, i: np.concatenate([x, numpy.array([1j], numpy.clongdouble)]),
    "concatenate_durations": lambda np, x, i: np.concatenate([i, numpy.array([7], "m8[s]")]),
    "concatenate_into_a_lazy_output": lambda np, x, i: np.concatenate([x, ["2.5"]], out=np.zeros(N + 1), casting="unsafe"),
    "multiply_by_objects": lambda np, x, i: x * numpy.ones(N, object),
    "add_objects": lambda np, x, i: np.add(x, numpy.ones(1, object)),
}


@pytest.mark.parametrize("name", sorted(JOINED))
def test_lazy_numbers_joined_with_unsupported_dtypes_are_numpys(every_array_lazy, name):
    """Such a result is NumPy's array, computed at the call; no base of its dtype is declared,
    so that the next read of any lazy array works."""
    program = JOINED[name]

    def run(np):
        x = np.arange(N, dtype=float)
        i = np.arange(N)
        result = program(np, x, i)
        return [result, x.sum(), i[-3:]]

    expected = [summary(value) for value in run(numpy)]
    got = [summary(value) for value in run(snp)]
    assert got[0] == expected[0]
    assert [entry[1:] for entry in got[1:]] == [entry[1:] for entry in expected[1:]]
