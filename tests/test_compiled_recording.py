"""The runtime's bookkeeping for a remembered element-wise call in C (``shoal/_record_calls.c``)
against the Python methods it stands in for (``Runtime.record_new``, ``Runtime.record_call``,
``LazyBase.__del__``): random loop bodies record the same batch both ways, with the same
statistics and warning sites, and compute NumPy's values; what the C path leaves to Python (a
base held back or held for NumPy, NumPy data carried, a flush due, a closed runtime) gives the
same batches and values as the Python path."""

from __future__ import annotations

import gc
import random
import shutil
import sys
import threading
import warnings

import numpy
import pytest

import shoal.numpy as snp
from shoal import compiled_recording, fp_warnings, info, runtime
from shoal.base_lives import LazyBase
from shoal.numpy import _fast_ufunc, _settled_compiled

compiled = pytest.mark.skipif(compiled_recording.RECORDING is None, reason="shoal/_record_calls.c was not built here")
compiled_sites = pytest.mark.skipif(fp_warnings.known_call_site is None, reason="shoal/_call_sites.c was not built here")
WAYS = ["compiled", "python"]


@pytest.fixture(params=WAYS)
def way(request, monkeypatch):
    """The compiled bookkeeping, or the Python methods alone."""
    if request.param == "compiled" and compiled_recording.RECORDING is None:
        pytest.skip("shoal/_record_calls.c was not built here")
    if request.param == "python":
        _python_only(monkeypatch)
    return request.param


def _python_only(monkeypatch) -> None:
    monkeypatch.setattr(compiled_recording, "record_new", runtime.Runtime.record_new)
    monkeypatch.setattr(compiled_recording, "record_call", runtime.Runtime.record_call)
    monkeypatch.setattr(LazyBase, "__del__", compiled_recording.python_finalizer)


def program(np, seed: int, steps: int = 60):
    """A random loop body of binary, unary, in-place and scalar calls over four arrays of positive
    values (no call warns); returns the arrays."""
    rng = random.Random(seed)
    arrays = [np.array(numpy.linspace(0.5, 1.5, 48) * (k + 1)) for k in range(4)]
    for _ in range(steps):
        k, j = rng.randrange(4), rng.randrange(4)
        kind = rng.randrange(6)
        if kind == 0:
            arrays[k] = np.sqrt(arrays[k] * arrays[j])
        elif kind == 1:
            arrays[k] = arrays[j] + 0.25
        elif kind == 2:
            arrays[k] = np.sqrt(arrays[j])
        elif kind == 3:
            arrays[k] += arrays[j]
        elif kind == 4:
            arrays[k] = 0.5 * arrays[j] + arrays[k]
        else:
            arrays[k] = np.minimum(arrays[k], arrays[j]) / 1.5
    return arrays


def _snapshot(rt) -> dict:
    pending = rt._pending
    return {
        "instructions": [(i.op, i.outputs, i.inputs, i.attrs) for i in pending.instructions],
        "bases": [(d.id, d.dtype, d.size) for d in pending.bases],
        "sites": sorted(rt._sites),
        "stats": (rt.stats.bases_created, rt.stats.bases_released),
        "written": set(rt._written),
        "read": set(rt._read),
        "declared": set(rt._declared),
        "small_run": rt._small_run,
        "next_id": rt._next_id,
        "live": set(rt._bases),
    }


def _recorded(seed: int, settled_threshold: int = 0) -> tuple[dict, list[numpy.ndarray]]:
    _fast_ufunc.forget()  # both ways learn the signatures alike
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=10**6, settled_threshold=settled_threshold) as rt:
        for _ in range(2):  # the second time every call's signature is remembered
            arrays = program(snp, seed)
            values = [numpy.array(a, copy=True) for a in arrays]  # no NumPy view of held memory stays alive
        arrays = program(snp, seed)
        gc.collect()
        rt._record_releases()  # the releases of what the collection freed, as the next call would record them
        recorded = _snapshot(rt)
        return recorded, [numpy.asarray(a) for a in arrays] + values


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("settled_threshold", [0, 32])
def test_a_loop_body_records_the_same_batch_both_ways(seed, settled_threshold, monkeypatch):
    if compiled_recording.RECORDING is None:
        pytest.skip("shoal/_record_calls.c was not built here")
    fast, fast_values = _recorded(seed, settled_threshold)
    assert fast["instructions"], "the program recorded nothing"
    _python_only(monkeypatch)
    slow, slow_values = _recorded(seed, settled_threshold)
    assert fast == slow
    expected = program(numpy, seed)
    for got, python_got, want in zip(fast_values, slow_values, expected + expected, strict=True):
        numpy.testing.assert_array_equal(got, want)
        numpy.testing.assert_array_equal(python_got, want)


