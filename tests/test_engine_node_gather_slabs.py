"""Gathers of whole rows along the first axis run as slabs on the pool and match the reference."""

from __future__ import annotations

import numpy as np
import pytest
from engine_node_harness import run_both

RNG = np.random.default_rng(11)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("index", [[0, 3, 4, 1, 2, 7, 8, 5, 6], [-1, 0, 0, 2], [8]])
def test_a_gather_along_the_first_axis_matches_the_reference(threads, index):
    def program(rec):
        f = rec.array(RNG.random((9, 300, 70)))
        transposed = rec.transpose(rec.array(RNG.random((60, 200, 9))))  # strided source
        picks = rec.array(np.array(index))
        out = rec.empty((len(index), 300, 70), np.float64)
        rec.emit("gather", (out,), (f, picks), key=(("array", 0),))
        narrowed = rec.empty((len(index), 200, 60), np.float32)  # cast on the way
        rec.emit("gather", (narrowed,), (transposed, picks), key=(("array", 0),))
        return [out, narrowed]

    engine = run_both(program, block=4096, threads=threads)
    assert (engine.last_stats.axis_panels > 0) == (threads > 1)


def test_other_gathers_run_whole():
    def program(rec):
        f = rec.array(RNG.random((9, 300, 70)))
        rows = rec.array(np.array([1, 5, 7]))
        out = rec.empty((9, 3, 70), np.float64)
        rec.emit("gather", (out,), (f, rows), key=(("slice", None, None, None), ("array", 0)))
        return [out]

    engine = run_both(program, block=4096, threads=2)
    assert engine.last_stats.axis_panels == 0 and engine.last_stats.whole_ops == 1
