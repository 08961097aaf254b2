"""A sum or product computes in the dtype its reference implementation does (NumPy without
``out=``), whatever the output's dtype: an int64 sum that wraps still wraps when the output is
float64, in a full reduction and in a fused axis reduction, compiled or not."""

from __future__ import annotations

import numpy as np
import pytest

from shoal.bytecode import BaseDecl, Batch, Instruction, View, make_attrs
from shoal.engine import ReferenceEngine
from shoal.engine.node import NodeConfig, NodeEngine
from shoal.engine.node.plan.fusible import reduction_dtype

F8, I8 = np.dtype(np.float64), np.dtype(np.int64)
BIG = 2**62 + 12345  # three of these overflow int64


def contiguous(base: int, dtype: np.dtype, shape: tuple[int, ...]) -> View:
    strides, step = [], dtype.itemsize
    for n in reversed(shape):
        strides.insert(0, step)
        step *= n
    return View(base, dtype, 0, shape, tuple(strides))


def run(engine, batch: Batch, out: View) -> np.ndarray:
    try:
        engine.execute(batch)
        return engine.fetch(out).copy()
    finally:
        engine.shutdown()


def engines():
    yield "reference", ReferenceEngine()
    for threads in (1, 2):
        yield f"node-{threads}", NodeEngine(NodeConfig(threads=threads, block_size=64, compile="off", direct_work=0))


@pytest.mark.parametrize("op", ["sum", "prod"])
@pytest.mark.parametrize("axis", [None, 1], ids=["full", "axis"])
def test_an_integer_reduction_into_a_float_output_wraps_as_the_reference_does(op, axis):
    shape = (2, 3, 128)
    values = np.full(shape, BIG if op == "sum" else 2**21 + 1, dtype=I8)
    source = contiguous(1, I8, shape)
    out_shape = () if axis is None else (2, 128)
    out = contiguous(2, F8, out_shape)
    batch = Batch(
        bases=[BaseDecl(1, I8, values.size), BaseDecl(2, F8, int(np.prod(out_shape)))],
        data={1: values.reshape(-1)},
        instructions=[Instruction(op, (out,), (source,), make_attrs(axis=axis))],
    )
    results = {name: run(engine, batch, out) for name, engine in engines()}
    expected = np.asarray(getattr(np, op)(values, axis=axis), dtype=F8)
    assert np.array_equal(results["reference"], expected)
    for name, got in results.items():
        assert np.array_equal(got, expected), name


@pytest.mark.parametrize("char", "?bhilqBHILQefdFD")
@pytest.mark.parametrize("op", ["sum", "prod"])
def test_the_reduction_dtype_is_numpys(op, char):
    dtype = np.dtype(char)
    instruction = Instruction(op, (contiguous(2, dtype, ()),), (contiguous(1, dtype, (3,)),), make_attrs(axis=None))
    assert reduction_dtype(instruction) == getattr(np, op)(np.zeros(3, dtype)).dtype
    forced = Instruction(op, (contiguous(2, dtype, ()),), (contiguous(1, dtype, (3,)),), make_attrs(axis=None, dtype=np.dtype(np.float32)))
    assert reduction_dtype(forced) == np.float32
