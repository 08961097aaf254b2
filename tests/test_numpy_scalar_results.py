"""Results that stand for NumPy scalars (``a.sum()``, ``mask.sum()``) in the Python around them.

A reduction gives a 0-d lazy array that stands for NumPy's scalar. Python code used such values
in ways that crashed or went wrong: ``round(s)`` and ``hash(s)`` raised TypeError (so did a
``dict`` key and ``functools.lru_cache``), ``np.zeros(mask.sum())`` refused the size, ``[0] * n``
gave ``[0]`` (the list was multiplied element by element) and ``"ab" * n`` raised, and
``s.imag`` raised an internal AttributeError. Each case runs on NumPy and on Shoal with every
array lazy.
"""

from __future__ import annotations

import functools

import numpy

import shoal.numpy as snp


def outcome(function):
    try:
        return "value", repr(function())
    except Exception as error:
        return type(error).__name__, str(error)


def cases(np):
    values = np.arange(1000.0)
    total = values.sum()
    count = (np.arange(1000) < 3).sum()
    cached = functools.lru_cache(lambda v: v * 2)
    return {
        "round": lambda: round(total),
        "round_digits": lambda: round(values.max() / 7, 2),
        "round_nan": lambda: round((values * numpy.nan).max()),
        "round_array": lambda: round(values),
        "hash": lambda: hash(total) == hash(float(total)),
        "hash_array": lambda: hash(values),
        "dict_key": lambda: {values.max(): "top"}[999.0],
        "lru_cache": lambda: cached(values.max()),
        "zeros_of_a_count": lambda: np.zeros(count).shape,
        "zeros_of_counts": lambda: np.zeros((count, 2)).shape,
        "zeros_of_a_float": lambda: np.zeros(values.max()),
        "list_times_count": lambda: [0] * count,
        "count_times_list": lambda: count * [0],
        "string_times_count": lambda: "ab" * count,
        "tuple_times_count": lambda: (1,) * count,
        "list_times_float": lambda: [0] * total,
        "parts": lambda: (total.imag, total.real),
        "numpy_scalar_of_it": lambda: np.float32(values.max()),
        "array_times_list": lambda: (values[:3] * [1, 2, 3]).tolist(),
        "list_plus_count": lambda: ([1, 2] + count).tolist(),  # noqa: RUF005 (NumPy adds elementwise)
    }


def test_scalar_results_in_python_code_act_as_numpys(every_array_lazy):
    expected = {name: outcome(case) for name, case in cases(numpy).items()}
    got = {name: outcome(case) for name, case in cases(snp).items()}
    assert got == expected


def test_reduction_methods_of_scalar_results_act_as_numpys(every_array_lazy):
    """``s.sum()`` of a result that stands for a scalar, also where NumPy runs it at the call
    (a strict error state): the NumPy scalar's method, not ``ndarray``'s."""

    def program(np):
        values = np.arange(1000.0)
        with numpy.errstate(all="raise"):
            total = values.sum()
            return [outcome(lambda: total.sum()), outcome(lambda: np.isfinite(total).sum()), outcome(lambda: total.mean(where=True))]

    assert program(snp) == program(numpy)


