"""Large NumPy operands of lazy operations: an operator's temporary is taken without a copy
(``shoal/numpy/_temporaries.py``), any other NumPy array is copied as before, and a batch that
carries much NumPy data runs before it holds more (``SHOAL_FLUSH_BYTES``). Each test compares
with NumPy, so a temporary taken when the program could still change it shows as a wrong value."""

from __future__ import annotations

import functools
import operator
import re

import numpy
import pytest

import shoal.numpy as snp
from shoal import runtime
from shoal.numpy import _temporaries

N = 64  # 4096-element updates: large, with an eager threshold of 1024


@pytest.fixture(params=["node", "reference"])
def lazy(request, monkeypatch):
    monkeypatch.setenv("SHOAL_COMPILE", "off")
    with runtime.configure(engine=request.param, eager_threshold=1024, flush_threshold=2048, settled_threshold=0) as rt:
        yield rt


@pytest.fixture
def adoptions(monkeypatch):
    """The arrays :func:`adopted` took without a copy."""
    taken: list[numpy.ndarray] = []
    original = _temporaries.from_numpy

    def spy(value, copy=True):
        taken.append(value)
        return original(value, copy=copy)

    monkeypatch.setattr(_temporaries, "from_numpy", spy)
    return taken


def _vectors(seed: int) -> tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray]:
    rng = numpy.random.default_rng(seed)
    return rng.random((N, N)), rng.random(N), rng.random(N)


def test_rank_one_updates_from_numpy_vectors_are_numpys(lazy, adoptions):
    start, x, y = _vectors(1)
    expected = start.copy()
    a = snp.array(start)
    for k in range(N - 1):
        expected[:, k + 1 :] -= numpy.outer(x, y[k + 1 :])
        a[:, k + 1 :] -= numpy.outer(x, y[k + 1 :])
    numpy.testing.assert_array_equal(numpy.asarray(a), expected)
    assert adoptions and all(update.shape[0] == N for update in adoptions)  # later ones: NumPy's, on held memory


@pytest.mark.parametrize("name", ["add", "sub", "mul", "truediv"])
def test_every_operator_side_takes_a_temporary_and_computes_numpys_values(lazy, adoptions, name):
    start, x, y = _vectors(2)
    a = snp.array(start)
    forward = getattr(a, f"__{name}__")(numpy.outer(x, y) + 1.0)
    reflected = getattr(a, f"__r{name}__")(numpy.outer(x, y) + 1.0)
    numpy.testing.assert_array_equal(numpy.asarray(forward), getattr(start, f"__{name}__")(numpy.outer(x, y) + 1.0))
    numpy.testing.assert_array_equal(numpy.asarray(reflected), getattr(start, f"__r{name}__")(numpy.outer(x, y) + 1.0))
    assert not adoptions  # called as methods, not by the interpreter's operator: copied
    a + (numpy.outer(x, y) + 1.0)
    (numpy.outer(x, y) + 1.0) - a  # NumPy's operator reaches the lazy array through __array_ufunc__: copied
    a *= numpy.outer(x, y) + 1.0
    assert len(adoptions) == 2


def test_a_named_array_changed_after_the_operation_is_copied(lazy, adoptions):
    start, x, y = _vectors(3)
    a = snp.array(start)
    update = numpy.outer(x, y)
    a -= update
    result = a * 2.0
    update[...] = 1e6  # after the call: NumPy's result does not see it
    numpy.testing.assert_array_equal(numpy.asarray(result), (start - numpy.outer(x, y)) * 2.0)
    assert not adoptions


def test_a_temporary_seen_through_a_view_is_copied(lazy, adoptions):
    start, x, y = _vectors(4)
    a = snp.array(start)
    rows = numpy.outer(x, y)
    a += rows[:, :]  # a view: its base is the named array
    rows[...] = 0.0
    numpy.testing.assert_array_equal(numpy.asarray(a), start + numpy.outer(x, y))
    kept = []
    a -= kept.append(numpy.outer(x, y)) or kept[0]  # the list holds it too
    kept[0][...] = 0.0
    numpy.testing.assert_array_equal(numpy.asarray(a), start + numpy.outer(x, y) - numpy.outer(x, y))
    assert not adoptions


