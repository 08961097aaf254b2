"""Small arrays created in loops are NumPy's own calls (``shoal/numpy/_create.py``,
``shoal/numpy/random.py``): the same values, dtypes, memory layouts, subclasses and errors as
NumPy's, plain ``numpy.ndarray`` results below the eager threshold and lazy arrays above it."""

from __future__ import annotations

import numpy
import pytest

import shoal.numpy as snp
from shoal import runtime
from shoal.engine.node.engine import NodeEngine
from shoal.engine.passthrough import PassConfig, PassThrough


@pytest.fixture
def default_thresholds():
    with runtime.configure(engine="reference") as rt:
        yield rt


CALLS = {
    "arange(7)": lambda np: np.arange(7),
    "arange(-3)": lambda np: np.arange(-3),
    "arange(2, 9, 3)": lambda np: np.arange(2, 9, 3),
    "arange(0.5, 2.0, 0.25)": lambda np: np.arange(0.5, 2.0, 0.25),
    "arange(1, 4.0)": lambda np: np.arange(1, 4.0),
    "arange(5, dtype=float32)": lambda np: np.arange(5, dtype=numpy.float32),
    "linspace(0, 1, 7)": lambda np: np.linspace(0, 1, 7),
    "linspace(2, 3, 4, endpoint=False, retstep=True)": lambda np: np.linspace(2, 3, 4, endpoint=False, retstep=True)[0],
    "zeros(4)": lambda np: np.zeros(4),
    "ones(4, int8)": lambda np: np.ones(4, numpy.int8),
    "full(3, 2.5)": lambda np: np.full(3, 2.5),
    "full(3, True)": lambda np: np.full(3, True),
    "full(3, 1j, complex64)": lambda np: np.full(3, 1j, numpy.complex64),
    "full(3, 7, float32)": lambda np: np.full(3, 7, numpy.float32),
    "array([1.5, 2, True])": lambda np: np.array([1.5, 2, True]),
    "array((1, 2), int16)": lambda np: np.array((1, 2), numpy.int16),
    "array([1, 2], ndmin=2)": lambda np: np.array([1, 2], ndmin=2),
    "array([])": lambda np: np.array([]),
    "array([1 + 2j, 3])": lambda np: np.array([1 + 2j, 3]),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_small_creations_are_numpys_arrays(default_thresholds, name):
    call = CALLS[name]
    expected, got = call(numpy), call(snp)
    assert type(got) is numpy.ndarray
    assert got.dtype == expected.dtype and got.shape == expected.shape
    numpy.testing.assert_array_equal(got, expected)


LIKES = {
    "empty_like": lambda np, a: np.empty_like(a),
    "zeros_like": lambda np, a: np.zeros_like(a),
    "ones_like": lambda np, a: np.ones_like(a, dtype=numpy.float32),
    "full_like": lambda np, a: np.full_like(a, 3),
}


@pytest.mark.parametrize("name", list(LIKES))
def test_like_functions_of_small_numpy_arrays_keep_layout_and_subclass(default_thresholds, name):
    call = LIKES[name]
    fortran = numpy.asfortranarray(numpy.arange(12.0).reshape(3, 4))
    masked = numpy.ma.masked_array([1.0, 2.0, 3.0], mask=[False, True, False])
    for prototype in (fortran, masked, fortran[:, ::2]):
        expected, got = call(numpy, prototype), call(snp, prototype)
        assert type(got) is type(expected)
        assert got.flags.f_contiguous == expected.flags.f_contiguous and got.strides == expected.strides
        assert got.dtype == expected.dtype
        if name != "empty_like":
            numpy.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(
    "call",
    [
        lambda np: np.arange(0, 10, 0),
        lambda np: np.arange(0.0, 1.0, 0.0),
        lambda np: np.arange(float("nan")),
        lambda np: np.arange(0.0, float("inf")),
        lambda np: np.linspace(0, 1, -1),
        lambda np: np.array([1.0, 2.0], copy=False),
        lambda np: np.full(-1, 2.0),
        lambda np: np.zeros(-2),
    ],
)
def test_small_creation_errors_are_numpys(default_thresholds, call):
    with pytest.raises(Exception) as expected:
        call(numpy)
    with pytest.raises(type(expected.value)) as got:
        call(snp)
    assert str(got.value) == str(expected.value)


def test_large_creations_stay_lazy(default_thresholds):
    size = default_thresholds.eager_threshold
    for made in (snp.arange(size), snp.linspace(0.0, 1.0, size), snp.zeros(size), snp.full(size, 2.5), snp.array([1.0] * size)):
        assert type(made) is snp.ndarray
    numpy.testing.assert_array_equal(numpy.asarray(snp.arange(size)[-3:]), numpy.arange(size)[-3:])
    numpy.testing.assert_array_equal(numpy.asarray(snp.array([0.5] * size)[:4]), numpy.full(4, 0.5))


def test_small_draws_are_numpys_and_keep_the_stream(default_thresholds):
    ours, theirs = snp.random.default_rng(9), numpy.random.default_rng(9)
    for method, arguments in (("random", (5,)), ("normal", (0.0, 1.0, 4)), ("integers", (0, 10, 6)), ("uniform", (1.0, 2.0, (2, 3)))):
        got, expected = getattr(ours, method)(*arguments), getattr(theirs, method)(*arguments)
        assert type(got) is numpy.ndarray
        numpy.testing.assert_array_equal(got, expected)
    large = ours.random(default_thresholds.eager_threshold)
    assert type(large) is snp.ndarray
    numpy.testing.assert_array_equal(numpy.asarray(large), theirs.random(default_thresholds.eager_threshold))


@pytest.fixture
def every_array_lazy():
    with runtime.configure(engine="node", eager_threshold=0) as rt:
        yield rt


IN_MEMORY = {
    "empty(7)": lambda np: np.empty(7) * 0 + 1,
    "zeros((3, 4))": lambda np: np.zeros((3, 4)),
    "ones(5, int32)": lambda np: np.ones(5, numpy.int32),
    "full((2, 3), 2.5)": lambda np: np.full((2, 3), 2.5),
    "arange(3, 40, 3)": lambda np: np.arange(3, 40, 3),
    "linspace(0, 1, 9)": lambda np: np.linspace(0, 1, 9),
    "eye(4, 6, 1)": lambda np: np.eye(4, 6, 1),
    "identity(3)": lambda np: np.identity(3, numpy.int8),
}


@pytest.mark.parametrize("name", list(IN_MEMORY))
def test_small_arrays_made_lazy_hold_their_values_from_the_start(every_array_lazy, name):
    """With every array lazy, a small new array is made by NumPy at once and handed to its base
    (nothing recorded): operations on it then run at once as on any settled base."""
    call = IN_MEMORY[name]
    expected = call(numpy)
    got = call(snp)
    assert type(got) is snp.ndarray
    assert not every_array_lazy._pending.instructions
    assert got.dtype == expected.dtype
    numpy.testing.assert_array_equal(numpy.asarray(got), expected)


@pytest.mark.parametrize("name", list(IN_MEMORY))
def test_small_arrays_made_lazy_for_a_component_without_memory_are_recorded(name):
    """A component that keeps no memory in this process (the cluster, the remote client) is sent
    the instruction that makes a new array, not its values: the creation is recorded."""
    stack = PassThrough(PassConfig(local_loops=False), NodeEngine())
    call = IN_MEMORY[name]
    expected = call(numpy)
    with runtime.configure(engine=stack, eager_threshold=0, flush_threshold=10**6) as rt:
        got = call(snp)
        assert type(got) is snp.ndarray
        assert rt._pending.instructions or rt._pending.bases
        assert got.dtype == expected.dtype
        numpy.testing.assert_array_equal(numpy.asarray(got), expected)


def test_a_row_loop_over_small_new_arrays_records_nothing_per_row(every_array_lazy):
    """The edit-distance loop of the loop-pattern suite: a new row each step, written element by
    element and by slices, scanned and stored into a table; every array lazy. Each step used to
    record its row and flush before the scan: one batch per row."""

    def table(np):
        a, b = numpy.array([0, 1, 2, 3, 1, 0, 2, 2]), numpy.array([1, 1, 2, 0, 3, 2, 0, 1])
        columns = np.arange(b.shape[0] + 1, dtype=numpy.float64)
        result = np.zeros((a.shape[0] + 1, b.shape[0] + 1))
        result[0] = columns
        for i in range(1, a.shape[0] + 1):
            candidates = np.empty(b.shape[0] + 1)
            candidates[0] = i
            candidates[1:] = np.minimum(result[i - 1, 1:] + 1.0, result[i - 1, :-1] + (b != a[i - 1]))
            result[i] = np.minimum.accumulate(candidates - columns) + columns
        return result

    expected = table(numpy)
    stats = every_array_lazy.stats
    flushes, instructions = stats.flushes, stats.instructions + len(every_array_lazy._pending.instructions)
    got = table(snp)
    assert stats.flushes - flushes <= 2  # the table is held after a few rows; before: a flush per row
    assert stats.instructions + len(every_array_lazy._pending.instructions) - instructions <= 4
    numpy.testing.assert_array_equal(numpy.asarray(got), expected)
