"""How programs fuse: kernel counts, temporaries that are never allocated, where chains break."""

from __future__ import annotations

import numpy as np
from engine_node_harness import run_both
from engine_node_recorder import Recorder
from test_engine_node_differential import jacobi

from shoal.engine.node.plan.plan import WholeOp, plan_batch


def test_a_jacobi_sweep_is_one_kernel_and_its_five_temporaries_are_never_allocated():
    stats = run_both(jacobi(1), block=16).last_stats
    assert stats.kernels == 1
    assert stats.fused_instructions == 6
    assert stats.temporaries == 5
    assert stats.whole_ops == 0


def test_each_sweep_is_its_own_kernel_because_the_next_reads_shifted_neighbours():
    stats = run_both(jacobi(3), block=16).last_stats
    assert stats.kernels == 3
    assert stats.temporaries == 15


def test_reductions_join_the_chain_and_reading_their_result_breaks_it():
    def program(rec: Recorder):
        a = rec.array(np.arange(100.0))
        b = rec.array(np.ones(100))
        product = rec.ufunc("multiply", a, b)
        total = rec.reduce("sum", product)
        rec.release(product)
        largest = rec.reduce("max", a)
        after = rec.ufunc("add", a, 1.0)  # same kernel: does not read a reduction's result
        centred = rec.ufunc("subtract", a, total)  # reads ``total``: a new kernel
        return [total, largest, after, centred]

    stats = run_both(program, block=16, exact=False).last_stats
    assert stats.kernels == 2
    assert stats.temporaries == 1


def test_a_reduction_sees_its_source_before_later_in_place_updates():
    def program(rec: Recorder):
        a = rec.array(np.arange(64.0))
        before = rec.reduce("sum", a)
        rec.emit("multiply", (a,), (a, 2.0))
        after = rec.reduce("sum", a)
        return [before, after, a]

    stats = run_both(program, block=16, exact=False).last_stats
    assert stats.kernels == 1


def test_different_shapes_make_different_kernels():
    def program(rec):
        a = rec.array(np.arange(100.0))
        m = rec.array(np.ones((10, 10)))
        return [rec.ufunc("add", a, 1.0), rec.ufunc("add", m, 1.0), rec.ufunc("multiply", a, 2.0)]

    stats = run_both(program).last_stats
    assert stats.kernels == 2 and stats.fused_instructions == 3  # the (10, 10) add moves ahead


def test_reading_a_freshly_written_array_through_another_mapping_breaks_the_chain():
    def program(rec):
        a = rec.array(np.arange(50.0))
        b = rec.ufunc("multiply", a, 2.0)
        reversed_b = rec.index(b, slice(None, None, -1))
        c = rec.ufunc("add", reversed_b, a)
        return [b, c]

    stats = run_both(program, block=8).last_stats
    assert stats.kernels == 2


def test_reading_through_the_same_mapping_keeps_one_kernel():
    def program(rec):
        a = rec.array(np.arange(50.0))
        b = rec.ufunc("multiply", a, 2.0)
        c = rec.ufunc("add", b, a)
        rec.emit("subtract", (a,), (a, c))  # in place, same mapping everywhere
        return [a, b, c]

    stats = run_both(program, block=8).last_stats
    assert stats.kernels == 1


def test_an_instruction_overlapping_its_own_output_through_other_strides_runs_whole():
    rec = Recorder()
    a = rec.array(np.arange(10.0))
    rec.emit("add", (rec.index(a, slice(1, None)),), (rec.index(a, slice(9, 0, -1)), 1.0))
    plan = plan_batch(rec.batch, rec.known)
    assert [type(step) for step in plan.steps] == [WholeOp]


def test_a_temporary_that_outlives_the_batch_is_allocated():
    def program(rec):
        a = rec.array(np.arange(64.0))
        kept = rec.ufunc("sqrt", a)
        dropped = rec.ufunc("add", kept, 1.0)
        out = rec.ufunc("multiply", dropped, 3.0)
        rec.release(dropped)
        return [kept, out]

    stats = run_both(program, block=8).last_stats
    assert stats.temporaries == 1 and stats.kernels == 1


def test_released_temporaries_take_no_memory():
    def program(rec):
        a = rec.array(np.arange(1000.0))
        t1 = rec.ufunc("multiply", a, 2.0)
        t2 = rec.ufunc("add", t1, 1.0)
        out = rec.ufunc("sqrt", t2)
        rec.release(t1, t2)
        return [out]

    engine = run_both(program, block=100)
    assert engine.last_stats.temporaries == 2
    assert engine.last_stats.peak_bytes == 2 * 1000 * 8  # the input and the result only


def test_a_loop_of_materialised_arrays_holds_one_at_a_time():
    def program(rec):
        a = rec.array(np.arange(1000.0))
        for _ in range(10):
            shifted = rec.ufunc("add", rec.index(a, slice(1, None)), 1.0)
            rec.copy(rec.index(a, slice(None, -1)), rec.index(shifted, slice(None, None, -1)))
            rec.release(shifted)
        return [a]

    engine = run_both(program, block=100, threads=1)
    assert engine.last_stats.temporaries == 0
    assert engine.last_stats.peak_bytes == 1000 * 8 + 999 * 8


def test_block_operations_follow_the_block_size():
    def program(rec):
        a = rec.array(np.arange(1000.0))
        return [rec.ufunc("add", a, 1.0)]

    assert run_both(program, block=100).last_stats.block_ops == 10
    assert run_both(program, block=1000).last_stats.block_ops == 1


def test_a_release_the_open_group_does_not_need_frees_memory_before_the_group_runs():
    """heat_equation's ``work`` of the last sweep is dropped while the next sweep's is recorded."""
    state = {}

    def program(rec):
        if "a" not in state:
            state["a"] = rec.array(np.arange(4000.0))
        a, previous = state["a"], state.get("work")
        doubled = rec.ufunc("multiply", a, 2.0)
        if previous is not None:
            rec.release(previous)
        work = state["work"] = rec.ufunc("add", doubled, 1.0)
        rec.release(doubled)
        return [a, work]

    engine = run_both(program, block=500, batches=3)
    assert engine.last_stats.kernels == 1 and engine.last_stats.temporaries == 1
    assert engine.last_stats.peak_bytes == 2 * 4000 * 8  # ``a`` and one ``work``, never two
