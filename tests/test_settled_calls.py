"""NumPy calls on settled memory in C (``shoal/_settled_calls.c``) against the Python path they
stand in for (``_settled._plain_ufunc``; ``held_product`` and ``settled_call`` for ``@``): random
loops of small operations on lazy arrays give NumPy's values and dtypes and leave the runtime in
the same state both ways (bases made and released, holds, the run of settled accesses, what is
held back); what the C path leaves to Python (broadcasts to large results, scalars, a component
that offers no memory) gives the same; a warning names the program's line."""

from __future__ import annotations

import gc
import random
import warnings

import numpy
import pytest

import shoal.numpy as snp
from shoal import base_lives, compiled_recording, drawn, held, runtime
from shoal.base_lives import LazyBase
from shoal.engine.node.engine import NodeEngine
from shoal.engine.passthrough import PassConfig, PassThrough
from shoal.numpy import _fast_ufunc, _index, _methods, _numpy_data, _settled, _settled_compiled

COMPILED = _settled_compiled.SETTLED_CALLS
WAYS = ["compiled", "python"]


@pytest.fixture(params=WAYS)
def way(request, monkeypatch):
    """The compiled calls, or the Python path alone."""
    if request.param == "compiled" and COMPILED is None:
        pytest.skip("shoal/_settled_calls.c was not built here")
    if request.param == "python":
        _python_only(monkeypatch)
    return request.param


USERS = (_settled, _fast_ufunc, _methods, _index, _settled_compiled)  # the modules that call it


def _python_only(monkeypatch) -> None:
    for module in USERS:
        monkeypatch.setattr(module, "SETTLED_CALLS", None)
    monkeypatch.setattr(_numpy_data, "compiled_hold", None)
    monkeypatch.setattr(LazyBase, "__del__", compiled_recording.python_finalizer)


def program(np, seed: int, steps: int = 120) -> list:
    """A random loop of small element-wise calls, products and broadcasts over float, integer
    and boolean arrays, and NumPy arrays updated by them (no call warns); returns what it computed."""
    rng = random.Random(seed)
    values = [np.array(numpy.linspace(0.5, 1.5, 24) * (k + 1)) for k in range(3)]
    matrix = np.array(numpy.linspace(0.1, 1.0, 24 * 24).reshape(24, 24) / 24.0)
    counts = np.array(numpy.arange(24, dtype=numpy.int64))
    weights = numpy.linspace(1.0, 0.2, 24)  # NumPy's own: ``weights @ matrix`` reaches the lazy matrix's __array_ufunc__
    kept: list = []
    for _ in range(steps):
        k, j = rng.randrange(3), rng.randrange(3)
        kind = rng.randrange(14)
        if kind == 0:
            values[k] = np.sqrt(values[k] * values[j])
        elif kind == 1:
            values[k] = values[j] / 1.25 + 0.25
        elif kind == 2:
            values[k] = np.minimum(values[k], values[j]) + 0.5
        elif kind == 3:
            values[k] = matrix @ values[j] + 1.0
        elif kind == 4:
            kept.append(values[k] @ values[j])  # a NumPy scalar
        elif kind == 5:
            counts = counts * 3 % 97 + 1
            values[k] = values[k] + counts
        elif kind == 6:
            kept.append(values[k] > values[j])
        elif kind == 7:
            kept.append(values[k][:, None] * values[j][None, :])  # 576 elements: recorded
        elif kind == 8:
            values[k] = np.maximum(values[j], numpy.float32(0.75))
        elif kind == 9:
            values[k] += values[j]  # in place: written where it is
        elif kind == 10:
            counts += 2
        elif kind == 11:
            values[k] = weights @ matrix + values[j]
        elif kind == 12:
            target = numpy.linspace(2.0, 3.0, 24)  # NumPy's array, written by a lazy operand
            target -= values[j]
            kept.append(target)
        else:
            values[k] *= 0.5
    return [*values, counts, *kept]


