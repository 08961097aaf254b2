"""Small lazy operands written into NumPy arrays, outer products of NumPy vectors and casts of
small settled views, computed by NumPy at once.

With every array lazy, a row loop over a held base (LU's ``a[k + 1:, k + 1:] -= np.outer(...)``)
indexes NumPy views of the base's memory and updates them with small lazy results. The compiled
settled call (``shoal/_settled_calls.c``) writes such a NumPy target itself; ``np.outer`` of two
NumPy vectors whose product is small is computed by NumPy at once and held back; ``astype`` of a
small contiguous settled view is NumPy's cast of its memory. They give NumPy's values, dtypes,
errors and warnings, the warnings at NumPy's own line, on both paths."""

from __future__ import annotations

import sys
import warnings

import numpy
import pytest

import shoal.numpy as snp
from shoal import runtime
from shoal.numpy import _composed, _settled, _settled_compiled, _shape
from tests.test_settled_calls import way  # noqa: F401  (the fixture: the compiled calls, or the Python path alone)

COMPILED = _settled_compiled.SETTLED_CALLS


def _this_line() -> int:
    return sys._getframe(1).f_lineno


def _updates(np, target: numpy.ndarray) -> numpy.ndarray:
    """In-place updates of the NumPy array ``target`` by small arrays made with ``np``."""
    row = np.array(numpy.linspace(0.5, 1.5, target.shape[1]))
    column = np.array(numpy.linspace(-1.0, 1.0, target.shape[0]))
    target -= row
    target *= row + 1.0
    target /= np.sqrt(row)
    numpy.add(target, column[:, None], out=target)
    target[1:, 2:] -= np.outer(column[1:], row[2:])
    target[2] += row * 2
    return target


@pytest.mark.usefixtures("way")
def test_numpy_targets_take_numpys_values():
    want = _updates(numpy, numpy.ones((6, 7)))
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=10**6):
        got = _updates(snp, numpy.ones((6, 7)))
    assert type(got) is numpy.ndarray
    numpy.testing.assert_array_equal(got, want)


def test_the_compiled_call_writes_a_numpy_target_itself(monkeypatch):
    if COMPILED is None:
        pytest.skip("shoal/_settled_calls.c was not built here")

    def refused(*args, **kwargs):
        raise AssertionError("the Python path was asked")

    monkeypatch.setattr(_settled, "operands", refused)  # the Python path's first step in settled_ufunc
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=10**6):
        row = snp.array(numpy.linspace(0.5, 1.5, 5))
        target = numpy.ones((3, 5))
        target -= row
        numpy.multiply(target, row, out=target)
    numpy.testing.assert_array_equal(target, (numpy.ones((3, 5)) - numpy.linspace(0.5, 1.5, 5)) * numpy.linspace(0.5, 1.5, 5))


@pytest.mark.usefixtures("way")
def test_numpy_targets_raise_and_warn_as_numpys():
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=10**6):
        halves = snp.array(numpy.full(4, 0.5))
        counts = numpy.arange(4)
        with pytest.raises(numpy._core._exceptions._UFuncOutputCastingError, match="same_kind"):
            counts += halves
        numpy.testing.assert_array_equal(counts, numpy.arange(4))
        frozen = numpy.ones(4)
        frozen.flags.writeable = False
        with pytest.raises(ValueError, match="read-only"):
            frozen += halves
        wrong = numpy.ones(3)
        with pytest.raises(ValueError, match="broadcast"):
            wrong += halves
        huge = snp.array(numpy.full(4, 1e300))
        target = numpy.full(4, 1e300)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            line = _this_line() + 1
            target *= huge
        assert [(w.category, str(w.message)) for w in caught] == [(RuntimeWarning, "overflow encountered in multiply")]
        assert caught[0].filename == __file__ and caught[0].lineno == line
        numpy.testing.assert_array_equal(target, numpy.full(4, numpy.inf))


def test_a_small_outer_product_of_numpy_vectors_is_numpys_at_once(monkeypatch):
    def refused(*args, **kwargs):
        raise AssertionError("recorded")

    x, y = numpy.linspace(1.0, 2.0, 5), numpy.arange(3, dtype=numpy.int32)
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=10**6) as rt:
        monkeypatch.setattr(_composed, "outer", refused)
        product = snp.outer(x, y)
        assert type(product) is snp.ndarray and not rt._pending.instructions
        assert product.dtype == numpy.outer(x, y).dtype
        numpy.testing.assert_array_equal(product, numpy.outer(x, y))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            overflowed = snp.outer(numpy.full(2, 1e200), numpy.full(3, 1e200))
        with warnings.catch_warnings(record=True) as numpys:
            warnings.simplefilter("always")
            numpy.outer(numpy.full(2, 1e200), numpy.full(3, 1e200))
        where = [(w.category, str(w.message), w.filename, w.lineno) for w in numpys]
        assert where[0][:2] == (RuntimeWarning, "overflow encountered in multiply")
        assert [(w.category, str(w.message), w.filename, w.lineno) for w in caught] == where  # NumPy's own line in ``outer``
        numpy.testing.assert_array_equal(overflowed, numpy.full((2, 3), numpy.inf))


def test_a_large_outer_product_of_numpy_vectors_is_recorded():
    x, y = numpy.linspace(1.0, 2.0, 10), numpy.linspace(0.0, 1.0, 10)
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=10**6, settled_threshold=64) as rt:
        product = snp.outer(x, y)  # 100 elements, over the settled threshold: fused with its use
        assert any(i.op == "multiply" for i in rt._pending.instructions)
        numpy.testing.assert_array_equal(product, numpy.outer(x, y))


@pytest.mark.parametrize("source", ["float64", "int32", "bool", "complex128", "float32"])
@pytest.mark.parametrize("target", ["float32", "int8", "uint16", "bool", "float64", "complex64"])
def test_a_cast_of_a_settled_view_is_numpys_own(source, target, monkeypatch):
    def refused(*args, **kwargs):
        raise AssertionError("the general copy")

    values = numpy.array([0.0, 1.5, -2.0, 300.5, 7.25, 7e4], dtype=numpy.float64) + (1j if source == "complex128" else 0)
    given = values.astype(source) if source != "complex128" else values
    with warnings.catch_warnings(record=True) as numpys:
        warnings.simplefilter("always")
        want = given.astype(target)
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=10**6) as rt:
        lazy = snp.array(given)
        monkeypatch.setattr(_shape, "copy", refused)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            line = _this_line() + 1
            got = lazy.astype(target)
        assert not rt._pending.instructions
        assert type(got) is snp.ndarray and got.dtype == want.dtype and got.flags.c_contiguous
        numpy.testing.assert_array_equal(numpy.asarray(got), want)
    assert [(w.category, str(w.message)) for w in caught] == [(w.category, str(w.message)) for w in numpys]
    assert all(w.filename == __file__ and w.lineno == line for w in caught)


def test_casts_refused_as_numpy_refuses_them():
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=10**6):
        lazy = snp.array(numpy.linspace(0.0, 1.0, 6))
        with pytest.raises(TypeError, match="same_kind"):
            lazy.astype(numpy.int32, casting="same_kind")
        with pytest.raises(TypeError, match="not understood"):
            lazy.astype("no such dtype")
        text = lazy.astype("U8")
        assert type(text) is numpy.ndarray and text.dtype == numpy.dtype("U8")
        numpy.testing.assert_array_equal(text, numpy.linspace(0.0, 1.0, 6).astype("U8"))
