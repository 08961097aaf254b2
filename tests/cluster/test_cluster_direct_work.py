"""A rank's node engine decides direct against fused runs as one process would for the whole batch."""

from __future__ import annotations

import pytest

from shoal.cluster.manager import scale_direct_work
from shoal.engine.node.config import NodeConfig
from shoal.engine.node.engine import NodeEngine
from shoal.engine.node.run.direct import batch_work, runs_direct

from .test_cluster_plan_cache import Ids, sweep


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_threshold_divided_by_ranks(ranks: int) -> None:
    engine = NodeEngine(NodeConfig(direct_work=9_000_000))
    try:
        scale_direct_work(engine, ranks)
        assert engine.direct_work == (9_000_000 if ranks == 1 else 9_000_000 // (2 * ranks))
    finally:
        engine.shutdown()


def test_never_direct_stays_never() -> None:
    engine = NodeEngine(NodeConfig(direct_work=0))
    try:
        scale_direct_work(engine, 4)
        assert engine.direct_work == 0
    finally:
        engine.shutdown()


def test_a_rank_share_that_one_process_fuses_is_fused() -> None:
    """A batch at or over the threshold fuses on one process; half of it (a rank's share at 2
    ranks, cut by its messages) ran instruction by instruction before the threshold was divided."""
    batch = sweep(1, Ids())
    engine = NodeEngine(NodeConfig(direct_work=1))
    try:
        whole = batch_work(batch)
        engine.direct_work = 4 * whole
        assert runs_direct(batch, engine.direct_work)
        scale_direct_work(engine, 2)
        assert not runs_direct(batch, engine.direct_work)
    finally:
        engine.shutdown()


def test_other_components_untouched() -> None:
    class Other:
        direct_work = True

    other = Other()
    scale_direct_work(other, 2)  # type: ignore[arg-type]
    assert other.direct_work is True


def test_kept_without_compiled_kernels() -> None:
    engine = NodeEngine(NodeConfig(direct_work=9_000_000, compile="off"))
    try:
        scale_direct_work(engine, 2)
        assert engine.direct_work == 9_000_000
    finally:
        engine.shutdown()
