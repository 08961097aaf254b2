"""Recording a remembered ufunc call in C (``shoal/numpy/_fast_record.c``) against the Python
``_fast_ufunc.record`` it stands in for: random loop bodies record the same batch both ways, with
the same warning sites and NumPy's values; every kind of call the C path leaves to Python (NumPy
data, transposed views, integers out of range, NumPy and object scalars, a read-only output,
stale caches of the error state and the filters, a replaced ``call_site``) gives NumPy's values,
errors and warnings at the user's line; the common case never reaches the Python rest."""

from __future__ import annotations

import gc
import random
import warnings

import numpy
import pytest

import shoal.numpy as snp
from shoal import runtime
from shoal.numpy import _fast_ufunc, _methods

compiled = pytest.mark.skipif(_fast_ufunc.FAST_RECORD is None, reason="shoal/numpy/_fast_record.c was not built here")


def _python_record(monkeypatch) -> None:
    monkeypatch.setattr(_fast_ufunc, "record", _fast_ufunc.record_python)
    monkeypatch.setattr(_methods, "record_seen", _fast_ufunc.record_python)


@pytest.fixture(params=["compiled", "python"])
def way(request, monkeypatch):
    if request.param == "compiled" and _fast_ufunc.FAST_RECORD is None:
        pytest.skip("shoal/numpy/_fast_record.c was not built here")
    if request.param == "python":
        _python_record(monkeypatch)
    return request.param


def program(np, seed: int, steps: int = 80) -> list:
    """A random loop of remembered calls of every operand kind the key knows, some of which warn."""
    rng = random.Random(seed)
    grid = np.array(numpy.linspace(-1.0, 1.0, 48).reshape(6, 8))
    rows = [np.array(numpy.linspace(0.5, 1.5, 8) * (k + 1)) for k in range(3)]
    ints = np.array(numpy.arange(8, dtype=numpy.int32))
    longs = np.array(numpy.arange(8, dtype=numpy.int64))
    numpy_row = numpy.linspace(2.0, 3.0, 8)
    long_row = np.array(numpy.linspace(0.0, 1.0, 64))
    kept: list = []
    for step in range(steps):
        k, j = rng.randrange(3), rng.randrange(3)
        kind = rng.randrange(12)
        if kind == 0:
            rows[k] = rows[k] * rows[j] + 0.5
        elif kind == 1:
            rows[k] = np.log(rows[j] - 1.0)  # invalid and divide by zero where rows[j] <= 1
        elif kind == 2:
            kept.append(longs * 2.5)  # a float where an int comes next: another signature
            kept.append(longs * 3 + 2**40)  # a weak int only int64 holds
        elif kind == 3:
            for large in (7, 2**40, 2**70):  # in int32's range; out of it; in no integer dtype's
                try:
                    kept.append(ints + large)
                except OverflowError as error:  # NumPy's
                    kept.append(numpy.asarray(str(error)))
        elif kind == 4:
            rows[k] = rows[j] / numpy.float32(3.0) + numpy.int16(2)
        elif kind == 5:
            rows[k] += rows[j] * True
        elif kind == 6:
            kept.append(np.ascontiguousarray(grid.T) * 2.0)  # C's order, the same shape
            transposed = grid.T * 2.0  # axes in another order: the Python key orders them
            kept += [numpy.asarray(transposed.strides), transposed + grid.T]
        elif kind == 7:
            kept.append(grid[:, :4] - numpy_row[:4])  # NumPy data carried
        elif kind == 8:
            kept.append(1.0 / (grid[k] - grid[j]))  # divides by zero where k == j
        elif kind == 9:
            kept.append(np.minimum(grid, rows[k]) * (1 + 2j))
        elif kind == 10:
            kept.append(grid[k, j] * 2.0 + grid[j, k])  # 0-d results
            np.multiply(rows[k], 0.5, out=rows[j])  # into a lazy output
            np.add(rows[k], 1.0, out=rows[j])
            try:
                np.add(rows[k], 1.0, out=np.broadcast_to(rows[j], (8,)))  # a read-only output
            except ValueError as error:  # NumPy's
                kept.append(numpy.asarray(str(error)))
        else:
            rows[k] = np.sqrt(abs(rows[j])) - ints
        if step % 8 == 0:
            kept.append(long_row[k : k + 4] * 2.0)  # a small view of recorded work
            long_row = long_row * 1.5 - 0.25  # recorded also where small views are settled
    long_row = long_row * 1.5 - 0.25  # left recorded at the end
    return rows + kept + [long_row]


def _run(np, seed: int) -> tuple[list, list]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = [numpy.asarray(value) for value in program(np, seed)]
    return results, [(w.category, str(w.message), w.lineno) for w in caught]


