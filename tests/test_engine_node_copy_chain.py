"""Copies through a small scratch array (``x[i] = np.roll(x[i], ...)``) as one block operation:
against the reference engine, and what the planner makes of them."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from engine_node_harness import run_both
from engine_node_recorder import Recorder

import shoal.engine.node.plan.copy_chain as copy_chain
from shoal.bytecode import View
from shoal.engine.node.plan.copy_chain import CopyChain
from shoal.engine.node.plan.plan import Group, plan_batch

RNG = np.random.default_rng(3)
SHIFTS = [(0, 0), (0, 1), (1, 0), (0, -1), (-1, 0), (1, 1), (-1, 1), (-1, -1), (1, -1)]


def rolled(rec: Recorder, plane: View, shift: tuple[int, int]) -> View:
    """A new array holding ``np.roll(plane, shift, axis=(0, 1))``, recorded as the frontend does:
    one copy per block of the result that moves as a whole."""
    result = rec.empty(plane.shape, plane.dtype)
    pieces = []
    for moved, n in zip(shift, plane.shape):
        moved %= n
        pieces.append([(slice(moved, None), slice(None, n - moved)), (slice(None, moved), slice(n - moved, None))] if moved else [(slice(None), slice(None))])
    for combination in itertools.product(*pieces):
        target = rec.index(result, tuple(t for t, _ in combination))
        if target.shape[0] and target.shape[1]:
            rec.copy(target, rec.index(plane, tuple(s for _, s in combination)))
    return result


def streaming(shape: tuple[int, int, int], aligned: bool, then_sum: bool = True):
    """lattice_boltzmann.py's streaming: every population rolled into itself, then a sum."""

    def program(rec: Recorder):
        if aligned:
            populations = rec.array(RNG.random((len(SHIFTS), *shape[1:])))
        else:
            padded = rec.array(RNG.random((len(SHIFTS) + 1, shape[1] + 2, 2 * shape[2] + 3)))
            populations = rec.index(padded, (slice(1, None), slice(1, 1 + shape[1]), slice(2, 2 + 2 * shape[2], 2)))
        for i, shift in enumerate(SHIFTS):
            plane = rec.index(populations, (i,))
            scratch = rolled(rec, plane, shift)
            rec.copy(plane, scratch)
            rec.release(scratch)
        kept = [populations]
        if then_sum:
            kept.append(rec.reduce("sum", rec.ufunc("multiply", populations, 2.0), axis=0))
        return kept

    return program


def steps_of(program) -> list:
    rec = Recorder()
    program(rec)
    return plan_batch(rec.batch, rec.known).steps


@pytest.mark.parametrize("aligned", [True, False])
@pytest.mark.parametrize("block", [7, 100, 1 << 16])
@pytest.mark.parametrize("threads", [1, 2])
def test_rolls_into_their_source_match_the_reference(aligned, block, threads):
    stats = run_both(streaming((9, 6, 70), aligned), block=block, threads=threads, exact=True).last_stats
    assert stats.copy_chains == len(SHIFTS) and stats.whole_ops == 0
    assert stats.kernels == 1  # the sum after them; no copy is a kernel of its own


def test_a_roll_is_one_step_holding_its_copies_in_order():
    chains = [step for step in steps_of(streaming((9, 4, 70), aligned=True)) if isinstance(step, CopyChain)]
    assert [len(chain.instructions) for chain in chains] == [2, 3, 3, 3, 3, 5, 5, 5, 5]
    for chain in chains:
        scratch = chain.instructions[0].outputs[0].base
        assert all(i.outputs[0].base == scratch for i in chain.instructions[:-1])
        assert chain.instructions[-1].inputs[0].base == scratch


def test_chains_wait_for_the_kernel_before_them_and_the_kernel_after_them_waits_for_the_chains():
    def program(rec: Recorder):
        x = rec.array(RNG.random((4, 5, 80)))
        doubled = rec.ufunc("multiply", x, 2.0)  # written by a kernel, rolled, read by a kernel
        for i in range(4):
            plane = rec.index(doubled, (i,))
            scratch = rolled(rec, plane, (i - 2, 1 - i))
            rec.copy(plane, scratch)
            rec.release(scratch)
        return [rec.ufunc("add", doubled, x), doubled]

    stats = run_both(program, block=50, threads=2, exact=True).last_stats
    assert stats.copy_chains == 4 and stats.kernels == 2


def test_a_scratch_array_read_after_the_copy_out_is_no_chain():
    def program(rec: Recorder):
        x = rec.array(RNG.random((6, 70)))
        scratch = rolled(rec, x, (1, 1))
        rec.copy(x, scratch)
        result = rec.ufunc("add", scratch, 1.0)  # still used: not released after the copy out
        rec.release(scratch)
        return [x, result]

    assert not any(isinstance(step, CopyChain) for step in steps_of(program))
    run_both(program, block=50, exact=True)


def test_a_scratch_array_with_data_or_too_large_is_no_chain(monkeypatch):
    def program(rec: Recorder):
        x = rec.array(RNG.random((6, 70)))
        scratch = rec.array(np.zeros((6, 70)))  # carries data: not a scratch array
        rec.copy(rec.index(scratch, (slice(1, None),)), rec.index(x, (slice(None, -1),)))
        rec.copy(x, scratch)
        rec.release(scratch)
        return [x]

    assert not any(isinstance(step, CopyChain) for step in steps_of(program))
    run_both(program, block=50, exact=True)
    monkeypatch.setattr(copy_chain, "CHAIN_ELEMENTS", 6 * 70 - 1)
    steps = steps_of(streaming((9, 6, 70), aligned=True, then_sum=False))
    assert not any(isinstance(step, CopyChain) for step in steps)
    assert any(isinstance(step, Group) for step in steps)
