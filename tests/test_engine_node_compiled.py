"""Compiled (Numba) kernels against the reference engine: dtypes, casts, reductions, caching."""

from __future__ import annotations

import numpy as np
import psutil
import pytest
from engine_node_harness import node_engine, run_both
from engine_node_recorder import Recorder
from test_engine_node_differential import jacobi, sample

from shoal.bytecode.opcodes import spec
from shoal.engine.node.codegen.templates import EXPRESSIONS
from shoal.engine.node.compile import kernel_cache as compiler

pytest.importorskip("numba")
pytestmark = pytest.mark.full


@pytest.fixture(autouse=True)
def kernel_cache(tmp_path_factory, monkeypatch):
    directory = tmp_path_factory.getbasetemp() / "shoal-kernels"
    monkeypatch.setenv("SHOAL_CACHE_DIR", str(directory))
    return directory / "kernels"


def compiled_ops(dtype: np.dtype) -> list[str]:
    names = []
    for name, (kinds, _) in EXPRESSIONS.items():
        ufunc = spec(name).ufunc
        if ufunc is None or ufunc.nout != 1:
            continue
        try:
            loop = ufunc.resolve_dtypes((dtype,) * ufunc.nin + (None,))[0]
        except (TypeError, np.exceptions.DTypePromotionError):
            continue
        if loop.char == "e":
            continue  # half precision stays on the NumPy path
        if loop.kind in kinds and (loop.kind != "b" or name not in ("subtract", "negative")):
            names.append(name)
    return names


@pytest.mark.parametrize("dtype", ["float64", "float32", "int16", "uint8", "bool"])
def test_compiled_element_wise_ops_match_reference(dtype):
    dtype = np.dtype(dtype)
    names = compiled_ops(dtype)

    def program(rec: Recorder):
        x, y = rec.array(sample(dtype, 300)), rec.array(sample(dtype, 300)[::-1].copy())
        kept = []
        for name in names:
            operands = (x, y)[: spec(name).ufunc.nin]
            kept.append(rec.ufunc(name, *operands))
        kept.append(rec.where(rec.ufunc("greater", x, y), x, 2))
        return kept

    engine = run_both(program, block=64, compile="sync", exact=False)
    stats = engine.last_stats
    assert engine.compile_errors == []
    assert stats.kernels == stats.compilable_kernels >= 1
    assert stats.compiled_block_ops == stats.block_ops


def test_compiled_casts_and_weak_scalars_wrap_like_numpy():
    def program(rec):
        i1 = rec.array(np.arange(-128, 128, dtype=np.int8))
        u2 = rec.array(np.arange(0, 256, dtype=np.uint16) * 257)
        f4 = rec.array(np.linspace(-3, 3, 256, dtype=np.float32))
        a = rec.ufunc("add", i1, 100)
        b = rec.ufunc("multiply", u2, 3)
        c = rec.ufunc("multiply", f4, 0.1)
        d = rec.ufunc("add", i1, f4)
        e = rec.empty((256,), np.int16)
        rec.copy(e, c)
        f = rec.ufunc("divide", i1, 3)
        return [a, b, c, d, e, f]

    engine = run_both(program, block=32, compile="sync", exact=False)
    assert engine.last_stats.compiled_block_ops == engine.last_stats.block_ops


@pytest.mark.parametrize(("op", "dtype"), [("sum", "float32"), ("prod", "int32"), ("min", "float64"), ("max", "uint8"), ("any", "bool"), ("all", "float64"), ("mean", "int16")])
def test_compiled_reductions_end_a_chain(op, dtype):
    dtype = np.dtype(dtype)

    def program(rec):
        values = sample(dtype, 400).reshape(20, 20)
        if op == "prod":
            values = np.where(values == 0, 1, values).astype(dtype)
        a = rec.array(values)
        t = rec.ufunc("maximum", rec.index(a, (slice(1, None), slice(None, -1))), rec.index(a, (slice(None, -1), slice(1, None))))
        result = rec.reduce(op, t)
        rec.release(t)
        return [result]

    engine = run_both(program, block=50, compile="sync", exact=False)
    assert engine.last_stats.kernels == 1 and engine.last_stats.compiled_block_ops > 0


