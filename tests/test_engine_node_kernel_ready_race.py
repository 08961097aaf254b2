"""A kernel that finishes compiling while a view-block runs: the block runs wholly on one path.

The compile worker may make a kernel ready between the runner's look at the kernel cache and the
call it then makes. An in-place stencil's kernel stores its deferred rows itself, so a block that
began on the NumPy path (writing into block buffers) must not switch to that kernel halfway: it
crashed in the engine ("assert held is not None") under ``python -m shoal`` on a 316² Jacobi run
while its kernels compiled.
"""

from __future__ import annotations

import pytest
from engine_node_harness import assert_same
from engine_node_recorder import Recorder
from test_engine_node_deferred import in_place_jacobi

from shoal.engine import ReferenceEngine
from shoal.engine.node import NodeConfig, NodeEngine
from shoal.engine.node.run.group_runner import GroupRunner

pytestmark = pytest.mark.full


def test_a_kernel_compiled_between_two_looks_is_not_taken_midway_through_a_block(monkeypatch: pytest.MonkeyPatch) -> None:
    node = NodeEngine(NodeConfig(threads=2, block_size=7 * 17, compile="sync", direct_work=0, sweeps_per_pass=1))
    kernels = node._kernels
    assert kernels is not None
    ready = kernels.ready
    looked: set[str] = set()

    def compiled_after_the_first_look(key: str):  # the compile worker finishes right after it
        if key not in looked:
            looked.add(key)
            return None
        return ready(key)

    monkeypatch.setattr(kernels, "ready", compiled_after_the_first_look)
    storing: list[bool] = []
    run = GroupRunner.run

    def noted(runner: GroupRunner, index: int):
        storing.append(runner.program.stores_rows)
        return run(runner, index)

    monkeypatch.setattr(GroupRunner, "run", noted)
    recorder, reference = Recorder(), ReferenceEngine()
    try:
        for _ in range(2):
            (grid,) = in_place_jacobi(3, shape=(40, 17))(recorder)
            batch = recorder.new_batch()
            reference.execute(batch)
            node.execute(batch)
            assert_same(node.fetch(grid), reference.fetch(grid), exact=False)
        assert node.last_stats.compiled_block_ops > 0
    finally:
        node.shutdown()
        reference.shutdown()
    assert any(storing)  # the sweeps' kernels store their rows themselves
