"""Peak memory of the node engine: work that would take new memory waits for work in flight."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import tracemalloc
import weakref

import numpy as np
import pytest
from engine_node_harness import run_both

from shoal.bytecode import BaseDecl, Batch, Instruction, View, make_attrs, spec
from shoal.engine.blocks.dependencies import BlockOp
from shoal.engine.blocks.thread_pool import WorkerPool
from shoal.engine.node import NodeConfig, NodeEngine
from shoal.engine.node.schedule.memory_budget import MemoryBudget


def _op(seq: int, run) -> BlockOp:
    return BlockOp(seq, run, (), ())


def test_an_operation_held_back_waits_for_the_ones_in_flight():
    order: list[str] = []
    lock = threading.Lock()

    def record(name: str, seconds: float = 0.0):
        def run():
            time.sleep(seconds)
            with lock:
                order.append(name)

        return run

    pool = WorkerPool(2)
    try:
        first, second = _op(0, record("first", 0.2)), _op(1, record("second"))
        pool.run([first, second], prepare=lambda op: None)
        assert order == ["second", "first"]  # both ready: the second overtakes the slow first
        order.clear()
        first, second = _op(0, record("first", 0.2)), _op(1, record("second"))
        pool.run([first, second], prepare=lambda op: None, holds_back=lambda op: op is second)
        assert order == ["first", "second"]
        order.clear()
        lone = _op(0, record("lone"))
        pool.run([lone], prepare=lambda op: None, holds_back=lambda op: True)  # nothing in flight: runs
        assert order == ["lone"]
    finally:
        pool.close()


def escape_loop(iterations: int):
    """Mandelbrot's loop: each iteration reads ``z`` as complex numbers and as their real and
    imaginary parts (another mapping, so iterations do not fuse) and writes a new ``z``."""

    def program(rec):
        c = rec.array(np.linspace(-2.0, 0.5, 8192) + 0.3j)
        z = rec.empty((8192,), np.complex128)
        rec.fill(z, 0j)
        for _ in range(iterations):
            real = View(z.base, np.dtype(np.float64), 0, z.shape, (16,))
            imaginary = View(z.base, np.dtype(np.float64), 8, z.shape, (16,))
            squares = [rec.ufunc("square", real), rec.ufunc("square", imaginary)]
            radius = rec.ufunc("add", *squares)
            bounded = rec.ufunc("less_equal", radius, 4.0)
            product = rec.ufunc("multiply", z, z)
            step = rec.ufunc("add", product, c)
            new = rec.where(bounded, step, z)
            rec.release(*squares, radius, bounded, product, step, z)
            z = new
        return [z]

    return program


def test_a_loop_on_two_threads_holds_no_more_than_on_one():
    """Without holding back, the second thread starts the next iteration's first block while the
    first still runs this one: a third ``z`` is allocated before the oldest is released."""
    one = run_both(escape_loop(6), block=256, threads=1).last_stats.peak_bytes
    two = run_both(escape_loop(6), block=256, threads=2).last_stats.peak_bytes
    assert two == one


def test_an_operation_that_would_hold_more_than_program_order_waits_for_the_release_before_it():
    """Program order: a slow operation on base 1, the release of base 2, an operation taking base 3.
    The last is ready at once; on two threads it must not take base 3 while base 2 is still held
    (the old rule let it, as long as the bases stayed below the most ever held)."""
    memory = _Memory({1, 2})
    order: list[str] = []

    def step(name: str, seconds: float = 0.0, then=None):
        def run():
            time.sleep(seconds)
            if then is not None:
                then()
            order.append(name)

        return run

    slow = BlockOp(0, step("slow", 0.2), (), (), bases=(1,))
    release = BlockOp(1, step("release", then=lambda: memory.held.discard(2)), (), (), inline=True, frees=2, refcount=1)
    slow.dependents.append(release)
    taking = BlockOp(2, step("taking", then=lambda: memory.held.add(3)), (), (), bases=(3,))
    budget = MemoryBudget(memory, held=1600)
    budget.add([slow, release, taking])
    pool = WorkerPool(2)
    try:
        held = lambda: 800 * len(memory.held)  # noqa: E731
        pool.run([slow, release, taking], prepare=lambda op: None, holds_back=lambda op: not budget.allows(op, held()))
    finally:
        pool.close()
    assert order == ["slow", "release", "taking"]


def _op_with(seq: int, bases: tuple[int, ...] = (), frees: int | None = None) -> BlockOp:
    return BlockOp(seq, lambda: None, (), (), bases=bases, frees=frees)


class _Memory:
    def __init__(self, held: set[int]) -> None:
        self.held = held

    def decl(self, base: int) -> BaseDecl:
        return BaseDecl(base, np.dtype(np.float64), 100)  # 800 bytes each

    def has_memory(self, base: int) -> bool:
        return base in self.held


def test_operations_may_take_memory_up_to_the_most_program_order_holds():
    memory = _Memory({1})
    budget = MemoryBudget(memory, held=800)
    first, release, second = _op_with(0, (1, 2)), _op_with(1, frees=2), _op_with(2, (1, 3))
    budget.add([first, release, second])
    assert budget.peak == 1600  # base 1 with 2, then (2 released) with 3
    assert budget.allows(first, held=800)
    assert not budget.allows(second, held=1600)  # base 2 still held: 3 would make 2400
    assert budget.allows(second, held=800)  # after the release
    budget.add([_op_with(3, (3, 4))])
    assert budget.peak == 2400  # operations built later raise the limit
    assert budget.allows(second, held=1600)
    memory.held |= {3}
    assert budget.allows(_op_with(4, (1, 3)), held=10**9)  # takes nothing new


def test_a_gather_along_the_first_axis_writes_its_result_without_a_temporary():
    source = np.arange(9 * 64 * 64, dtype=np.float64).reshape(9, 64, 64)
    attrs = {"key": (("array", 0),)}
    for index in (np.array([0, 3, 4, 1, 2, 7, 8, 5, 6]), np.array([-1, 0, -9, 8])):
        out = np.empty((index.size, 64, 64))
        tracemalloc.start()
        try:
            spec("gather").reference([out], [source, index], attrs)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < out.nbytes // 4
        np.testing.assert_array_equal(out, source[index])
    with pytest.raises(IndexError):
        spec("gather").reference([np.empty((1, 64, 64))], [source, np.array([9])], attrs)


def test_donated_data_is_freed_when_its_base_is_released_mid_batch():
    donated = np.ones(1 << 16)
    alive = weakref.ref(donated)
    view = View(1, np.dtype(np.float64), 0, (1 << 16,), (8,))
    copy = View(2, np.dtype(np.float64), 0, (1 << 16,), (8,))
    batch = Batch(
        bases=[BaseDecl(1, np.dtype(np.float64), 1 << 16), BaseDecl(2, np.dtype(np.float64), 1 << 16)],
        data={1: donated},
        instructions=[Instruction("copy", (copy,), (view,)), Instruction("release", (), (), make_attrs(base=1))],
        donated={1},
    )
    del donated
    engine = NodeEngine(NodeConfig(threads=1))
    try:
        engine.execute(batch)
        assert alive() is None  # the batch no longer holds what the engine released
        np.testing.assert_array_equal(engine.fetch(copy), np.ones(1 << 16))
    finally:
        engine.shutdown()


def test_batches_that_run_directly_never_load_openssl():
    """Kernel keys are SHA-256 digests; hashlib's OpenSSL costs 3 MiB of resident memory that a
    program whose batches all run instruction by instruction (lattice Boltzmann at 10^6 cells)
    never needs."""
    program = """
import sys
import numpy as np
from shoal.engine.node import NodeConfig
from shoal.engine.node import NodeEngine
from shoal.runtime import configure
import shoal.numpy as snp

engine = NodeEngine(NodeConfig(threads=2))
with configure(engine=engine, eager_threshold=16, settled_threshold=0):  # recorded, run directly
    a = snp.arange(1000.0)
    print(float(((a * 2.0 + 1.0) ** 2).sum()))
    assert engine.last_stats.direct
print(sorted(m for m in sys.modules if "hashlib" in m))
"""
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True)
    value, loaded = result.stdout.splitlines()
    assert float(value) == float(((np.arange(1000.0) * 2.0 + 1.0) ** 2).sum())
    assert loaded == "[]"