@compiled
def test_a_remembered_call_in_the_common_case_never_reaches_the_python_methods(monkeypatch):
    _fast_ufunc.forget()
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=10**6, settled_threshold=0) as rt:
        program(snp, 3)  # learns the signatures
        numpy.asarray(program(snp, 3)[0]).copy()

        python_calls = []
        for name in ("record_new", "record_call", "release"):
            method = getattr(runtime.Runtime, name)
            monkeypatch.setattr(runtime.Runtime, name, lambda *args, _method=method, _name=name: python_calls.append(_name) or _method(*args))
        created = rt.stats.bases_created
        arrays = program(snp, 3)
        gc.collect()
        # The four arrays' data is held back until a call first reads each (Runtime.record_new declares it).
        assert rt.stats.bases_created > created + 30 and len(python_calls) <= 4, python_calls
        monkeypatch.undo()
        for got, want in zip(arrays, program(numpy, 3), strict=True):
            numpy.testing.assert_array_equal(got, want)


def test_threads_recording_into_one_runtime_get_numpys_values(way):
    """The compiled path takes the runtime's lock as the Python one does: two threads recording
    remembered calls at once (and flushing at a small threshold) lose no instruction."""
    results: dict[int, list] = {}
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            for _ in range(3):
                results[seed] = [numpy.array(a, copy=True) for a in program(snp, seed, steps=200)]
        except BaseException as error:  # reported by the main thread
            errors.append(error)

    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=48, settled_threshold=0):
        threads = [threading.Thread(target=work, args=(seed,)) for seed in (5, 6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not any(thread.is_alive() for thread in threads) and not errors, errors
    for seed in (5, 6):
        for got, want in zip(results[seed], program(numpy, seed, steps=200), strict=True):
            numpy.testing.assert_array_equal(got, want)


def test_a_temporarys_release_is_recorded_where_it_died(way):
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=10**6, settled_threshold=0) as rt:
        a = snp.array(numpy.arange(32.0))
        for _ in range(2):
            b = (a * 2.0) + 1.0  # the product dies inside the expression
        gc.collect()
        a + 0.0
        ops = [i.op for i in rt._pending.instructions]
        released = [dict(i.attrs)["base"] for i in rt._pending.instructions if i.op == "release"]
        assert ops.count("release") >= 3 and len(set(released)) == len(released)
        assert all(base not in rt._bases for base in released)
        numpy.testing.assert_array_equal(b, numpy.arange(32.0) * 2.0 + 1.0)


def test_a_flush_due_at_the_threshold_is_flushed_both_ways(way):
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=16, settled_threshold=0) as rt:
        a = snp.array(numpy.linspace(0, 1, 40))
        for _ in range(40):
            a = a * 0.5 + 0.25
        assert rt.stats.flushes >= 2
        assert len(rt._pending.instructions) < 16 + 8
        expected = numpy.linspace(0, 1, 40)
        for _ in range(40):
            expected = expected * 0.5 + 0.25
        numpy.testing.assert_array_equal(a, expected)


def test_held_back_and_held_bases_go_the_python_way_with_numpys_values(way):
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=10**6, settled_threshold=64) as rt:
        small = snp.array(numpy.arange(6.0))  # held back: its data, no declaration yet
        assert small._base.id in rt._deferred
        large = snp.ones(200)
        combined = large[:6] * small
        combined = large[:6] * small  # remembered: the C path hands the held-back base to Python
        assert small._base.id not in rt._deferred
        grid = snp.array(numpy.arange(400.0).reshape(20, 20)) + 0.0
        total = 0.0
        for i in range(20):
            total += float(grid[i, i])  # element reads: the grid is held for NumPy
        doubled = grid * 2.0
        doubled = grid * 2.0
        numpy.testing.assert_array_equal(combined, numpy.arange(6.0))
        numpy.testing.assert_array_equal(doubled, numpy.arange(400.0).reshape(20, 20) * 2.0)
        assert total == float(numpy.trace(numpy.arange(400.0).reshape(20, 20)))


