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


def _live_outer(rec):
    """``a[:, 1:] -= t`` with ``t = np.outer(column, row)`` that the program still holds; the
    operands are the engine's own memory, which their release lets the next base of their size
    take."""
    a = rec.array(RNG.random((700, 300)))
    column = rec.ufunc("add", rec.array(RNG.random((700, 1))), 0.5)
    row = rec.ufunc("add", rec.array(RNG.random((1, 299))), 0.5)
    target = rec.index(a, (slice(None), slice(1, None)))
    outer = rec.ufunc("multiply", column, row)
    rec.release(column, row)
    rec.emit("subtract", (target,), (target, outer))
    return a, outer


def test_a_live_temporary_of_small_operands_is_chunked_and_computed_when_read(monkeypatch):
    """A NumPy view of a held base updated in place runs its batch while the temporary is still
    named: the pair runs in chunks, and the temporary is computed from copies of its operands
    (released in the batch, their memory reused) once the program reads it."""
    from shoal.engine.node.run.storage import Storage

    computed: list[int] = []
    compute = Storage.compute

    def counting(self, base):
        computed.append(base)
        compute(self, base)

    monkeypatch.setattr(Storage, "compute", counting)

    def program(rec):
        a, outer = _live_outer(rec)
        program.outer = outer.base
        reuse = rec.ufunc("multiply", rec.array(RNG.random((700, 1))), 3.0)  # a released operand's memory
        return [a, outer, reuse]

    assert _run_both(program, monkeypatch) == [4]
    assert computed == [program.outer]


@pytest.mark.parametrize("direct_later", [True, False])
def test_a_later_batch_touching_a_live_temporary_computes_it_first(direct_later):
    """A live temporary's next use in a later batch, run directly or planned into blocks, finds
    its values; one that a later batch overwrites whole (from a dying operand, whose memory it
    would take) is computed before; one released first is never computed."""
    from shoal.engine import ReferenceEngine
    from shoal.engine.node import NodeConfig, NodeEngine

    rec = Recorder()
    a, read = _live_outer(rec)
    b, overwritten = _live_outer(rec)
    _, dropped = _live_outer(rec)
    batches = [rec.new_batch()]
    total = rec.reduce("sum", read)
    z = rec.ufunc("sqrt", rec.array(RNG.random((700, 299))))
    rec.emit("multiply", (overwritten,), (z, 2.0))
    rec.release(z)
    rec.emit("add", (overwritten,), (overwritten, read))
    batches.append(rec.new_batch())
    rec.release(read, dropped)
    batches.append(rec.new_batch())
    node = NodeEngine(NodeConfig(threads=2, compile="off", direct_work=1 << 40))
    reference = ReferenceEngine()
    try:
        for number, batch in enumerate(batches):
            node.direct_work = 1 << 40 if number != 1 or direct_later else 0
            node.execute(batch)
            reference.execute(batch)
            reference.flush()
            assert node.last_stats.direct == (number != 1 or direct_later)
            if number == 0:
                assert set(node._storage.deferred()) == {read.base, overwritten.base, dropped.base}
        for view in (a, b, overwritten):
            np.testing.assert_array_equal(node.fetch(view), reference.fetch(view))
        np.testing.assert_allclose(node.fetch(total), reference.fetch(total), rtol=1e-13)  # blocks sum in another order
        assert not node._storage.deferred()
    finally:
        node.shutdown()
        reference.shutdown()


def test_a_live_temporary_of_large_operands_runs_whole(monkeypatch):
    """Copies of operands as large as the temporary would cost what chunks save."""

    def program(rec):
        a = rec.array(RNG.random((700, 300)))
        b = rec.array(RNG.random((700, 300)))
        t = rec.ufunc("multiply", b, 2.0)
        rec.emit("subtract", (a,), (a, t))
        return [a, t]

    assert _run_both(program, monkeypatch) == []


def test_a_program_keeping_its_outer_products_reads_numpys_values(monkeypatch):
    """Gram-Schmidt's update on a held matrix (element reads hold it), the outer product kept
    by name and read after later updates: NumPy's values, and the pairs were chunked."""
    chunked: list[int] = []
    run_pair = chunked_pairs.run_chunked_pair

    def counting(instructions, index, storage, pool=None):
        taken = run_pair(instructions, index, storage, pool)
        chunked.extend([taken] if taken else [])
        return taken

    monkeypatch.setattr("shoal.engine.node.run.direct.run_chunked_pair", counting)

    def program(np_):
        rng = np_.random.default_rng(3)
        a, q, r = rng.random((800, 400)), rng.random(800), rng.random(400)
        kept, total = [], 0.0
        for k in range(12):
            for i in range(k, k + 8):
                total += float(a[i, k])  # settled reads: the matrix is held
            outer = np_.outer(q * (k + 1), r[k + 1 :])
            a[:, k + 1 :] -= outer
            kept.append(outer)
        return [total, *(float(np_.sum(outer)) for outer in kept), a]

    same_values_and_warnings(lambda np_: np_.concatenate([np_.ravel(np_.asarray(x)) for x in program(np_)]), engine="node", eager_threshold=1 << 16, settled_threshold=1 << 16)
    assert chunked


def test_live_temporaries_the_program_reads_again_stop_being_deferred(monkeypatch):
    """Each read computes a deferred temporary a second time: after the first few reads, with
    none released unread in between, such pairs run whole again."""

    def program(rec):
        a = rec.array(RNG.random((700, 300)))
        sums = []
        for _ in range(6):
            column, row = rec.ufunc("add", rec.array(RNG.random((700, 1))), 0.5), rec.array(RNG.random((1, 300)))
            outer = rec.ufunc("multiply", column, row)
            rec.release(column)
            rec.emit("subtract", (a,), (a, outer))
            sums.append(rec.reduce("sum", outer))
        return [a, *sums]

    assert _run_both(program, monkeypatch) == [3, 3, 3]


def test_the_held_outer_updates_benchmark_computes_numpys_checksums(capsys):
    """``benchmarks/held_outer_updates.py`` at a size the lowered thresholds make lazy: it exits
    with an error where Shoal's checksum is not NumPy's."""
    from benchmarks import held_outer_updates
    from shoal import runtime

    with runtime.configure(engine="node", eager_threshold=1 << 12, settled_threshold=1 << 12):
        held_outer_updates.main(["--side", "400", "--steps", "12", "--repeats", "1"])
    assert capsys.readouterr().out.count("x |") == 2