def _snapshot(rt) -> dict:
    pending = rt._pending
    return {
        "instructions": [(i.op, i.outputs, i.inputs, i.attrs) for i in pending.instructions],
        "bases": [(d.id, d.dtype, d.size) for d in pending.bases],
        "sites": sorted((position, site.filename, site.lineno, site.warned) for position, site in rt._sites.items()),
        "next_id": rt._next_id,
    }


def _recorded(seed: int, settled_threshold: int) -> tuple[dict, list]:
    _fast_ufunc.forget()  # both ways learn the signatures alike
    with numpy.errstate(all="warn"), warnings.catch_warnings(record=True):  # also the learning round's, given at the runtime's close
        warnings.simplefilter("always")
        with runtime.configure(engine="node", eager_threshold=0, flush_threshold=10**6, settled_threshold=settled_threshold) as rt:
            program(snp, seed, steps=40)  # learns
            values = program(snp, seed, steps=40)
            gc.collect()
            rt._record_releases()
            recorded = _snapshot(rt)
            return recorded, [numpy.asarray(value) for value in values]


@compiled
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("settled_threshold", [0, 16])  # 16: the 8-element rows are computed by NumPy at once
def test_a_loop_body_records_the_same_batch_both_ways(seed, settled_threshold, monkeypatch):
    fast, fast_values = _recorded(seed, settled_threshold)
    assert any(op != "release" for op, *_ in fast["instructions"]), "the program recorded nothing"
    assert fast["sites"] or settled_threshold, "the program recorded nothing that can warn"
    _python_record(monkeypatch)
    slow, slow_values = _recorded(seed, settled_threshold)
    assert fast == slow
    for got, want in zip(fast_values, slow_values, strict=True):
        numpy.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("seed", [5, 6, 7])
def test_every_operand_kind_gives_numpys_values_errors_and_warnings(seed, way):
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=64, settled_threshold=0):
        for _ in range(2):  # the second time every signature is remembered
            got = _run(snp, seed)
    expected = _run(numpy, seed)
    assert len(got[0]) == len(expected[0])
    for have, want in zip(got[0], expected[0], strict=True):
        numpy.testing.assert_array_equal(have, want)
        assert numpy.asarray(have).dtype == numpy.asarray(want).dtype
    assert got[1] == expected[1]


@compiled
def test_the_common_case_never_reaches_the_python_rest(monkeypatch):
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=10**6, settled_threshold=0):
        a, b = snp.array(numpy.arange(1.0, 9.0)), snp.array(numpy.full(8, 2.0))
        grid = snp.array(numpy.ones((3, 4)))
        for _ in range(2):
            c = a * b
            c += 1.0
            d = snp.sqrt(c) + numpy.float32(0.5) - 3
            grid.T * 1.0
        rest: list = []
        recorded = _fast_ufunc.recorded
        monkeypatch.setattr(_fast_ufunc, "recorded", lambda *args: rest.append(args[0]) or recorded(*args))
        _fast_ufunc.FAST_RECORD.configure({**_fast_ufunc.configuration(), "recorded": _fast_ufunc.recorded})
        try:
            for _ in range(3):
                c = a * b
                c += 1.0
                d = snp.sqrt(c) + numpy.float32(0.5) - 3
            assert rest == []
            grid.T * 1.0  # remembered, but not in C's axis order: the Python rest
            assert rest == [numpy.multiply]
        finally:
            _fast_ufunc.FAST_RECORD.configure(_fast_ufunc.configuration())
        numpy.testing.assert_array_equal(d, numpy.sqrt(numpy.arange(1.0, 9.0) * 2.0 + 1.0) + numpy.float32(0.5) - 3)


@compiled
def test_a_filter_or_error_state_changed_between_calls_is_read_at_each(way):
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=64, settled_threshold=0):
        a = snp.array(numpy.arange(4.0))
        for _ in range(2):
            b = 1.0 / (a + 1.0)
        with numpy.errstate(divide="raise"):
            with pytest.raises(FloatingPointError, match="divide by zero"):
                1.0 / a
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(RuntimeWarning, match="divide by zero"):
                1.0 / a
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            numpy.asarray(1.0 / a)
        assert [str(w.message) for w in caught] == ["divide by zero encountered in divide"]
        numpy.testing.assert_array_equal(b, 1.0 / (numpy.arange(4.0) + 1.0))


@compiled
def test_the_compiled_record_refuses_a_wrong_call_and_configuration():
    fast = _fast_ufunc.FAST_RECORD
    with pytest.raises(TypeError, match="record takes 3 arguments"):
        fast.record(numpy.add)
    with pytest.raises(TypeError, match="dict"):
        fast.configure(None)
    with pytest.raises(KeyError, match="missing"):
        fast.configure({})
    with pytest.raises(TypeError, match="not a class"):
        fast.configure({**_fast_ufunc.configuration(), "View": 1})
    fast.configure(_fast_ufunc.configuration())  # refused settings changed nothing
    a = snp.array(numpy.arange(3.0))
    numpy.testing.assert_array_equal(a * 2.0, numpy.arange(3.0) * 2.0)