def _state(rt) -> dict:
    gc.collect()
    rt._record_releases()
    return {
        "stats": (rt.stats.bases_created, rt.stats.bases_released),
        "held": sorted(rt.held),
        "deferred": sorted(rt._deferred),
        "direct_run": rt.direct_run,
        "next_id": rt._next_id,
        "live": sorted(rt._bases),
        "draws noted": len(drawn._noted),
        "instructions": [(i.op, i.outputs, i.inputs, i.attrs) for i in rt._pending.instructions],
    }


class _Counting:
    """The compiled module, counting the calls it did itself."""

    done = 0

    def call(self, *args):
        answer = COMPILED.call(*args)
        self.done += answer is not None and answer is not _settled.NOT_SETTLED
        return answer

    def store(self, *args):
        answer = COMPILED.store(*args)
        self.done += answer is not None
        return answer


def _run(seed: int, settled_threshold: int) -> tuple[dict, list[numpy.ndarray]]:
    _fast_ufunc.forget()
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=10**6, settled_threshold=settled_threshold) as rt:
        program(snp, seed)  # the signatures learned alike
        results = program(snp, seed)
        state = _state(rt)
        return state, [numpy.array(value, copy=True) for value in results]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("settled_threshold", [64, 1 << 19])
def test_a_loop_of_small_calls_ends_in_the_same_state_both_ways(seed, settled_threshold, monkeypatch):
    if COMPILED is None:
        pytest.skip("shoal/_settled_calls.c was not built here")
    counting = _Counting()
    for module in USERS:
        monkeypatch.setattr(module, "SETTLED_CALLS", counting)
    fast, fast_values = _run(seed, settled_threshold)
    assert counting.done > 100, "the compiled calls did the work"
    _python_only(monkeypatch)
    slow, slow_values = _run(seed, settled_threshold)
    assert fast == slow
    expected = program(numpy, seed)
    for got, python_got, want in zip(fast_values, slow_values, expected, strict=True):
        assert got.dtype == want.dtype and python_got.dtype == want.dtype
        numpy.testing.assert_array_equal(got, want)
        numpy.testing.assert_array_equal(python_got, want)


def test_a_numpy_vector_times_a_held_matrix_is_the_compiled_product(monkeypatch):
    """``v @ m[:, k:]`` of a NumPy ``v`` reaches the lazy view's ``__array_ufunc__``, not ``@``'s
    method: it takes the compiled product as ``m[:, k:] @ v`` does (a correlation's columns)."""
    if COMPILED is None:
        pytest.skip("shoal/_settled_calls.c was not built here")
    counting = _Counting()
    for module in USERS:
        monkeypatch.setattr(module, "SETTLED_CALLS", counting)
    values = numpy.linspace(0.0, 1.0, 40 * 30).reshape(40, 30)
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=10**6, settled_threshold=64):
        matrix = snp.array(values)
        for k in range(100):
            float(matrix[k % 40, k % 30])  # element reads: the base is held
        vector = numpy.linspace(1.0, 2.0, 40)
        before = counting.done
        results = [vector @ matrix[:, k:] for k in range(5)]
        assert counting.done - before == 5
        for k, got in enumerate(results):
            assert got.dtype == numpy.float64
            numpy.testing.assert_allclose(numpy.asarray(got), vector @ values[:, k:], rtol=1e-15)


def test_holds_happen_at_the_same_access_both_ways(monkeypatch):
    """A long run of settled reads holds a base held back with its data after
    ``HOLD_BACK_ACCESSES`` reads of its own and a settled base after ``HOLD_RUN``; the compiled
    call leaves that access to Python, which holds it."""
    if COMPILED is None:
        pytest.skip("shoal/_settled_calls.c was not built here")
    monkeypatch.setattr(held, "HOLD_RUN", 6)

    def holds() -> list[tuple[int, list[int]]]:
        with runtime.configure(engine="node", eager_threshold=0, flush_threshold=10**6) as rt:
            a = snp.array(numpy.arange(10.0))
            b = a + 1.0
            seen = []
            for _ in range(12):
                c = b * 2.0 + a
                seen.append((rt.direct_run, sorted(rt.held)))
            numpy.testing.assert_array_equal(c, numpy.arange(10.0) * 3.0 + 2.0)
            return seen

    fast = holds()
    _python_only(monkeypatch)
    assert fast == holds()
    assert fast[-1][1], "a base was held"


