"""Zero fills of new bases become zeroed allocations (``shoal/engine/node/run/zero_fills.py``).

The engine drops a ``fill`` with zero bytes of a whole new base and allocates the base zeroed:
fresh memory from ``calloc``, or a reused spare buffer (not zero: it held an earlier array)
filled with zeros. Checked on the storage directly and differentially against NumPy, with the
spare buffers of released arrays in the way.
"""

from __future__ import annotations

import numpy
import pytest

import shoal.numpy as snp
from shoal import runtime
from shoal.bytecode import BaseDecl, Batch, Const, Instruction, View
from shoal.engine.node.run.storage import Storage
from shoal.engine.node.run.zero_fills import drop_zero_fills


def _whole(base: int, dtype: numpy.dtype, shape: tuple[int, ...]) -> View:
    dtype = numpy.dtype(dtype)
    strides = tuple(int(numpy.prod(shape[i + 1 :])) * dtype.itemsize for i in range(len(shape)))
    return View(base, dtype, 0, shape, strides)


def _fill(view: View, value: object) -> Instruction:
    return Instruction("fill", (view,), (Const(value),))


def test_a_reused_spare_buffer_is_zeroed_and_fresh_memory_is_zero():
    storage = Storage()
    storage.declare(BaseDecl(1, numpy.dtype(numpy.float64), 1000), None)
    storage.ensure(1)
    storage.typed(1, numpy.dtype(numpy.float64))[:] = 7.5
    address = storage.raw(1).ctypes.data
    storage.release(1)  # kept as a spare, still holding 7.5s
    storage.declare(BaseDecl(2, numpy.dtype(numpy.float64), 1000), None)
    storage.zero_on_allocation(2)
    storage.ensure(2)
    assert storage.raw(2).ctypes.data == address  # the spare was reused ...
    assert not storage.raw(2).any()  # ... and zeroed
    storage.declare(BaseDecl(3, numpy.dtype(numpy.int32), 333), None)
    storage.zero_on_allocation(3)
    storage.ensure(3)
    assert not storage.raw(3).any()


def test_a_spare_given_to_a_base_without_a_zero_fill_is_not_written():
    storage = Storage()
    storage.declare(BaseDecl(1, numpy.dtype(numpy.int64), 100), None)
    storage.ensure(1)
    storage.typed(1, numpy.dtype(numpy.int64))[:] = 3
    storage.release(1)
    storage.declare(BaseDecl(2, numpy.dtype(numpy.int64), 100), None)
    storage.ensure(2)
    assert (storage.typed(2, numpy.dtype(numpy.int64)) == 3).all()  # np.empty's semantics: no pass over it


@pytest.mark.parametrize(
    ("dtype", "value", "dropped"),
    [
        (numpy.float64, 0.0, True),
        (numpy.float64, -0.0, False),  # the sign bit is set
        (numpy.bool_, False, True),
        (numpy.complex128, 0j, True),
        (numpy.int8, 0, True),
        (numpy.float32, 1e-50, True),  # zero once cast to float32
        (numpy.int32, 1, False),
        (object, 0, False),  # zero bytes are null references, not the integer 0
    ],
)
def test_only_fills_whose_bytes_are_zero_are_dropped(dtype, value, dropped):
    view = _whole(1, dtype, (10, 4))
    batch = Batch(bases=[BaseDecl(1, numpy.dtype(dtype), 40)], instructions=[_fill(view, value)])
    storage = Storage()
    result = drop_zero_fills(batch, storage)
    assert (len(result.instructions) == 0) is dropped
    assert (1 in storage._zeroed) is dropped


def test_fills_of_part_of_a_base_of_an_old_base_or_after_other_work_are_kept():
    decl = BaseDecl(1, numpy.dtype(numpy.float64), 40)
    whole = _whole(1, numpy.float64, (10, 4))
    half = View(1, numpy.dtype(numpy.float64), 0, (5, 4), (32, 8))
    columns = View(1, numpy.dtype(numpy.float64), 0, (10, 2), (32, 16))
    earlier = Instruction("copy", (_whole(2, numpy.float64, (10, 4)),), (whole,))
    cases = [
        Batch(bases=[decl], instructions=[_fill(half, 0.0)]),
        Batch(bases=[decl], instructions=[_fill(columns, 0.0)]),
        Batch(bases=[], instructions=[_fill(whole, 0.0)]),
        Batch(bases=[decl], data={1: numpy.ones(40)}, instructions=[_fill(whole, 0.0)]),
        Batch(bases=[decl, BaseDecl(2, numpy.dtype(numpy.float64), 40)], instructions=[earlier, _fill(whole, 0.0)]),
    ]
    for batch in cases:
        storage = Storage()
        assert drop_zero_fills(batch, storage) is batch
        assert not storage._zeroed


@pytest.fixture(params=["node", "reference"])
def lazy(monkeypatch, request):
    """Every array lazy."""
    monkeypatch.setenv("SHOAL_COMPILE", "off")
    with runtime.configure(engine=request.param, eager_threshold=0) as rt:
        yield rt


