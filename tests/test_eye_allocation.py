"""Identity matrices of new bases: a zeroed allocation and a fill of one diagonal
(``shoal/engine/node/run/zero_fills.py``), checked on the batch and against NumPy with dirty
spare buffers in the way."""

from __future__ import annotations

import numpy
import pytest

import shoal.numpy as snp
from shoal import runtime
from shoal.bytecode import BaseDecl, Batch, Const, Instruction, View
from shoal.engine.node.run.storage import Storage
from shoal.engine.node.run.zero_fills import drop_zero_fills


def _eye_batch(rows: int, columns: int, k: int, dtype: object = numpy.float64) -> Batch:
    dtype = numpy.dtype(dtype)
    out = View(1, dtype, 0, (rows, columns), (columns * dtype.itemsize, dtype.itemsize))
    return Batch(bases=[BaseDecl(1, dtype, rows * columns)], instructions=[Instruction("eye", (out,), (), (("k", k),))])


@pytest.mark.parametrize(("rows", "columns", "k"), [(5, 5, 0), (3, 7, 2), (7, 3, -2), (4, 4, 3), (6, 2, -5), (1, 1, 0)])
def test_an_eye_becomes_a_fill_of_its_diagonal_over_zeroed_memory(rows, columns, k):
    storage = Storage()
    result = drop_zero_fills(_eye_batch(rows, columns, k), storage)
    assert 1 in storage._zeroed
    (fill,) = result.instructions
    assert fill.op == "fill" and fill.inputs == (Const(numpy.float64(1.0)),)
    storage.declare(BaseDecl(1, numpy.dtype(numpy.float64), rows * columns), None)
    storage.ensure(1)
    diagonal = fill.outputs[0]
    storage.array(diagonal)[...] = 1.0
    numpy.testing.assert_array_equal(storage.typed(1, numpy.dtype(numpy.float64)).reshape(rows, columns), numpy.eye(rows, columns, k))


@pytest.mark.parametrize("k", [4, -4, 9, -9])
def test_an_eye_without_a_diagonal_leaves_only_the_zeroed_allocation(k):
    storage = Storage()
    result = drop_zero_fills(_eye_batch(4, 4, k), storage)
    assert result.instructions == [] and 1 in storage._zeroed


def test_eyes_of_old_bases_object_dtypes_or_after_other_work_are_kept():
    cases = [
        Batch(bases=[], instructions=_eye_batch(3, 3, 0).instructions),
        _eye_batch(3, 3, 0, object),
        Batch(bases=[BaseDecl(1, numpy.dtype(numpy.float64), 9)], data={1: numpy.ones(9)}, instructions=_eye_batch(3, 3, 0).instructions),
    ]
    whole = _eye_batch(3, 3, 0).instructions[0].outputs[0]
    earlier = Instruction("copy", (View(2, numpy.dtype(numpy.float64), 0, (3, 3), (24, 8)),), (whole,))
    cases.append(Batch(bases=[BaseDecl(1, numpy.dtype(numpy.float64), 9), BaseDecl(2, numpy.dtype(numpy.float64), 9)], instructions=[earlier, *_eye_batch(3, 3, 0).instructions]))
    for batch in cases:
        storage = Storage()
        assert drop_zero_fills(batch, storage) is batch
        assert not storage._zeroed


@pytest.mark.parametrize("engine", ["node", "reference"])
@pytest.mark.parametrize("dtype", [numpy.float64, numpy.int32, numpy.bool_, numpy.complex64])
def test_eyes_over_reused_memory_match_numpy(monkeypatch, engine, dtype):
    monkeypatch.setenv("SHOAL_COMPILE", "off")
    results = []
    with runtime.configure(engine=engine, eager_threshold=0):
        for np in (numpy, snp):
            for _ in range(2):  # spare buffers of this size, holding fives
                junk = np.full((30, 40), 5, dtype=dtype)
                numpy.asarray(junk.sum())
                del junk
            shapes = [np.eye(30, 40, dtype=dtype), np.eye(30, 40, 7, dtype=dtype), np.eye(30, 40, -29, dtype=dtype), np.eye(30, 40, 40, dtype=dtype)]
            results.append([numpy.asarray(a * 1) for a in shapes] + [numpy.asarray(np.identity(1200, dtype=dtype).sum(axis=0))])
    for ours, theirs in zip(results[1], results[0]):
        numpy.testing.assert_array_equal(ours, theirs)
        assert ours.dtype == theirs.dtype