def test_a_write_in_place_forgets_a_draws_recipe(way):
    """A random draw held back with its data is remembered as a recipe (the cluster's ranks draw
    their parts); writing it in place must forget it, or a rank would draw the old values."""
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=10**6):
        x = snp.random.default_rng(7).random(32)
        assert id(x._base.runtime._deferred[x._base.id][2]) in drawn._noted
        x += 1.0
        assert id(x._base.runtime._deferred[x._base.id][2]) not in drawn._noted
        numpy.testing.assert_array_equal(x, numpy.random.default_rng(7).random(32) + 1.0)


def test_a_warning_names_the_programs_line(way):
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=10**6):
        a = snp.array(numpy.arange(1.0, 5.0))
        zero = a * 0.0
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            line = _this_line() + 1
            ratio = a / zero
        assert [(w.category, str(w.message)) for w in caught] == [(RuntimeWarning, "divide by zero encountered in divide")]
        assert caught[0].filename == __file__ and caught[0].lineno == line
        with numpy.errstate(all="ignore"):
            want = numpy.arange(1.0, 5.0) / 0.0
        numpy.testing.assert_array_equal(ratio, want)
        with numpy.errstate(divide="raise", invalid="raise"), pytest.raises(FloatingPointError):
            a / zero


def _this_line() -> int:
    import sys

    return sys._getframe(1).f_lineno


def test_what_the_c_path_leaves_to_python_gives_numpys_values(way):
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=10**6, settled_threshold=64) as rt:
        a = snp.array(numpy.linspace(1.0, 2.0, 16))
        outer = a[:, None] * a[None, :]  # 256 elements from small operands: recorded
        assert any(i.op == "multiply" for i in rt._pending.instructions)
        scalar = snp.sum(a) * a  # a lazy 0-d operand, or a NumPy scalar
        twice = numpy.divmod(a, 0.75)  # two results
        big = snp.ones(200) + a[0]  # a view at the threshold or more
        expected = numpy.linspace(1.0, 2.0, 16)
        numpy.testing.assert_array_equal(outer, expected[:, None] * expected[None, :])
        numpy.testing.assert_allclose(scalar, expected.sum() * expected)
        for got, want in zip(twice, numpy.divmod(expected, 0.75), strict=True):
            numpy.testing.assert_array_equal(got, want)
        numpy.testing.assert_array_equal(big, numpy.ones(200) + 1.0)


def test_a_component_without_memory_of_its_own_takes_the_python_path(way):
    stack = PassThrough(PassConfig(local_loops=False), NodeEngine())
    with runtime.configure(engine=stack, eager_threshold=0, flush_threshold=10**6):
        a = snp.array(numpy.linspace(0.0, 1.0, 12))
        if COMPILED is not None:
            assert COMPILED.call(numpy.add, (a, 1.0), _settled_compiled.UFUNC) is None
        got = [numpy.array(a * 2.0 + b) for b in range(5)]
    for b, value in enumerate(got):
        numpy.testing.assert_array_equal(value, numpy.linspace(0.0, 1.0, 12) * 2.0 + b)


def test_released_results_are_counted_while_nothing_is_recorded(way):
    """A loop whose results NumPy computes records nothing; the ids of the results that died
    are counted once ``DROPPED_COUNTED`` of them wait, so the queue stays short."""
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=10**6) as rt:
        x = snp.array(numpy.linspace(0.0, 1.0, 8))
        created = rt.stats.bases_created
        for _ in range(3 * base_lives.DROPPED_COUNTED):
            x = x * 1.0000001
        assert rt.stats.bases_created - created == 3 * base_lives.DROPPED_COUNTED
        assert len(rt._dropped) < base_lives.DROPPED_COUNTED
        assert rt.stats.bases_released + len(rt._dropped) >= 3 * base_lives.DROPPED_COUNTED - 1
        assert not rt._pending.instructions


