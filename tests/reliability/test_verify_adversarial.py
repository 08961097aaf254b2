"""Adversarial batches: verification rejects them, or both engines run them safely and agree.

Every drawn batch (``adversarial_batches``) is verified with a boundary's limits. A rejected
batch must be rejected by both engines' ``execute`` too, before any memory is touched; an
accepted one runs on the reference engine and on the node engine (NumPy tiles in the quick
tier, compiled kernels with ``compile=sync`` in the full tier) and must give the reference's
contents in every base, or fail where the reference fails. Every batch that can be encoded
round-trips through the wire format unchanged.
"""

from __future__ import annotations

import os
import tracemalloc
import warnings

import numpy as np
import pytest
from bytecode_cases import same_batch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shoal.bytecode import BytecodeError, VerifyLimits, dumps, loads, verify
from shoal.bytecode.boundary import VerifyAtExecute, execute_limits
from shoal.engine import ReferenceConfig, ReferenceEngine
from shoal.engine.component import Component
from shoal.engine.node import NodeConfig, NodeEngine

from .adversarial_batches import Plan, plans

LIMITS = VerifyLimits(max_batch_bytes=1 << 20, max_work=1 << 16)
OPTIONS = {"verify": "on", "max_batch_bytes": str(1 << 20), "max_work": str(1 << 16)}
QUICK = settings(max_examples=int(os.environ.get("VERIFY_EXAMPLES", 40)), deadline=None, suppress_health_check=list(HealthCheck))
FULL = settings(max_examples=int(os.environ.get("VERIFY_FULL_EXAMPLES", 200)), deadline=None, suppress_health_check=list(HealthCheck))


def _engine(kind: type[Component], compile: str) -> Component:
    limits = execute_limits(OPTIONS, VerifyAtExecute.ON)
    if kind is NodeEngine:
        return NodeEngine(NodeConfig(threads=2, block_size=4, compile=compile, direct_work=0, verify=limits))
    return ReferenceEngine(ReferenceConfig(verify=limits))


def _run(engine: Component, plan: Plan) -> list[np.ndarray] | type[BaseException]:
    """Every base's contents after the batch, or the type of the error it raised."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            engine.execute(plan.batch())
            return [engine.fetch(_whole(decl)) for decl in plan.bases if decl.id in plan.data]
    except (BytecodeError, ArithmeticError, ValueError, TypeError, IndexError) as error:
        return type(error)
    finally:
        engine.shutdown()


def _whole(decl):
    from shoal.bytecode import View

    return View(decl.id, decl.dtype, 0, (decl.size,), (decl.dtype.itemsize,))


def _same(got: np.ndarray, expected: np.ndarray) -> bool:
    if got.dtype != expected.dtype or got.shape != expected.shape:
        return False
    if got.dtype.kind in "biu":
        return bool(np.array_equal(got, expected))
    return bool(np.allclose(got, expected, rtol=1e-5, atol=1e-6, equal_nan=True))


def _check(plan: Plan, compile: str) -> None:
    try:
        verify(plan.batch(), limits=LIMITS)
    except BytecodeError:
        for kind in (ReferenceEngine, NodeEngine):
            assert _run(_engine(kind, compile), plan) is BytecodeError, kind.__name__
        return
    expected = _run(_engine(ReferenceEngine, compile), plan)
    got = _run(_engine(NodeEngine, compile), plan)
    assert expected is not BytecodeError
    if isinstance(expected, type):
        assert got is not BytecodeError  # verified once: the node engine may fail elsewhere
        if expected is IndexError:  # an index out of range is never read: the node engine fails too
            assert isinstance(got, type), f"the reference raised IndexError, the node engine gave {got}"
        return
    assert not isinstance(got, type), f"the node engine raised {got.__name__} where the reference ran"
    for decl, left, right in zip(plan.bases, got, expected):
        assert _same(left, right), f"base {decl.id}: node {left} != reference {right}"


def _round_trip(plan: Plan) -> None:
    batch = plan.batch()
    try:
        message = dumps(batch)
    except BytecodeError:
        with pytest.raises(BytecodeError):
            verify(batch)  # what cannot be encoded cannot be verified either
        return
    assert same_batch(loads(message), batch)


@QUICK
@given(plans())
def test_adversarial_batches_are_rejected_or_run_safely(plan):
    _check(plan, "off")
    _round_trip(plan)


@pytest.mark.full
@FULL
@given(plans())
def test_adversarial_batches_are_rejected_or_run_safely_compiled(plan):
    _check(plan, "sync")
    _round_trip(plan)


def _decode_peak(data: bytes) -> int:
    tracemalloc.start()
    try:
        loads(data)
    except BytecodeError:
        pass
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


@QUICK
@given(plans(), st.data())
def test_decoding_corrupted_messages_allocates_in_proportion_to_the_message(plan, data):
    try:
        message = bytearray(dumps(plan.batch()))
    except BytecodeError:
        return
    for _ in range(data.draw(st.integers(1, 8))):
        position = data.draw(st.integers(0, len(message) - 1))
        message[position] = data.draw(st.sampled_from([0x00, 0xFF, 0x7F, 0x80, 0x40]))
    assert _decode_peak(bytes(message)) <= 64 * len(message) + 4096


@QUICK
@given(st.binary(min_size=32, max_size=512), st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1))
def test_decoding_arbitrary_bytes_allocates_in_proportion_to_the_message(body, bases, instructions):
    header = b"SHBC" + (1).to_bytes(2, "little") + bytes(2) + (32 + len(body)).to_bytes(8, "little")
    header += bases.to_bytes(4, "little") + instructions.to_bytes(4, "little") + bytes(8)
    message = header + body
    assert _decode_peak(message) <= 64 * len(message) + 4096