@pytest.mark.parametrize("block", [7, 64])
def test_compiled_stencil_over_non_aligned_blocks(block):
    engine = run_both(jacobi(3, shape=(17, 23)), block=block, compile="sync", exact=False)
    assert engine.last_stats.compiled_block_ops == engine.last_stats.block_ops


def test_kernels_are_cached_on_disk_by_structure(kernel_cache):
    run_both(jacobi(1, shape=(9, 9)), block=16, compile="sync", exact=False)
    sources = sorted(kernel_cache.glob("shoal_kernel_*.py"))
    assert sources
    assert list((kernel_cache / "__pycache__").glob("*.nbi"))
    run_both(jacobi(1, shape=(30, 40)), block=16, compile="sync", exact=False)
    assert sorted(kernel_cache.glob("shoal_kernel_*.py")) == sources  # same structure, same kernel


def square_roots(engine, shift):
    rec = Recorder(first_id=int(shift * 1000))
    a = rec.array(np.arange(1000.0))
    out = rec.ufunc("sqrt", rec.ufunc("add", a, shift))
    engine.execute(rec.new_batch())
    np.testing.assert_allclose(engine.fetch(out), np.sqrt(np.arange(1000.0) + shift))
    return engine.last_stats


def test_a_short_program_is_never_held_up_by_the_compiler():
    engine = node_engine(block=64, compile="background")
    try:
        stats = square_roots(engine, 0.25)
        engine.wait_for_compiler()
        assert stats.compiled_block_ops == 0
        assert square_roots(engine, 0.5).compiled_block_ops == 0  # not hot enough to pay off
    finally:
        engine.shutdown()


def test_a_hot_kernel_compiles_in_the_background_and_is_then_loaded_from_disk(monkeypatch):
    monkeypatch.setattr(compiler, "estimated_compile_seconds", lambda *args, **kwargs: 0.0)
    engine = node_engine(block=64, compile="background")
    try:
        assert square_roots(engine, 0.25).compiled_block_ops == 0  # NumPy path meanwhile
        engine.wait_for_compiler()
        stats = square_roots(engine, 0.5)  # the same structure again
        assert stats.compiled_block_ops == stats.block_ops
        assert psutil.Process().children()  # compiled in a worker process, not under our GIL
    finally:
        engine.shutdown()
    assert not psutil.Process().children()
    monkeypatch.setattr(compiler, "estimated_compile_seconds", lambda *args, **kwargs: 1e9)
    monkeypatch.setattr(compiler, "LOAD_SECONDS", 0.0)
    monkeypatch.setattr(compiler, "LOAD_SECONDS_PER_KERNEL", 0.0)
    fresh = node_engine(block=64, compile="background")
    try:
        square_roots(fresh, 1.0)  # found in the disk cache: loading is cheap, compiling is not
        fresh.wait_for_compiler()
        stats = square_roots(fresh, 2.0)
        assert stats.compiled_block_ops == stats.block_ops
    finally:
        fresh.shutdown()


def test_compiled_kernel_with_several_reductions_and_an_update_between_them():
    def program(rec):
        a = rec.array(np.linspace(-1, 1, 500))
        low = rec.reduce("min", a)
        total = rec.reduce("sum", a)
        rec.emit("multiply", (a,), (a, 3.0))
        high = rec.reduce("max", a)
        mean = rec.reduce("mean", a)
        return [low, total, high, mean, a]

    engine = run_both(program, block=64, compile="sync", exact=False)
    assert engine.last_stats.kernels == 1
    assert engine.last_stats.compiled_block_ops == engine.last_stats.block_ops - 4  # 4 folds


def test_a_cached_kernel_runs_from_the_first_block_of_a_batch_that_outweighs_loading_it(monkeypatch):
    warm = node_engine(block=64, compile="sync")
    try:
        square_roots(warm, 0.25)  # puts the kernel in the disk cache
    finally:
        warm.shutdown()
    small = node_engine(block=64, compile="background")
    try:
        stats = square_roots(small, 0.5)  # 1000 elements: far less work than loading Numba
        assert stats.compiled_block_ops == 0
    finally:
        small.shutdown()
    monkeypatch.setattr(compiler, "NUMPY_SECONDS_PER_ELEMENT_STEP", 1e-3)  # as if the batch were huge
    large = node_engine(block=64, compile="background")
    try:
        stats = square_roots(large, 1.0)
        assert stats.block_ops > 1 and stats.compiled_block_ops == stats.block_ops
        assert not psutil.Process().children()  # loaded in-process, nothing compiled
    finally:
        large.shutdown()


