"""A temporary read only by the next instruction of a direct batch, made a chunk at a time
(``shoal/engine/node/run/chunked_pairs.py``): results bit for bit the reference engine's (NumPy),
pairs whose order of chunks could matter run whole, and floating-point conditions are NumPy's."""

from __future__ import annotations

import numpy as np
import pytest
from engine_node_recorder import Recorder, direct_against_reference
from numpy_fixtures import same_values_and_warnings

from shoal.engine.node.run import chunked_pairs

RNG = np.random.default_rng(7)


def _run_both(program, monkeypatch):
    """``program`` on a node engine running every batch directly and on the reference engine:
    the views it returns compared bit for bit; the pairs the node engine chunked, counted."""
    chunked: list[int] = []
    run_pair = chunked_pairs.run_chunked_pair

    def counting(instructions, index, storage, pool=None):
        taken = run_pair(instructions, index, storage, pool)
        if taken:
            chunked.append(taken)
        return taken

    monkeypatch.setattr("shoal.engine.node.run.direct.run_chunked_pair", counting)
    recorder = Recorder()
    checked = program(recorder)
    direct_against_reference(recorder.new_batch(), checked)
    return chunked


def test_an_outer_product_subtracted_in_place_is_chunked(monkeypatch):
    def program(rec):
        a = rec.array(RNG.random((700, 300)))
        column, row = rec.array(RNG.random((700, 1))), rec.array(RNG.random((1, 299)))
        target = rec.index(a, (slice(None), slice(1, None)))
        outer = rec.ufunc("multiply", column, row)
        rec.release(row)  # an operand of the first instruction, released between the two
        rec.emit("subtract", (target,), (target, outer))
        rec.release(outer)
        return [a]

    assert _run_both(program, monkeypatch) == [3]


@pytest.mark.parametrize("dtypes", [("float64", "float64"), ("float32", "float64"), ("int32", "float64"), ("float64", "float32")])
def test_pairs_with_casts_and_broadcasts_match_numpy(monkeypatch, dtypes):
    first, second = dtypes

    def program(rec):
        x = rec.array((RNG.random((400, 5, 80)) * 10).astype(first))
        y = rec.array(RNG.random(80).astype(first))
        t = rec.ufunc("multiply", x, y)
        out = rec.empty((400, 5, 80), second)
        rec.emit("add", (out,), (t, 1.5))
        rec.release(t)
        return [out]

    # of the temporary's dtype, the new output takes its memory instead (the next test)
    assert _run_both(program, monkeypatch) == ([] if first == second else [2])


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128", "int16"])
def test_a_new_output_of_the_temporarys_layout_takes_its_memory(monkeypatch, dtype):
    """``z * z + c`` into a new base: the second call runs in place on the first's result, as
    NumPy's elided temporary does (two buffers' worth of traffic less than chunks into a third)."""
    from shoal.engine.node.run.storage import Storage

    handed: list[tuple[int, int]] = []
    hand_over = Storage.hand_over

    def counting(self, source, target):
        handed.append((source, target))
        hand_over(self, source, target)

    monkeypatch.setattr(Storage, "hand_over", counting)

    def program(rec):
        z = rec.array((RNG.random((600, 400)) * 3).astype(dtype))
        c = rec.array((RNG.random(400) * 3).astype(dtype))
        square = rec.ufunc("multiply", z, z)
        total = rec.ufunc("add", square, c)
        rec.release(square)
        program.bases = (square.base, total.base)
        return [total]

    assert _run_both(program, monkeypatch) == []
    assert handed == [program.bases]


def test_pairs_whose_chunks_could_read_written_values_run_whole(monkeypatch):
    """A stencil written in place (the first instruction reads the second's output shifted),
    a temporary the program keeps, and one read twice by a later instruction: all run whole."""

    def program(rec):
        a = rec.array(RNG.random((600, 400)))
        up, down = rec.index(a, (slice(0, -1),)), rec.index(a, (slice(1, None),))
        t = rec.ufunc("add", up, down)
        rec.emit("multiply", (down,), (t, 0.5))
        rec.release(t)
        kept = rec.ufunc("sqrt", rec.array(RNG.random((600, 400))))
        b = rec.ufunc("add", kept, 1.0)
        c = rec.ufunc("negative", kept)
        return [a, b, c, kept]

    assert _run_both(program, monkeypatch) == []


def test_a_condition_met_in_chunks_warns_once_at_numpys_line(monkeypatch):
    monkeypatch.setenv("SHOAL_COMPILE", "off")
    monkeypatch.setenv("SHOAL_DIRECT_WORK", str(1 << 40))

    def program(np_):
        a = np_.zeros((600, 300)) + np_.linspace(0.0, 1.0, 300)
        b = np_.ones((600, 300))
        b -= np_.log(a)  # divide by zero in log, in the first column of every chunk
        return b

    same_values_and_warnings(program, engine="node", eager_threshold=0, settled_threshold=0)