def test_a_reference_passed_on_by_c_code_is_copied(lazy, adoptions):
    start, x, y = _vectors(5)
    a = snp.array(start)
    operands = [a, numpy.outer(x, y)]
    result = functools.reduce(operator.sub, operands)  # C code hands over the list's references
    operands[1][...] = 0.0
    numpy.testing.assert_array_equal(numpy.asarray(result), start - numpy.outer(x, y))
    assert not adoptions


def test_a_reference_borrowed_by_c_code_from_a_list_is_not_taken(lazy, adoptions):
    start, x, y = _vectors(8)
    pair = [numpy.outer(x, y), snp.array(start)]  # the list holds the only reference; sort compares pair[1] < pair[0]
    with pytest.raises(ValueError, match="truth value"):
        pair.sort()  # compares the two with references borrowed from the list
    assert not adoptions


def test_small_and_read_only_temporaries_stay_as_they_are(lazy, adoptions):
    start, x, y = _vectors(6)
    a = snp.array(start)
    b = a[:4, :4] + numpy.outer(x[:4], y[:4])  # 16 elements: below the eager threshold
    c = a + numpy.broadcast_to(x, (N, N))  # a read-only view
    numpy.testing.assert_array_equal(numpy.asarray(b), start[:4, :4] + numpy.outer(x[:4], y[:4]))
    numpy.testing.assert_array_equal(numpy.asarray(c), start + x)
    assert not adoptions


@pytest.mark.parametrize("how", ["taken", "copied and deleted", "kept"])
def test_a_batch_runs_before_it_holds_more_dead_numpy_data_than_the_bound(monkeypatch, how):
    """NumPy data the batch carries for arrays that died (temporaries NumPy would have freed)
    is bounded; data of arrays the program keeps (a grid it drew, say) is not: cutting the batch
    there only costs fusion."""
    monkeypatch.setenv("SHOAL_COMPILE", "off")
    monkeypatch.setenv("SHOAL_FLUSH_BYTES", str(4 * N * N * 8))
    start, x, y = _vectors(7)
    kept = [numpy.outer(x, y) * (k + 1) for k in range(12)]
    with runtime.configure(engine="node", eager_threshold=1024, flush_threshold=2048, settled_threshold=0) as rt:
        a = snp.array(start)
        float(a[0, 0])
        flushes = rt.stats.flushes
        dead = []
        for k in range(12):
            if how == "taken":
                a -= numpy.outer(x, y) * (k + 1)
            elif how == "copied and deleted":
                update = numpy.outer(x, y) * (k + 1)
                a -= update
                del update
            else:
                a -= kept[k]
            dead.append(rt._dead_bytes)
        assert max(dead) <= 5 * N * N * 8
        if how == "kept":
            assert rt.stats.flushes == flushes
        else:
            assert rt.stats.flushes - flushes >= 2
        numpy.testing.assert_array_equal(numpy.asarray(a), _subtracted(start, kept))


def _subtracted(start: numpy.ndarray, updates: list[numpy.ndarray]) -> numpy.ndarray:
    result = start.copy()
    for update in updates:
        result -= update
    return result


def _cast(np, a):
    b = a.astype(np.int64)
    b += numpy.ones((N, N)) * 0.5  # NumPy's temporary, also under Shoal
    return b


def _output_shape(np, a):
    rows = a[:16]
    rows += numpy.ones((2, 16, N)) * 1.0
    return rows


def _broadcast(np, a):
    return a + numpy.ones((N, N + 1)) * 1.0


@pytest.mark.parametrize("program", [_cast, _output_shape, _broadcast], ids=lambda program: program.__name__[1:])
def test_a_taken_temporary_raises_numpys_error(lazy, adoptions, program):
    start, _x, _y = _vectors(9)
    with pytest.raises(Exception) as expected:
        program(numpy, start.copy())
    with pytest.raises(expected.type, match=re.escape(str(expected.value))):
        program(snp, snp.array(start))
    assert adoptions  # the error came from the path a taken temporary takes