@pytest.mark.skipif(COMPILED is None, reason="shoal/_settled_calls.c was not built here")
def test_the_compiled_call_refuses_what_it_does_not_know():
    with pytest.raises(TypeError):
        COMPILED.call(numpy.add, (1.0, 2.0))
    assert COMPILED.call(numpy.add, [1.0, 2.0], _settled_compiled.UFUNC) is None  # not a tuple
    assert COMPILED.call(numpy.add, (1.0, 2.0), _settled_compiled.UFUNC) is None  # no lazy operand
    assert COMPILED.call(numpy.add, (1.0, 2.0), 7) is None  # no such kind


def _methods_of(np, row, counts) -> list:
    return [
        np.minimum.accumulate(row),
        np.add.reduce(row),
        np.add.reduceat(counts, numpy.array([0, 4, 7])),
        np.multiply.accumulate(counts),
        np.add.reduce(counts, dtype=numpy.int64),
        np.maximum.reduce([row, row * 2.0]),
    ]


def test_a_ufunc_method_of_small_settled_arrays_is_numpys(way):
    """``np.minimum.accumulate(row)``, ``np.add.reduce`` and ``np.add.reduceat`` of small lazy
    arrays without keywords: NumPy's values and dtypes, the result a new array (lazy where every
    array is), and the same with keywords and lists (the Python path)."""
    row, counts = numpy.array([5.0, 3.0, 4.0, 1.0, 2.0]), numpy.arange(10, dtype=numpy.int32) + 1
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=10**6) as rt:
        got = _methods_of(snp, snp.array(row) * 1.0, snp.array(counts) + 0)
        assert type(got[0]) is snp.ndarray and got[0]._base.id in rt._deferred
        got = [numpy.array(value, copy=True) for value in got]
    for value, expected in zip(got, _methods_of(numpy, row, counts), strict=True):
        assert numpy.asarray(value).dtype == numpy.asarray(expected).dtype
        numpy.testing.assert_array_equal(value, expected)


def stores(np, seed: int, steps: int = 80) -> list:
    """Random stores into small arrays: elements, rows, slices and tuples of them, of Python
    scalars, NumPy arrays and small lazy values, some cast to the target's dtype."""
    rng = random.Random(seed)
    grid = np.array(numpy.zeros((6, 8))) + 0.0
    counts = np.array(numpy.arange(12, dtype=numpy.int64)) * 1
    row = np.array(numpy.linspace(0.0, 1.0, 8)) + 0.0
    for step in range(steps):
        kind = rng.randrange(7)
        if kind == 0:
            grid[rng.randrange(6), rng.randrange(8)] = step * 0.5
        elif kind == 1:
            grid[rng.randrange(6)] = row * step
        elif kind == 2:
            grid[1:3, 2:5] = numpy.full((2, 3), float(step))
        elif kind == 3:
            counts[rng.randrange(12)] = step
        elif kind == 4:
            counts[2:5] = numpy.array([1.5, 2.5, 3.5])  # cast to integers, no warning
        elif kind == 5:
            row[rng.randrange(8)] = numpy.float32(step)
        else:
            row = row + grid[rng.randrange(6)]
    return [grid, counts, row]


@pytest.mark.parametrize("seed", range(4))
def test_stores_end_in_the_same_state_both_ways(seed, monkeypatch):
    if COMPILED is None:
        pytest.skip("shoal/_settled_calls.c was not built here")

    def run() -> tuple[dict, list[numpy.ndarray]]:
        with runtime.configure(engine="node", eager_threshold=0, flush_threshold=10**6) as rt:
            results = stores(snp, seed)
            return _state(rt), [numpy.array(value, copy=True) for value in results]

    counting = _Counting()
    for module in USERS:
        monkeypatch.setattr(module, "SETTLED_CALLS", counting)
    fast, fast_values = run()
    assert counting.done > 20, "the compiled stores and calls did some of the work"
    _python_only(monkeypatch)
    slow, slow_values = run()
    assert fast == slow
    for got, python_got, want in zip(fast_values, slow_values, stores(numpy, seed), strict=True):
        assert got.dtype == want.dtype
        numpy.testing.assert_array_equal(got, want)
        numpy.testing.assert_array_equal(python_got, want)


