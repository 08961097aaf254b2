"""Node engine lifecycle: settings, errors from block operations, threads and memory released."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from engine_node_harness import against_the_reference, node_engine
from engine_node_recorder import Recorder

from shoal.engine import EngineError, create
from shoal.engine.node import NodeConfig, NodeEngine
from shoal.engine.node.run.direct import HAND_OVER_MIN
from shoal.engine.node.stats import BatchStats


def test_registered_as_node():
    assert isinstance(create("node"), NodeEngine)


@pytest.mark.parametrize(("variable", "value"), [("SHOAL_BLOCK_SIZE", "0"), ("SHOAL_BLOCK_SIZE", "big"), ("SHOAL_COMPILE", "later"), ("SHOAL_COMPILE_EXIT", "never"), ("SHOAL_DIRECT_WORK", "few"), ("SHOAL_SCHEDULE", "random")])
def test_bad_settings_name_the_setting(monkeypatch, variable, value):
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValueError, match=variable):
        create("node")


def test_a_failing_operation_raises_its_numpy_error_and_the_engine_still_works():
    engine = node_engine(block=4)
    try:
        rec = Recorder()
        a = rec.array(np.arange(10.0))
        idx = rec.array(np.array([3, 99]))
        out = rec.empty((2,), np.float64)
        rec.emit("gather", (out,), (a, idx), key=(("array", 0),))
        with pytest.raises(IndexError):
            engine.execute(rec.new_batch())
        b = rec.ufunc("add", a, 1.0)
        engine.execute(rec.new_batch())
        np.testing.assert_array_equal(engine.fetch(b), np.arange(10.0) + 1)
    finally:
        engine.shutdown()


def test_unknown_bases_are_reported():
    engine = node_engine()
    try:
        rec = Recorder()
        a = rec.array(np.arange(4.0))
        engine.execute(rec.new_batch())
        rec.release(a)
        engine.execute(rec.new_batch())
        with pytest.raises(EngineError, match="not live"):
            engine.fetch(a)
    finally:
        engine.shutdown()


def test_shutdown_stops_every_worker_thread_and_frees_memory():
    before = threading.active_count()
    engine = node_engine(block=8, threads=3)
    rec = Recorder()
    a = rec.array(np.arange(100.0))
    rec.ufunc("sqrt", a)
    engine.execute(rec.new_batch())
    assert threading.active_count() > before
    engine.shutdown()
    assert threading.active_count() == before
    assert engine.live_bases() == 0


def test_arrays_that_arrive_with_a_batch_are_borrowed_never_modified():
    rec = Recorder()
    values = np.arange(50.0)
    a = rec.array(values)
    b = rec.array(values * 2)
    total = rec.ufunc("add", a, b)  # reads only: a and b are not copied
    rec.emit("multiply", (a,), (a, 3.0))  # writes a: it gets its own copy first
    batch = rec.new_batch()
    sent = {base: data.copy() for base, data in batch.data.items()}
    engine = node_engine(block=8)
    try:
        engine.execute(batch)
        np.testing.assert_array_equal(engine.fetch(a), values * 3)
        np.testing.assert_array_equal(engine.fetch(total), values * 3)
        assert engine.last_stats.peak_bytes == 3 * 50 * 8  # a (its copy replaces the borrowed array), b, total
    finally:
        engine.shutdown()
    for base, data in batch.data.items():
        np.testing.assert_array_equal(data, sent[base])


def test_small_batches_run_directly_and_match_the_reference():
    rec = Recorder()
    a = rec.array(np.arange(100.0).reshape(10, 10))
    t = rec.ufunc("multiply", rec.index(a, (slice(1, None), slice(None, -1))), 2.0)
    rec.emit("add", (rec.index(a, (slice(None, -1), slice(1, None))),), (rec.index(a, (slice(None, -1), slice(1, None))), t))
    total = rec.reduce("sum", a)
    rec.release(t)
    stats = _against_the_reference(rec.new_batch(), (a, total))
    assert stats.direct and stats.block_ops == 0


def test_released_memory_is_reused_but_borrowed_data_never_is():
    from shoal.bytecode import BaseDecl
    from shoal.engine.node.run.storage import Storage

    storage = Storage()
    data = np.arange(100.0)
    storage.declare(BaseDecl(1, np.dtype(np.float64), 100), data)
    storage.declare(BaseDecl(2, np.dtype(np.float64), 100), None)
    storage.ensure(2)
    owned = storage.raw(2)
    storage.release(1)
    storage.release(2)
    storage.declare(BaseDecl(3, np.dtype(np.float64), 100), None)
    storage.declare(BaseDecl(4, np.dtype(np.float64), 100), None)
    storage.ensure(3)
    storage.ensure(4)
    assert storage.raw(3) is owned  # the released buffer of the same size comes back
    assert not np.shares_memory(storage.raw(4), data)  # the batch's array is never handed out
    storage.raw(4)[:] = 0
    np.testing.assert_array_equal(data, np.arange(100.0))


@pytest.mark.parametrize(("elements", "direct"), [(4000, True), (40000, False)])
def test_batches_of_many_mid_sized_instructions_run_directly(elements, direct):
    rec = Recorder()
    a = rec.array(np.arange(float(elements)))
    for _ in range(20):
        a = rec.ufunc("add", a, 1.0)
    batch = rec.new_batch()
    engine = NodeEngine(NodeConfig(threads=2, direct_work=160000))  # 1/16: 10000 per instruction
    try:
        engine.execute(batch)
        assert engine.last_stats.direct is direct
        np.testing.assert_array_equal(engine.fetch(a), np.arange(float(elements)) + 20)
    finally:
        engine.shutdown()


def test_a_kernel_counts_as_cached_only_with_its_machine_code(tmp_path, monkeypatch):
    from shoal.engine.node.compile import kernel_cache as compiler

    monkeypatch.setenv("SHOAL_CACHE_DIR", str(tmp_path))
    name = "shoal_kernel_abc"
    (tmp_path / "kernels" / "__pycache__").mkdir(parents=True)
    (tmp_path / "kernels" / f"{name}.py").write_text("# source of a compile that was cut short\n")
    assert not compiler.machine_code_cached("abc")
    (tmp_path / "kernels" / "__pycache__" / f"{name}.{name}-5.py311.nbi").write_bytes(b"")
    assert compiler.machine_code_cached("abc")


def test_spare_memory_is_freed_before_a_fresh_allocation():
    from shoal.bytecode import BaseDecl
    from shoal.engine.node.run.storage import Storage

    storage = Storage()
    for base in (1, 2):
        storage.declare(BaseDecl(base, np.dtype(np.float64), 100), None)
        storage.ensure(base)
    storage.release(1)
    storage.release(2)
    assert storage.spare_bytes == 1600
    storage.declare(BaseDecl(3, np.dtype(np.float64), 150), None)
    storage.ensure(3)  # no spare of 1200 bytes: enough spares go first, held + spare never grows
    assert storage.bytes_held + storage.spare_bytes <= 1600


def test_where_run_directly_matches_the_reference_also_into_its_own_operand():
    rec = Recorder()
    a = rec.array(np.linspace(-1.0, 1.0, 50))
    b = rec.array(np.arange(50, dtype=np.float32))
    mask = rec.ufunc("less", a, 0.0)
    plain = rec.where(mask, a, 2.0)
    narrowed = rec.empty((50,), np.float32)
    rec.emit("where", (narrowed,), (mask, a, b))  # float64 selected, stored as float32
    rec.emit("where", (a,), (mask, 0.0, a))  # the output is an operand
    assert _against_the_reference(rec.new_batch(), (plain, narrowed, a)).direct


def test_spare_memory_stays_while_held_plus_spare_is_below_the_high_water_mark():
    from shoal.bytecode import BaseDecl
    from shoal.engine.node.run.storage import Storage

    storage = Storage()
    borrowed = np.arange(200.0)
    borrowed.flags.writeable = False
    storage.declare(BaseDecl(1, np.dtype(np.float64), 200), borrowed)  # 1600 bytes, not the engine's
    storage.declare(BaseDecl(2, np.dtype(np.float64), 100), None)
    storage.ensure(2)
    assert storage.high_water == 2400
    storage.release(2)  # kept as a spare of 800 bytes
    storage.release(1)  # borrowed memory is never a spare
    storage.declare(BaseDecl(3, np.dtype(np.float64), 150), None)
    storage.ensure(3)  # 1200 bytes: no spare fits, but 800 + 1200 stays below 2400
    assert storage.spare_bytes == 800
    assert storage.bytes_held + storage.spare_bytes <= storage.high_water


def _against_the_reference(batch, views) -> BatchStats:
    return against_the_reference(batch, views, NodeConfig(threads=2))


def _direct_engine() -> NodeEngine:
    return NodeEngine(NodeConfig(threads=1, compile="off", direct_work=1 << 40))


N = HAND_OVER_MIN


def test_direct_runs_write_into_an_operand_released_right_after_as_numpy_elides_temporaries():
    """Arrays as large as the smallest that is handed over (a smaller one is allocated anew)."""
    rec = Recorder()
    a, b, c = (rec.array(np.arange(float(N)) * k) for k in (1, 2, 3))
    first = rec.ufunc("add", a, b)
    second = rec.ufunc("add", first, c)
    rec.release(first)  # (a + b) + c: the first sum dies at once
    scaled = rec.ufunc("multiply", second, 0.5)
    rec.release(second)
    engine = _direct_engine()
    try:
        engine.execute(rec.new_batch())
        assert engine.last_stats.direct
        np.testing.assert_array_equal(engine.fetch(scaled), (np.arange(float(N)) * 6) * 0.5)
        assert engine.last_stats.peak_bytes == 4 * N * 8  # a, b, c (borrowed) and one temporary
    finally:
        engine.shutdown()


def test_direct_runs_keep_an_operand_read_through_another_geometry():
    rec = Recorder()
    values = rec.array(np.arange(float(N)))
    scaled = rec.ufunc("multiply", values, 2.0)
    mirrored = rec.ufunc("subtract", scaled, rec.index(scaled, slice(None, None, -1)))
    rec.release(scaled)  # dies, but is also read in reverse: NumPy would have to buffer it
    engine = _direct_engine()
    try:
        engine.execute(rec.new_batch())
        expected = np.arange(float(N)) * 2.0
        np.testing.assert_array_equal(engine.fetch(mirrored), expected - expected[::-1])
        assert engine.last_stats.peak_bytes == 3 * N * 8  # values, scaled and mirrored apart
    finally:
        engine.shutdown()
