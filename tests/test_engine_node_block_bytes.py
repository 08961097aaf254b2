"""View-blocks and NumPy tiles hold as many bytes whatever the dtype (``builder._narrowing``): the
block and tile sizes count 8-byte elements, so a group whose widest operand is narrower gets more
elements per block and tile (a 1-byte grid had eight times the blocks, and their cost, of a
float64 one of the same bytes: game of life at 4096² ran 1.5x NumPy's time)."""

from __future__ import annotations

import numpy as np
import pytest
from engine_node_recorder import Recorder

from shoal.engine import ReferenceEngine
from shoal.engine.node import NodeConfig, NodeEngine

ELEMENTS = 1 << 17
BLOCK = 1 << 12


def _blocks(dtypes: tuple[str, str]) -> int:
    """Block operations of ``a + b`` (``a``, ``b`` of ``dtypes``) on one thread, on NumPy tiles
    (no compiled kernels), checked against the reference engine."""
    rng = np.random.default_rng(5)
    rec = Recorder()
    a = rec.array((rng.random(ELEMENTS) * 50).astype(dtypes[0]))
    b = rec.array((rng.random(ELEMENTS) * 50).astype(dtypes[1]))
    total = rec.ufunc("add", a, b)
    batch = rec.new_batch()
    node = NodeEngine(NodeConfig(threads=1, compile="off", direct_work=0, block_size=BLOCK))
    reference = ReferenceEngine()
    try:
        node.execute(batch)
        reference.execute(batch)
        reference.flush()
        np.testing.assert_array_equal(node.fetch(total), reference.fetch(total))
        assert not node.last_stats.direct
        return node.last_stats.block_ops
    finally:
        node.shutdown()
        reference.shutdown()


@pytest.mark.parametrize(
    ("dtypes", "per_block"),
    [
        (("float64", "float64"), BLOCK),
        (("int8", "int8"), 8 * BLOCK),
        (("uint16", "int16"), 2 * BLOCK),  # the sum is int32: four bytes the widest
        (("int8", "float32"), 2 * BLOCK),
        (("complex128", "complex128"), BLOCK),  # wider than 8 bytes: the block size itself
    ],
)
def test_a_groups_blocks_hold_the_bytes_of_the_block_size_in_its_widest_dtype(dtypes, per_block):
    assert _blocks(dtypes) == ELEMENTS // per_block


@pytest.mark.parametrize(("dtypes", "narrowing"), [(("float64", "float64"), 1), (("int8", "int8"), 8), (("int8", "int32"), 2)])
def test_a_groups_numpy_tiles_hold_the_bytes_of_the_tile_size_in_its_widest_dtype(monkeypatch, dtypes, narrowing):
    from shoal.engine.node.schedule import builder

    tiles: list[int] = []
    runner = builder.GroupRunner

    def recording(program, storage, kernels, key, tile_elements, *rest):
        tiles.append(tile_elements)
        return runner(program, storage, kernels, key, tile_elements, *rest)

    monkeypatch.setattr(builder, "GroupRunner", recording)
    _blocks(dtypes)
    assert tiles == [builder.DEFAULT_TILE_ELEMENTS * narrowing]
