"""Ufunc calls recorded from a remembered signature (``shoal/numpy/_fast_ufunc.py``).

Each program runs on NumPy and on Shoal (every array lazy, node and reference engines) in a loop,
so that the first iteration teaches the signature and the later ones take the fast path; every
value read, its dtype, and every error (type, message, iteration) must be NumPy's. The
adversarial cases change what the key must see between iterations: a shape, a dtype, a Python
integer's range, a read-only output, NumPy's error modes, an integer power's exponent values.
"""

from __future__ import annotations

import numpy
import pytest
from numpy_fixtures import assert_reads_equal

import shoal.numpy as snp
from shoal import runtime
from shoal.numpy import _fast_ufunc

ENGINES = ["node", "reference"]


@pytest.fixture(params=ENGINES)
def lazy(request, monkeypatch):
    monkeypatch.setenv("SHOAL_COMPILE", "off")
    with runtime.configure(engine=request.param, eager_threshold=0, flush_threshold=64, settled_threshold=0) as rt:
        yield rt


def _reads(np, program):
    """Every value ``program`` reads, as NumPy data, then its error (type and text) if any."""
    reads: list = []
    try:
        program(np, reads)
    except Exception as error:
        reads.append((type(error), str(error)))
    return [read if isinstance(read, tuple) else numpy.asarray(read) for read in reads]


def same(program):
    expected, got = _reads(numpy, program), _reads(snp, program)
    assert_reads_equal(expected, got)


def test_a_loop_body_is_recorded_from_its_signatures_and_gives_numpys_values(lazy):
    def program(np, reads):
        a = np.linspace(0.0, 1.0, 50)
        b = np.ones(50)
        for _ in range(20):
            c = a * b
            c += 1.0
            d = np.sqrt(c)
            a = 0.5 * a + 0.25 * d
            reads.append(np.negative(a)[3:5])
        reads.append(a)

    _fast_ufunc.forget()
    same(program)
    assert len(_fast_ufunc._SIGNATURES) >= 4


@pytest.mark.parametrize(
    "scalar",
    [3, -3, 300, 70000, 2**40, 2**63, -(2**63), 2.5, True, 1 + 2j, numpy.float32(1.5), numpy.int8(-4), numpy.uint64(7)],
    ids=repr,
)
@pytest.mark.parametrize("dtype", ["uint8", "int16", "int64", "float32", "float64", "bool", "complex64"])
def test_scalar_kinds_give_numpys_dtypes_and_errors_after_other_scalars_were_seen(lazy, scalar, dtype):
    def program(np, reads):
        a = np.arange(6).astype(dtype)
        for value in (1, 2.0, scalar, 1, scalar):
            reads.append(a + value)
            reads.append(np.multiply(value, a))

    same(program)


def test_a_python_int_out_of_the_arrays_range_raises_in_the_iteration_it_appears(lazy):
    def program(np, reads):
        a = np.arange(4, dtype=np.uint8)
        for value in (1, 2, 255, 256, 3):
            reads.append(a + value)

    same(program)


def test_shape_and_dtype_changes_between_iterations(lazy):
    def program(np, reads):
        for n, dtype in ((5, "f8"), (5, "f8"), (6, "f8"), (5, "f4"), (5, "i4"), (5, "f8")):
            a = np.arange(n).astype(dtype)
            b = np.ones(5, "f8")
            reads.append(a * b)  # raises at n == 6: NumPy's broadcast error, in that iteration

    same(program)


def test_broadcasting_inputs_and_in_place_outputs(lazy):
    def program(np, reads):
        grid = np.zeros((4, 5))
        row = np.arange(5.0)
        column = np.arange(4.0).reshape(4, 1)
        for step in range(4):
            grid += row * step
            grid *= 0.5
            np.add(grid, column, out=grid)
            reads.append(grid.copy())
        small = np.zeros(5)
        for _ in range(3):
            small += grid  # cannot broadcast into ``small``: NumPy's error every time
        reads.append(small)

    same(program)


def test_a_read_only_output_is_refused_after_a_writable_one_taught_the_signature(lazy):
    def program(np, reads):
        a = np.ones(5)
        b = np.ones(5)
        for _ in range(3):
            np.add(a, 1.0, out=b)
        reads.append(b)
        view = np.broadcast_to(a, (5,))
        np.add(a, 1.0, out=view)

    same(program)


def test_casting_into_an_integer_output_is_refused_every_time(lazy):
    def program(np, reads):
        counts = np.zeros(4, dtype=np.int64)
        for _ in range(3):
            counts += 1
        reads.append(counts)
        for _ in range(2):
            try:
                counts += 0.5
            except Exception as error:
                reads.append((type(error), str(error)))
        reads.append(counts)

    same(program)


def test_integer_powers_check_negative_exponents_on_every_call(lazy):
    def program(np, reads):
        base = np.arange(1, 5)
        for exponents in ([1, 2, 3, 0], [2, 2, 2, 2], [1, -1, 2, 2]):
            reads.append(np.power(base, np.array(exponents)))

    same(program)


def test_error_modes_set_after_the_signature_was_learned_apply_at_the_call(lazy):
    def program(np, reads):
        a = np.arange(4.0)
        for _ in range(3):
            reads.append(np.divide(1.0, a + 1.0))
        with np.errstate(divide="raise"):
            reads.append(np.divide(1.0, a))

    same(program)


def test_zero_dimensional_results_stand_for_numpy_scalars(lazy):
    def program(np, reads):
        total = np.sum(np.arange(5.0))
        for _ in range(3):
            total = total * 2.0 + 1
            reads.append(total)
        reads.append(np.float64(total) == total)

    same(program)


def test_an_output_of_another_shape_is_checked_again(lazy):
    def program(np, reads):
        a, b = np.arange(5.0), np.ones(5)
        wide = np.zeros((3, 5))
        for _ in range(2):
            np.add(a, b, out=wide)  # the inputs broadcast into the output
        reads.append(wide)
        np.add(a, b, out=np.zeros(3))

    same(program)