def method_cases(np):
    """Methods of scalar results: NumPy's scalar methods give scalars back (``repr`` tells them
    from 0-d arrays), ``np.asarray`` of a scalar is a 0-d array, and the methods only NumPy's
    scalars have are the scalar's."""
    values = np.arange(1000.0)
    total = values.sum()
    count = (values > 0).sum()
    import math

    return {
        "astype": lambda: total.astype(numpy.float32),
        "astype_object": lambda: total.astype(object),
        "any_astype": lambda: (values > 0).any().astype(int),
        "copy": lambda: total.copy(),
        "squeeze": lambda: total.squeeze(),
        "transposed": lambda: total.T,
        "transpose": lambda: total.transpose(),
        "view": lambda: total.view(numpy.int64),
        "reshape": lambda: (total.reshape(()), total.reshape(1)),
        "byteswap": lambda: total.byteswap(),
        "asarray": lambda: np.asarray(total),
        "array": lambda: np.array(total),
        "asarray_no_copy": lambda: np.asarray(total, copy=False),
        "asarray_written": lambda: (np.asarray(total).__setitem__(Ellipsis, 5), total)[1],
        "is_integer": lambda: (total.is_integer(), (total / 7).is_integer(), count.is_integer()),
        "float32_is_integer": lambda: total.astype(numpy.float32).is_integer(),
        "bool_is_integer": lambda: (values > 0).any().is_integer(),
        "array_is_integer": lambda: values.is_integer(),
        "bit_count": lambda: count.bit_count(),
        "float_bit_count": lambda: total.bit_count(),
        "as_integer_ratio": lambda: (total / 8).as_integer_ratio(),
        "hex": lambda: total.hex(),
        "numerator": lambda: count.numerator,
        "floor_ceil": lambda: (total.__floor__(), (total / 7).__ceil__(), math.floor(count), math.ceil(count / 7)),
        "trunc": lambda: math.trunc(total / 7),
        "int_trunc": lambda: math.trunc(count),
        "array_floor_ceil": lambda: (math.floor(values[:1]), math.ceil(values[1:2])),  # NumPy's TypeError
        "zero_d_floor_ceil": lambda: (math.floor(np.array(2.5)), math.ceil(np.array(2.5)), round(np.array(2.5))),
        "array_trunc": lambda: math.trunc(values),
    }


def test_methods_of_scalar_results_act_as_numpy_scalars(every_array_lazy):
    expected = {name: outcome(case) for name, case in method_cases(numpy).items()}
    got = {name: outcome(case) for name, case in method_cases(snp).items()}
    assert got == expected


def refusal_cases(np):
    """What NumPy's scalars refuse, with NumPy's exception and message: an index (NumPy's
    scalar replaces any indexing error by its own), ``len``, iteration and ``in``."""
    values = np.arange(1000.0)
    total, count, flag = values.sum(), (values > 0).sum(), (values > 5000).any()
    return {
        "index": lambda: total[0],
        "slice": lambda: total[:],
        "text_key": lambda: total["a"],
        "float_key": lambda: total[0.5],
        "int_index": lambda: count[0],
        "bool_index": lambda: flag[1],
        "valid_keys": lambda: (total[()], total[...], total[None]),
        "len": lambda: (len(total),),
        "len_int": lambda: len(count),
        "len_bool": lambda: len(flag),
        "iter": lambda: iter(total),
        "list": lambda: list(count),
        "contains": lambda: 1.0 in total,
        "zero_d_array": lambda: (len(np.asarray(total)),),
        "zero_d_contains": lambda: 1.0 in np.asarray(count),
    }


def test_scalar_results_refuse_as_numpy_scalars(every_array_lazy):
    expected = {name: outcome(case) for name, case in refusal_cases(numpy).items()}
    got = {name: outcome(case) for name, case in refusal_cases(snp).items()}
    assert got == expected


IN_PLACE_CALLS = {
    "fill": lambda s: s.fill(3),
    "fill_text": lambda s: s.fill("x"),
    "resize": lambda s: s.resize(2),
    "resize_negative": lambda s: s.resize(-1),
    "sort": lambda s: s.sort(),
    "partition": lambda s: s.partition(0),
    "put": lambda s: s.put(0, 5),
    "setfield": lambda s: s.setfield(3, numpy.float64),
    "byteswap_in_place": lambda s: s.byteswap(inplace=True),
    "setflags": lambda s: s.setflags(write=True),
}


def test_in_place_methods_leave_scalar_results_as_numpy_scalars(every_array_lazy):
    """NumPy's scalars are immutable: ``s.resize(2)`` and ``s.fill(3)`` act on a copy, ``s.sort()``
    refuses. ``s.resize(2)`` turned a lazy result into a 2-element array."""
    for name, call in IN_PLACE_CALLS.items():
        outcomes = []
        for np in (numpy, snp):
            total = np.arange(1000.0).sum()
            outcomes.append((outcome(lambda: call(total)), repr(total)))  # noqa: B023  (called at once)
        assert outcomes[1] == outcomes[0], name
