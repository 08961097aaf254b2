"""Recording a remembered ufunc call in one pass (``_fast_ufunc.record``, ``Runtime.record_new``,
``fp_warnings.call_site``): the warnings NumPy gives name the line of each call, also when the
same lines record again from the site cache; NumPy's error state and the warnings filters are
read at every call; the lazy array built in place is the one ``ndarray._wrap`` builds.

Every program runs on NumPy and on Shoal (every array lazy, the node and reference engines)."""

from __future__ import annotations

import warnings

import numpy
import pytest

import shoal.numpy as snp
from shoal import runtime
from shoal.numpy import _fast_ufunc
from shoal.numpy._lazy import ndarray


@pytest.fixture(params=["node", "reference"])
def lazy(request, monkeypatch):
    monkeypatch.setenv("SHOAL_COMPILE", "off")
    with runtime.configure(engine=request.param, eager_threshold=0, flush_threshold=64, settled_threshold=0) as rt:
        yield rt


@pytest.fixture
def sites(monkeypatch):
    """The number of warning sites the fast path looked up (the test must reach it)."""
    calls = [0]
    looked_up = _fast_ufunc.call_site

    def counting(frame, warned, filters=None):
        calls[0] += 1
        return looked_up(frame, warned, filters)

    monkeypatch.setattr(_fast_ufunc, "call_site", counting)
    return calls


def _warned(np, program) -> tuple[list, list]:
    """(values read, (category, message, line) of each warning) of ``program`` under filters
    that show every warning."""
    reads: list = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        program(np, reads)
        values = [numpy.asarray(read) for read in reads]  # lazy work runs, and warns, here
    return values, [(w.category, str(w.message), w.lineno) for w in caught]


def _same(program) -> None:
    expected, got = _warned(numpy, program), _warned(snp, program)
    assert len(expected[0]) == len(got[0])
    for want, have in zip(expected[0], got[0]):
        numpy.testing.assert_array_equal(have, want)
        assert have.dtype == want.dtype
    assert got[1] == expected[1]


def test_warnings_of_remembered_calls_name_each_calls_line(lazy, sites):
    def program(np, reads):
        a = np.arange(6.0) - 2.0
        for _ in range(4):
            b = 1.0 / a
            c = np.log(a)
            d = b * 0.5 + c
            reads.append(d[:])

    _same(program)
    assert sites[0] > 0


def test_error_state_changed_between_iterations_is_read_at_each_call(lazy, sites):
    def program(np, reads):
        a = np.arange(4.0)
        for step in range(6):
            if step % 3 == 1:
                with np.errstate(divide="ignore"):
                    reads.append(1.0 / a)
            elif step % 3 == 2:
                with np.errstate(divide="warn", invalid="ignore"):
                    reads.append(np.divide(a, a))
            else:
                reads.append(1.0 / a)

    _same(program)
    assert sites[0] > 0


def test_a_filter_made_an_error_after_learning_raises_at_the_call(lazy):
    def program(np):
        a = np.arange(3.0)
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            for _ in range(3):
                b = 1.0 / (a + 1.0)
                b += 0.5
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(RuntimeWarning, match="divide by zero encountered in divide"):
                b = 1.0 / a
        return b

    program(numpy)
    numpy.testing.assert_array_equal(numpy.asarray(program(snp)), numpy.asarray(program(numpy)))


def test_an_array_wrapped_in_place_has_every_slot_wrap_sets(lazy):
    a = snp.arange(8.0)
    with numpy.errstate(all="ignore"):
        for _ in range(3):
            result = a * 2.0  # remembered from the second call on
    assert type(result) is ndarray
    expected = ndarray._wrap(result._base, result._view, None, False, False)
    for slot in ndarray.__slots__:
        if slot != "__weakref__":
            assert getattr(result, slot) is getattr(expected, slot), slot
    numpy.testing.assert_array_equal(numpy.asarray(result), numpy.arange(8.0) * 2.0)