def test_a_release_with_numpy_data_carried_counts_its_bytes_both_ways(way):
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=10**6, settled_threshold=0) as rt:
        rt.flush_bytes = 4096
        a = snp.array(numpy.arange(16.0))
        for _ in range(2):
            a * 2.0
        flushes = rt.stats.flushes
        for k in range(8):
            carried = snp.array(numpy.full(256, float(k))) + a[0]  # 2 KiB carried, then released
            del carried
            a * 2.0
        assert rt.stats.flushes > flushes  # the dead bytes reached flush_bytes
        numpy.testing.assert_array_equal(a * 2.0, numpy.arange(16.0) * 2.0)


def test_a_base_dying_after_its_runtime_closed_records_nothing(way):
    with runtime.configure(engine="node", eager_threshold=0, settled_threshold=0) as rt:
        a = snp.array(numpy.arange(8.0)) * 3.0
        a = snp.array(numpy.arange(8.0)) * 3.0
        numpy.testing.assert_array_equal(a, numpy.arange(8.0) * 3.0)
    assert rt.closed
    released = len(rt._released)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        del a
        gc.collect()
    assert len(rt._released) == released


@compiled
def test_the_compiled_functions_refuse_a_wrong_call():
    fast = compiled_recording.RECORDING
    with pytest.raises(TypeError, match="record_new takes 9 arguments"):
        fast.record_new(None)
    with pytest.raises(TypeError, match="record_call takes 7 arguments"):
        fast.record_call(None, "add")
    with pytest.raises(AttributeError):
        fast.record_call(object(), "add", None, (), 1, 1, None)  # not a runtime: no attributes


@pytest.mark.full
@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler: the bookkeeping is not built")
def test_the_install_built_the_compiled_bookkeeping():
    assert compiled_recording.RECORDING is not None, "pip install -e . should have compiled shoal/_record_calls.c"
    assert LazyBase.__del__ is not compiled_recording.python_finalizer, "... and shoal/_base_release.c"

    assert fp_warnings.known_call_site is not None, "... and shoal/_call_sites.c"
    assert _settled_compiled.SETTLED_CALLS is not None, "... and shoal/_settled_calls.c"
    assert _fast_ufunc.FAST_RECORD is not None and _fast_ufunc.record is _fast_ufunc.FAST_RECORD.record, "... and shoal/numpy/_fast_record.c"


def test_info_says_how_recorded_calls_are_kept(monkeypatch):
    assert info.report().count("recorded calls' bookkeeping: ") == 1
    assert info.report().count("calls on settled memory: ") == 1
    assert info.settled_calls().startswith("compiled" if _settled_compiled.SETTLED_CALLS is not None else "Python")
    assert info.call_bookkeeping().startswith("compiled" if compiled_recording.RECORDING is not None else "Python")
    monkeypatch.setattr(compiled_recording, "RECORDING", None)
    assert info.call_bookkeeping().startswith("Python: the compiled bookkeeping was not built")


@compiled_sites
def test_the_compiled_site_lookup_finds_what_call_site_cached_and_nothing_else():
    from shoal.warning_filters import filters_now

    def look(way: str, frame):
        if way == "python":
            return fp_warnings.call_site(frame, 1)
        filters, internal, warned = filters_now(), fp_warnings._internal_files, 1
        if way == "other filters":
            filters = ((), "always")
        elif way == "a file not seen":
            internal = {}
        elif way == "other categories":
            warned = 2
        return fp_warnings.known_call_site(frame, warned, filters, internal, fp_warnings._call_sites)

    ways = ("python", "compiled", "other filters", "a file not seen", "other categories")
    found = dict(zip(ways, [look(way, sys._getframe(0)) for way in ways], strict=True))  # one bytecode offset for all
    site = found["python"]
    assert site is not None and site.filename == __file__
    assert found == {"python": site, "compiled": site, "other filters": None, "a file not seen": None, "other categories": None}
    assert fp_warnings.known_call_site("not a frame", 1, filters_now(), fp_warnings._internal_files, fp_warnings._call_sites) is None
    with pytest.raises(TypeError, match="5 arguments"):
        fp_warnings.known_call_site(sys._getframe(0))


@pytest.mark.skipif(LazyBase.__del__ is compiled_recording.python_finalizer, reason="shoal/_base_release.c was not built here")
def test_the_compiled_finalizer_refuses_what_is_not_a_base():
    from shoal._base_release import finalizer

    with pytest.raises(AttributeError, match="runtime"):
        finalizer(int, 1024)  # no runtime, id and held slots
    with pytest.raises(TypeError):
        LazyBase.__del__(object())