def test_stores_raise_and_warn_as_numpys(way):
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=10**6):
        a = snp.array(numpy.zeros(5)) + 0.0
        small = snp.array(numpy.zeros(3, dtype=numpy.int8)) + numpy.int8(0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            line = _this_line() + 1
            a[1:2] = numpy.array([2.0 + 1.0j])
        assert [w.category.__name__ for w in caught] == ["ComplexWarning"] and caught[0].lineno == line
        assert caught[0].filename == __file__
        with pytest.raises(TypeError, match="not 'complex'"):
            a[1] = 2.0 + 1.0j
        with pytest.raises(IndexError):
            a[7] = 1.0
        with pytest.raises(OverflowError):
            small[0] = 1000
        with pytest.raises(ValueError, match="could not broadcast"):
            a[1:3] = numpy.ones(3)
        a.flags.writeable = False
        with pytest.raises(ValueError, match="read-only"):
            a[0] = 1.0
        numpy.testing.assert_array_equal(a, [0.0, 2.0, 0.0, 0.0, 0.0])


def test_one_code_run_with_two_module_namespaces_warns_in_each(way):
    """The trampoline a warning's line is found through is kept per code and bytecode offset; the
    same code run with other module globals (``FunctionType(code, other)``) gets its own, so the
    ``default`` filter's once-per-location registry is that module's, as under NumPy."""
    source = "def ratio(a, b):\n    return a / b\n"
    first: dict = {"__name__": "first_module"}
    exec(compile(source, "<two namespaces>", "exec"), first)
    second: dict = {"__name__": "second_module"}
    other = type(first["ratio"])(first["ratio"].__code__, second)
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=10**6):
        a = snp.array(numpy.arange(1.0, 4.0)) + 0.0
        zero = a * 0.0
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            for _ in range(3):
                first["ratio"](a, zero)
                other(a, zero)
    assert [w.filename for w in caught] == ["<two namespaces>", "<two namespaces>"], [str(w.message) for w in caught]
    assert "__warningregistry__" in first and "__warningregistry__" in second


def test_threads_computing_small_results_at_once_get_numpys_values(way):
    """The compiled calls take the runtime's lock as the Python path does: two threads computing
    small settled results and storing into them at once lose nothing and share no base."""
    import threading

    results: dict[int, list] = {}
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            for _ in range(20):  # long enough for the interpreter to switch threads mid-loop
                results[seed] = [numpy.array(value, copy=True) for value in program(snp, seed) + stores(snp, seed)]
        except BaseException as error:  # reported by the main thread
            errors.append(error)

    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=10**6):
        threads = [threading.Thread(target=work, args=(seed,)) for seed in (11, 12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not any(thread.is_alive() for thread in threads) and not errors, errors
    for seed in (11, 12):
        for got, want in zip(results[seed], program(numpy, seed) + stores(numpy, seed), strict=True):
            numpy.testing.assert_array_equal(got, want)


def test_a_read_only_result_given_away_is_declared_not_held_back(way):
    """``wrap_numpy`` holds back a result it is given only where the engine may write that very
    array; read-only data (NumPy's own array of a buffer it must not write) is declared with a
    copy, as ``Runtime.new_base`` declares it, and stays as it was."""
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=10**6) as rt:
        given = numpy.arange(6.0)
        given.flags.writeable = False
        lazy = _numpy_data.wrap_numpy(given)
        assert lazy._base.id not in rt._deferred
        lazy += 1.0
        numpy.testing.assert_array_equal(lazy, numpy.arange(6.0) + 1.0)
    numpy.testing.assert_array_equal(given, numpy.arange(6.0))