@pytest.fixture
def any_shape(monkeypatch):
    """The number of calls given a signature learned with other shapes (nothing remembered at
    the start)."""
    _fast_ufunc.forget()
    calls = [0]
    learned = _fast_ufunc._learned_at_other_shapes

    def counting(*args):
        result = learned(*args)
        calls[0] += result is not None
        return result

    monkeypatch.setattr(_fast_ufunc, "_learned_at_other_shapes", counting)
    return calls


def test_calls_whose_shapes_change_every_iteration_are_numpys(lazy, any_shape):
    """A column loop whose views shrink (``a[:, k + 1 :] -= x``), broadcasts of other shapes,
    0-d results and in-place outputs: values, dtypes and the warnings at each call's line as
    NumPy's, though the signature was learned from other shapes."""

    def program(np, reads):
        a = np.arange(30.0).reshape(5, 6) - 7.0
        ints = np.arange(6, dtype=np.int32)
        for k in range(5):
            a[:, k + 1 :] -= a[:, k : k + 1] * 0.5
            column = 1.0 / a[:, k]  # divides by zero where a holds 0
            row = np.log(a[k, k:])  # invalid below zero
            mixed = a[:, : k + 1] + ints[: k + 1]  # int32 promoted to float64
            outer = a[:, k : k + 1] * a[k : k + 1, :]  # (5, 1) x (1, 6)
            reads += [column, row, mixed, outer, a[k, k] * 2.0]
        reads.append(a)

    _same(program)
    assert any_shape[0] > 0


def test_shapes_that_do_not_broadcast_raise_numpys_error(lazy, any_shape):
    def program(xp):
        a = xp.arange(12.0).reshape(3, 4)
        learned = a[:, :2] + a[:, 2:]
        xp.add(a[:, :2], 1.0, out=xp.zeros((3, 2)))
        other = a[:, 1:] + a[:, :3]  # the same kinds, other shapes
        messages = []
        with pytest.raises(ValueError) as error:
            a[:, 1:] + a[:2, :3]
        messages.append(str(error.value))
        with pytest.raises(ValueError) as error:
            xp.add(a[:, :3], 1.0, out=xp.zeros((3, 2)))  # an output of another shape
        messages.append(str(error.value))
        return messages, [numpy.asarray(learned), numpy.asarray(other)]

    expected, got = program(numpy), program(snp)
    assert got[0] == expected[0]
    for want, have in zip(expected[1], got[1]):
        numpy.testing.assert_array_equal(have, want)
    assert any_shape[0] > 0


def test_numpy_data_operands_are_taken_as_they_are_at_each_call(lazy, sites, monkeypatch):
    """NumPy arrays beside lazy ones on the remembered path: promoted as NumPy promotes them,
    broadcast, and carried with the values they hold at the call (the program changes them
    right after), warnings at each call's line."""
    carried = [0]
    carry = _fast_ufunc._operand
    monkeypatch.setattr(_fast_ufunc, "_operand", lambda value: carried.__setitem__(0, carried[0] + (type(value) is numpy.ndarray)) or carry(value))

    def program(np, reads):
        a = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
        weights = numpy.arange(4, dtype=numpy.float32)
        column = numpy.arange(3, dtype=numpy.int32).reshape(3, 1)
        for k in range(4):
            scaled = a * weights  # (3, 4) x (4,)
            shifted = column + a  # int32 NumPy data and float64: float64
            ratio = a[:, k:] / weights[k:]  # shapes shrink; 0 in weights[0] divides by zero
            weights += 1.0  # changed after the calls: the recorded values stay those of the call
            column[0, 0] = -k
            reads += [scaled, shifted, ratio]
        with pytest.raises(ValueError) as error:
            a + numpy.ones(5)
        reads.append(numpy.asarray(str(error.value)))

    _same(program)
    assert sites[0] > 0
    assert carried[0] > 0