def _dirty_spares(np, shape, dtype):
    """Make and drop arrays of ``shape`` and ``dtype`` holding non-zero values: the engine keeps
    their memory for the next array of that size."""
    for _ in range(2):
        junk = np.full(shape, 5, dtype=dtype)
        numpy.asarray(junk.sum())
        del junk


@pytest.mark.parametrize("dtype", [numpy.float64, numpy.float32, numpy.int16, numpy.bool_, numpy.complex128, numpy.uint8])
def test_zeros_over_reused_memory_match_numpy(lazy, dtype):
    results = []
    for np in (numpy, snp):
        _dirty_spares(np, (300, 7), dtype)
        z = np.zeros((300, 7), dtype)
        like = np.zeros_like(z)
        full = np.full((300, 7), 0, dtype=dtype)
        results.append([numpy.asarray(a) for a in (z, like, full, z[::3, 1:], z.T)])
    for ours, theirs in zip(results[1], results[0]):
        numpy.testing.assert_array_equal(ours, theirs)
        assert ours.dtype == theirs.dtype


def test_negative_zero_object_zeros_and_zeros_written_in_place_match_numpy(lazy):
    results = []
    for np in (numpy, snp):
        _dirty_spares(np, (500,), numpy.float64)
        negative = np.full(500, -0.0)
        z = np.zeros((50, 10))
        z[3] = 2.0
        z[:, 4] += np.arange(50.0)
        z += 1.0
        objects = np.zeros(40, dtype=object)
        results.append((numpy.asarray(negative), numpy.asarray(z), numpy.asarray(objects)))
    (negative, z, objects), (expected_negative, expected_z, expected_objects) = results[1], results[0]
    assert numpy.signbit(negative).all() and numpy.signbit(expected_negative).all()
    numpy.testing.assert_array_equal(z, expected_z)
    assert objects.dtype == object and list(objects) == list(expected_objects)
    assert all(type(x) is int for x in objects)


def test_a_zero_fill_dropped_by_the_node_engine_leaves_no_instruction(monkeypatch):
    monkeypatch.setenv("SHOAL_COMPILE", "off")
    with runtime.configure(engine="node", eager_threshold=0, settled_threshold=0) as rt:
        z = snp.zeros(1000)
        total = float(z.sum())
        assert total == 0.0
        assert rt.engine.last_stats.instructions == 1  # the sum alone; the fill went


def _zeros_then_warnings(np):
    """Two new zero arrays (fills the engine drops) recorded before two steps that warn on two
    lines: the notes name positions in the batch as sent, fills included."""
    a = np.zeros(4096)
    b = np.zeros(4096)
    quotient = np.divide(1.0, a)  # divide by zero
    logarithm = np.log(b - 1.0)  # invalid
    return quotient + logarithm


def test_warnings_after_dropped_zero_fills_name_numpys_lines(monkeypatch):
    from fp_engines import blocked_engine, warnings_shown

    from shoal.engine.node import engine as node_engine

    dropped = []

    def counting(batch, storage):
        kept = drop_zero_fills(batch, storage)
        dropped.append(len(batch.instructions) - len(kept.instructions))
        return kept

    monkeypatch.setattr(node_engine, "drop_zero_fills", counting)

    expected = warnings_shown(lambda: _zeros_then_warnings(numpy))
    assert len(expected) == 2
    with runtime.configure(engine=blocked_engine("off"), eager_threshold=0, settled_threshold=0):
        assert warnings_shown(lambda: _zeros_then_warnings(snp)) == expected
    assert sum(dropped) == 2  # both fills went


@pytest.mark.parametrize("compiled", ["off", "sync"])
def test_an_accumulator_of_zeros_released_in_its_own_batch_starts_at_zero(monkeypatch, compiled):
    """The zeros' fill is dropped; the planner then saw the in-place ``acc += ...`` read of the
    accumulator (one View object as input and output) as a write and kept the accumulator per
    tile, never allocated zeroed: a function returning ``acc.sum()`` summed leftover values."""
    if compiled == "sync":
        pytest.importorskip("numba")
    monkeypatch.setenv("SHOAL_COMPILE", compiled)
    monkeypatch.setenv("SHOAL_VERIFY", "0")  # the wire's round trip gives input and output separate View objects
    monkeypatch.setenv("SHOAL_DIRECT_WORK", "0")
    monkeypatch.setenv("SHOAL_BLOCK_SIZE", str(1 << 19))  # tiles of one block reuse one buffer

    def accumulated(np, n: int) -> float:
        ones = np.ones(n)
        acc = np.zeros(n)
        for k in range(3):
            acc += np.sqrt(ones * k)
        return acc.sum()  # acc dies here: its release joins the batch

    expected = accumulated(numpy, 1 << 20)
    with runtime.configure(engine="node", eager_threshold=0):
        garbage = snp.ones(1 << 20) * 7.0  # leaves memory that is not zero behind
        float(garbage.sum())
        del garbage
        for _ in range(3):
            assert float(accumulated(snp, 1 << 20)) == pytest.approx(expected, rel=1e-12)
