"""Peak memory of the node engine: work that would take new memory waits for work in flight."""

from __future__ import annotations

import threading
import time

import numpy as np
from engine_node_harness import run_both

from shoal.bytecode import View
from shoal.engine.node.deps import BlockOp
from shoal.engine.node.scheduler import WorkerPool


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
