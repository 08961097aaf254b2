"""Element-wise work writing a strided output, as the node engine's view-blocks of a transposed
view do (found by the program fuzzer: seed 430350 of ``test_engine_node_program_fuzz``, a
scatter and then ``np.negative(a.T)`` with small blocks). NumPy 2.4's ``negative`` and
``isfinite`` loops write some strided outputs wrongly; the opcodes' references go through a
contiguous result there."""

from __future__ import annotations

import numpy as np
import pytest

import shoal.numpy as snp
from shoal import runtime
from shoal.bytecode import spec
from shoal.engine.node import NodeConfig, NodeEngine


def _scatter_then_read(xp, array):
    array[:, [1, 3, 4]] = 5.0
    first = np.asarray(xp.negative(array.T))
    array[[1, 3, 4], :] *= 0.5
    return first, np.asarray(xp.negative(array[1:, 1:].T)), np.asarray(xp.isfinite(array.T))


@pytest.mark.parametrize("block", [1, 2, 3, 5, 7, 8, 9, 16, 32, 63, 64, 128])
def test_reads_of_a_transposed_view_after_a_scatter(block: int) -> None:
    data = np.random.default_rng(0).random((8, 8))
    engine = NodeEngine(NodeConfig(threads=1, block_size=block, compile="off", schedule="program", direct_work="0", tile_elements=1 << 18))
    with runtime.configure(engine=engine, eager_threshold=0, flush_threshold=50):
        got = _scatter_then_read(snp, snp.array(data))
    for have, want in zip(got, _scatter_then_read(np, data.copy())):
        np.testing.assert_array_equal(have, want)


@pytest.mark.parametrize("name", ["negative", "isfinite", "absolute"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32, np.uint64])
@pytest.mark.parametrize("step", [1, 2, 4, 8, 16])
def test_a_unary_reference_into_a_strided_output(name: str, dtype: type, step: int) -> None:
    """Every input step into outputs of steps 1-3: what the ufunc gives into a new array."""
    ufunc = getattr(np, name)
    source = (np.arange(1, 600) % 97).astype(dtype)[::step][:33]
    expected = ufunc(source.copy())
    for out_step in (1, 2, 3):
        out = np.zeros(33 * out_step, expected.dtype)[::out_step]
        spec(name).reference([out], [source], {})
        np.testing.assert_array_equal(out, expected)
