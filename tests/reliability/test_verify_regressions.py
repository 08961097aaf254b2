"""One test per verification defect found by hand: each batch here once got past the verifier or
the engines' ``execute`` and touched memory it should not have, or did unbounded work."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from shoal.bytecode import (
    BaseDecl,
    Batch,
    BytecodeError,
    Const,
    Instruction,
    View,
    dumps,
    make_attrs,
    verify,
)
from shoal.bytecode.boundary import VerifyAtExecute, execute_limits
from shoal.engine import ReferenceConfig, ReferenceEngine
from shoal.engine.node import NodeConfig, NodeEngine

F8 = np.dtype("f8")
ENGINES = [ReferenceEngine, NodeEngine]


def _engine(kind, **options: str):
    limits = execute_limits(options, VerifyAtExecute.ON)
    if kind is NodeEngine:
        return NodeEngine(NodeConfig(threads=2, block_size=4, compile="off", direct_work=0, verify=limits))
    return ReferenceEngine(ReferenceConfig(verify=limits))


def _small_base() -> Batch:
    """Base 0: 16 float64 (128 bytes) holding 0..15."""
    return Batch(bases=[BaseDecl(0, F8, 16)], data={0: np.arange(16.0)})


def _whole() -> View:
    return View(0, F8, 0, (16,), (8,))


def _overflowing_batch() -> Batch:
    """A view of shape (2**32, 2**32) (2**64 elements: 0 in int64) reaching 16 TiB past a
    128-byte base."""
    batch = _small_base()
    view = View(0, F8, 0, (1 << 32, 1 << 32), (1 << 12, 8))
    batch.instructions.append(Instruction("copy", (view,), (Const(1.0),), ()))
    return batch


def test_view_sizes_and_extents_do_not_wrap_around():
    view = View(0, F8, 0, (1 << 32, 1 << 32), (1 << 12, 8))
    assert view.size == 1 << 64
    assert view.byte_extent() == (0, ((1 << 32) - 1) * ((1 << 12) + 8) + 8)
    assert View(0, F8, 64, (1 << 32, 0), (8, 8)).byte_extent() == (64, 64)


def test_a_small_batch_reaching_terabytes_past_its_base_is_rejected():
    batch = _overflowing_batch()
    assert len(dumps(batch)) < 400
    with pytest.raises(BytecodeError, match=r"instruction 0 \(copy\): output 0: bytes \[0, \d+\) lie outside base 0 of 128 bytes"):
        verify(batch)


@pytest.mark.parametrize("kind", ENGINES, ids=lambda kind: kind.__name__)
def test_engines_reject_the_overflowing_batch_before_allocating(kind):
    engine = _engine(kind)
    tracemalloc.start()
    try:
        with pytest.raises(BytecodeError, match="lie outside base 0"):
            engine.execute(_overflowing_batch())
        assert tracemalloc.get_traced_memory()[1] < 1 << 20
    finally:
        tracemalloc.stop()
        engine.shutdown()


OUT_OF_BASE = [
    ("write 1 GiB past the base", lambda: Instruction("copy", (View(0, F8, 128 + (1 << 30), (4,), (8,)),), (Const(7.0),), ())),
    ("write before the base", lambda: Instruction("negative", (View(0, F8, 24, (4,), (-16,)),), (View(0, F8, 0, (4,), (8,)),), ())),
    ("read past the base", lambda: Instruction("negative", (View(0, F8, 0, (4,), (8,)),), (View(0, F8, 96, (4,), (16,)),), ())),
]


@pytest.mark.parametrize("kind", ENGINES, ids=lambda kind: kind.__name__)
@pytest.mark.parametrize("make", [case[1] for case in OUT_OF_BASE], ids=[case[0] for case in OUT_OF_BASE])
def test_engines_verify_at_execute_and_leave_memory_untouched(kind, make):
    engine = _engine(kind)
    try:
        engine.execute(_small_base())
        with pytest.raises(BytecodeError, match=r"instruction 0 \((copy|negative)\): (output|input) 0: bytes .* lie outside base 0"):
            engine.execute(Batch(instructions=[make()]))
        np.testing.assert_array_equal(engine.fetch(_whole()), np.arange(16.0))
    finally:
        engine.shutdown()


@pytest.mark.full
@pytest.mark.parametrize("make", [case[1] for case in OUT_OF_BASE], ids=[case[0] for case in OUT_OF_BASE])
def test_compiled_kernels_never_see_an_out_of_base_view(make):
    engine = _engine(NodeEngine, compile="sync")
    try:
        engine.execute(_small_base())
        batch = Batch(instructions=[make(), Instruction("multiply", (_whole(),), (_whole(), Const(2.0)), ())])
        with pytest.raises(BytecodeError, match="lie outside base 0"):
            engine.execute(batch)
        np.testing.assert_array_equal(engine.fetch(_whole()), np.arange(16.0))
    finally:
        engine.shutdown()


def _lying_arange() -> Batch:
    """An ``arange`` of 2**26 elements (512 MiB) into a 4-element output."""
    batch = _small_base()
    output = View(0, F8, 0, (4,), (8,))
    batch.instructions.append(Instruction("arange", (output,), (), make_attrs(start=0, stop=1 << 26, step=1)))
    return batch


def test_a_lying_arange_count_is_rejected():
    with pytest.raises(BytecodeError, match=r"instruction 0 \(arange\): arange\(0, 67108864, 1\) makes 67108864 elements, the output holds 4"):
        verify(_lying_arange())


@pytest.mark.parametrize("kind", ENGINES, ids=lambda kind: kind.__name__)
def test_engines_reject_a_lying_arange_without_allocating_it(kind):
    engine = _engine(kind)
    tracemalloc.start()
    try:
        with pytest.raises(BytecodeError, match="makes 67108864 elements"):
            engine.execute(_lying_arange())
        assert tracemalloc.get_traced_memory()[1] < 1 << 20
    finally:
        tracemalloc.stop()
        engine.shutdown()


def _stride_zero_giant_output() -> Batch:
    """2**34 writes of one float64: a stride-0 output over a 128-byte base."""
    batch = _small_base()
    giant = View(0, F8, 0, (1 << 34,), (0,))
    batch.instructions.append(Instruction("copy", (giant,), (Const(1.0),), ()))
    return batch


@pytest.mark.parametrize("kind", ENGINES, ids=lambda kind: kind.__name__)
def test_a_stride_zero_giant_output_is_rejected(kind):
    message = r"instruction 0 \(copy\): output 0: 17179869184 elements of 8 bytes cannot be written to base 0 of 128 bytes"
    with pytest.raises(BytecodeError, match=message):
        verify(_stride_zero_giant_output())
    engine = _engine(kind)
    try:
        with pytest.raises(BytecodeError, match=message):
            engine.execute(_stride_zero_giant_output())
    finally:
        engine.shutdown()


@pytest.mark.parametrize("kind", ENGINES, ids=lambda kind: kind.__name__)
def test_a_boundary_bounds_the_work_of_a_stride_zero_giant_input(kind):
    from shoal.bytecode import VerifyLimits

    batch = _small_base()
    batch.bases.append(BaseDecl(1, F8, 1))
    giant = View(0, F8, 0, (1 << 34,), (0,))
    batch.instructions.append(Instruction("sum", (View(1, F8, 0, (), ()),), (giant,), make_attrs(axis=None)))
    with pytest.raises(BytecodeError, match=r"instruction 0 \(sum\): the batch asks for \d+ element steps up to here, above max_work=1048576"):
        verify(batch, limits=VerifyLimits(max_work=1 << 20))
    engine = _engine(kind, max_work=str(1 << 20))
    try:
        with pytest.raises(BytecodeError, match="above max_work"):
            engine.execute(batch)
    finally:
        engine.shutdown()


@pytest.mark.parametrize("kind", ENGINES, ids=lambda kind: kind.__name__)
def test_a_boundary_bounds_the_bytes_a_batch_declares(kind):
    from shoal.bytecode import VerifyLimits

    batch = Batch(bases=[BaseDecl(0, F8, 1 << 40)])  # 8 TiB, never touched
    verify(batch)
    with pytest.raises(BytecodeError, match=r"the batch declares bases of 8796093022208 bytes, above max_batch_bytes=1048576"):
        verify(batch, limits=VerifyLimits(max_batch_bytes=1 << 20))
    engine = _engine(kind, max_batch_bytes=str(1 << 20))
    try:
        with pytest.raises(BytecodeError, match="above max_batch_bytes"):
            engine.execute(batch)
        assert engine.live_bases() == 0
    finally:
        engine.shutdown()