def test_a_batch_that_outweighs_compiling_queues_the_kernel_before_it_runs(monkeypatch, tmp_path):
    monkeypatch.setenv("SHOAL_CACHE_DIR", str(tmp_path))  # nothing on disk yet
    monkeypatch.setattr(compiler, "NUMPY_SECONDS_PER_ELEMENT_STEP", 1e-3)
    engine = node_engine(block=64, compile="background")
    try:
        first = square_roots(engine, 3.0)  # NumPy while it compiles
        engine.wait_for_compiler()
        assert first.compiled_block_ops < first.block_ops
        second = square_roots(engine, 4.0)
        assert second.compiled_block_ops == second.block_ops
    finally:
        engine.shutdown()


def test_runs_too_short_to_pay_for_compiling_add_up_across_runs(monkeypatch, tmp_path):
    monkeypatch.setenv("SHOAL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(compiler, "estimated_compile_seconds", lambda *args, **kwargs: 0.3)
    monkeypatch.setattr(compiler, "NUMPY_SECONDS_PER_ELEMENT_STEP", 1e-4)  # 1000 x 2 steps: 0.2 s a run
    first = node_engine(block=64, compile="background")
    try:
        assert square_roots(first, 0.25).compiled_block_ops == 0
        first.wait_for_compiler()
    finally:
        first.shutdown()
    assert not list((tmp_path / "kernels").glob("*.so"))  # nothing compiled: 0.2 s < 0.3 s
    (heat,) = (tmp_path / "kernels").glob("*.heat")
    assert float(heat.read_text()) == pytest.approx(0.2)
    second = node_engine(block=64, compile="background")
    try:
        square_roots(second, 0.5)  # 0.2 s now and 0.2 s before: worth compiling
        second.wait_for_compiler()
        stats = square_roots(second, 1.0)
        assert stats.compiled_block_ops == stats.block_ops
    finally:
        second.shutdown()
    assert float(heat.read_text()) == pytest.approx(0.2)  # compiled: no longer counted


@pytest.mark.parametrize("threads", [1, 2])
def test_loading_a_cached_kernel_waits_for_numpy_time_of_every_stalled_thread(monkeypatch, threads):
    """Loading holds the GIL, so all pool threads wait: its cost counts once per thread."""
    monkeypatch.setattr(compiler, "machine_code_cached", lambda key: True)
    monkeypatch.setattr(compiler, "estimated_load_seconds", lambda: 0.3)
    submitted = []
    cache = compiler.KernelCache(compiler.CompileMode.BACKGROUND, threads)
    monkeypatch.setattr(cache, "_submit", lambda key, program: submitted.append(key))
    program = object()
    monkeypatch.setattr(compiler, "estimated_compile_seconds", lambda *args, **kwargs: 10.0)
    cache.note_numpy_time("k", program, 0.4)  # over one load, under two
    assert submitted == (["k"] if threads == 1 else [])
    cache.note_numpy_time("k", program, 0.3)
    assert submitted[-1:] == ["k"]


def test_compile_costs_measured_in_the_worker_are_remembered_and_used(monkeypatch, tmp_path):
    from shoal.engine.node.compile import costs as compile_costs

    monkeypatch.setenv("SHOAL_CACHE_DIR", str(tmp_path))
    directory = tmp_path / "kernels"
    compile_costs.save(compile_costs.CompileCosts(startup=1e-7, kernel=1e-7, per_step=1e-7), directory)
    engine = node_engine(block=64, compile="background")
    try:
        square_roots(engine, 0.25)  # with costs this low even 1000 elements pay for compiling
        engine.wait_for_compiler()
        stats = square_roots(engine, 0.5)
        assert stats.compiled_block_ops == stats.block_ops
    finally:
        engine.shutdown()
    learned = compile_costs.load(directory)
    assert learned.startup > 1e-4  # moved towards the start-up measured in the worker (~0.6 s)
