"""Run a recorded program on the reference engine and the node engine and compare."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from engine_node_recorder import Recorder

from shoal.bytecode import View
from shoal.engine import Component, ReferenceEngine
from shoal.engine.node import NodeConfig, NodeEngine
from shoal.engine.node.schedule.plan_cache import PlanCache
from shoal.engine.node.stats import BatchStats
from shoal.engine.passthrough import PassConfig, PassThrough

Program = Callable[[Recorder], list[View]]

STACKED = "pass"  # the parameter value of the runs through the pass-through component
stack: str = "plain"  # ``STACKED``: run_both runs both engines below a pass-through component


def stacked(engine: Component) -> Component:
    """``engine``, below an asynchronous pass-through component when ``stack`` asks for one."""
    return PassThrough(PassConfig(), engine) if stack == STACKED else engine


def node_engine(block: int = 7, threads: int = 2, compile: str = "off", schedule: str = "program") -> NodeEngine:
    return NodeEngine(NodeConfig(threads=threads, block_size=block, compile=compile, direct_work=0, schedule=schedule))


def run_both(
    program: Program,
    block: int = 7,
    threads: int = 2,
    compile: str = "off",
    exact: bool = True,
    batches: int = 1,
    schedule: str = "program",
) -> NodeEngine:
    """Record ``program`` (``batches`` times, one batch each), run it on both engines, compare.

    ``exact`` demands bit-equal results (NumPy tile path); otherwise floats match to their
    dtype's tolerance. Returns the node engine (shut down) so tests can read its stats.
    """
    recorder = Recorder()
    engine = node_engine(block, threads, compile, schedule)
    reference, node = stacked(ReferenceEngine()), stacked(engine)
    try:
        checked: list[View] = []
        for _ in range(batches):
            checked = program(recorder)
            batch = recorder.new_batch()
            reference.execute(batch)
            reference.flush()  # the node engine may take the batch's donated arrays
            node.execute(batch)
        for view in checked:
            assert_same(node.fetch(view), reference.fetch(view), exact)
        assert node.live_bases() == reference.live_bases()
    finally:
        node.shutdown()
        reference.shutdown()
    return engine


def assert_same(got: np.ndarray, expected: np.ndarray, exact: bool) -> None:
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if exact or got.dtype.kind in "biu":
        np.testing.assert_array_equal(got, expected)
        return
    tolerance = {2: 1e-2, 4: 2e-5, 8: 1e-11, 16: 1e-11}[got.dtype.itemsize if got.dtype.kind == "f" else got.dtype.itemsize // 2]
    np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance, equal_nan=True)


def against_the_reference(batch, views, config: NodeConfig) -> BatchStats:
    """Run ``batch`` on the reference engine and on a node engine set up with ``config``; the
    views must match exactly. Returns the node engine's statistics."""
    reference = ReferenceEngine()
    node = NodeEngine(config)
    try:
        reference.execute(batch)
        node.execute(batch)
        for view in views:
            assert_same(node.fetch(view), reference.fetch(view), exact=True)
        return node.last_stats
    finally:
        node.shutdown()
        reference.shutdown()


class CachedAndFresh:
    """A node engine with the plan cache, one without it and the reference engine, fed the
    same batches: the cached plan must match planning afresh bit for bit, and the reference
    (NumPy) to rounding where a reduction sums block partials."""

    def __init__(self, threads: int = 2, block: int = 16, compile: str = "off", direct_work: int = 0) -> None:
        self.recorder = Recorder()
        self.reference = ReferenceEngine()
        self.node = node_engine(block, threads, compile)
        self.fresh = node_engine(block, threads, compile)
        self.fresh._plans = PlanCache(entries=0)
        for engine in (self.node, self.fresh):
            engine.direct_work = direct_work

    def run(self) -> bool:
        """Run the recorded batch on every engine; True if the node engine replayed a plan."""
        batch = self.recorder.new_batch()
        self.reference.execute(batch)
        self.fresh.execute(batch)
        self.node.execute(batch)
        assert not self.fresh.last_stats.replayed
        return self.node.last_stats.replayed

    def check(self, *views: View, exact: bool = True) -> None:
        for view in views:
            got = self.node.fetch(view)
            assert_same(got, self.fresh.fetch(view), exact=True)
            assert_same(got, self.reference.fetch(view), exact=exact and view.shape != ())
        assert self.node.live_bases() == self.fresh.live_bases() == self.reference.live_bases()

    def close(self) -> None:
        for engine in (self.node, self.fresh, self.reference):
            engine.shutdown()
