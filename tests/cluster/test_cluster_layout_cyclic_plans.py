"""Block-cyclic plans run without MPI: every rank's operations on a reference engine of its own,
messages through a mailbox (:func:`run_plans`), against NumPy and against the row layout.

Random programs of element-wise operations (slices with steps, reversed and transposed
operands, broadcasts, in-place updates whose input overlaps the output), reductions and matrix
products over 2-D grids, at 1-4 ranks with random block shapes: element-wise results are
NumPy's bit for bit, integer reductions and products exactly.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster.test_cluster_halo_simulated import TAGS, run_plans
from shoal.bytecode import BaseDecl, Batch, Const, Instruction, View, make_attrs
from shoal.cluster import layout as layout_module
from shoal.cluster.cyclic import CyclicLayout
from shoal.cluster.layout import split, sub_view
from shoal.cluster.plan import PlanConfig, Planner
from shoal.engine.reference import ReferenceEngine

I8 = np.dtype("i8")


def c_view(base: int, shape: tuple[int, ...], dtype: np.dtype = I8) -> View:
    strides = []
    step = dtype.itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return View(base, dtype, 0, tuple(shape), tuple(reversed(strides)))


def as_view(base: int, window: np.ndarray) -> View:
    """``window`` (a view of an array of element numbers) as a view of base ``base``."""
    offset = int(window.flat[0]) * 8 if window.size else 0
    return View(base, I8, offset, window.shape, tuple(int(s) for s in window.strides))


def fetch(planners: list[Planner], engines: list[ReferenceEngine], view: View) -> np.ndarray:
    """``view`` assembled from its owners, as ``RankEngine.fetch`` does."""
    result = np.empty(view.shape, dtype=view.dtype)
    for box, (rank,) in split([(view, planners[0].layouts[view.base])], view.shape, 1 << 30):
        part = sub_view(view, box)
        result[tuple(slice(low, high) for low, high in box)] = engines[rank].fetch(planners[rank].local_view(part))
    return result


class Program:
    """A random program over two grids of int64, recorded as batches, and NumPy's result."""

    def __init__(self, data: st.DataObject, shape: tuple[int, int]) -> None:
        self.data = data
        self.shape = shape
        rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
        self.arrays = {1: rng.integers(-50, 50, size=shape), 2: rng.integers(-50, 50, size=shape)}
        self.next = 10
        self.fetches: list[tuple[View, np.ndarray]] = []

    def fresh(self) -> int:
        self.next += 1
        return self.next

    def first(self) -> Batch:
        """The grids, with a first instruction that shows their shape."""
        size = math.prod(self.shape)
        bases = [BaseDecl(base, I8, size) for base in self.arrays]
        data = {base: values.reshape(-1).copy() for base, values in self.arrays.items()}
        instructions = [Instruction("multiply", (c_view(base, self.shape),), (c_view(base, self.shape), Const(1))) for base in self.arrays]
        return Batch(bases=bases, data=data, instructions=instructions)

    def window(self, base: int, shape: tuple[int, int] | None = None) -> tuple[View, np.ndarray]:
        """A random window of grid ``base`` (of ``shape`` when given), as a view and in NumPy."""
        draw = self.data.draw
        rows, columns = self.shape
        numbers = np.arange(rows * columns).reshape(self.shape)
        transpose = draw(st.booleans()) and (shape is None or (shape[1] <= rows and shape[0] <= columns))
        if shape is None:
            height, width = draw(st.integers(1, rows)), draw(st.integers(1, columns))
            shape = (width, height) if transpose else (height, width)
        height, width = (shape[1], shape[0]) if transpose else shape
        if height > rows or width > columns:
            height, width = min(height, rows), min(width, columns)
        top, left = draw(st.integers(0, rows - height)), draw(st.integers(0, columns - width))
        window = numbers[top : top + height, left : left + width]
        if draw(st.booleans()):
            window = window[::-1]
        if draw(st.booleans()):
            window = window[:, ::-1]
        if transpose:
            window = window.T
        return as_view(base, window), window

    def step(self) -> Batch:
        draw = self.data.draw
        kind = draw(st.sampled_from(["elementwise", "elementwise", "inplace", "reduction", "matmul", "temporary"]))
        out_base, in_base = draw(st.permutations([1, 2]))
        if kind == "matmul":
            return self.matmul(in_base, out_base)
        source = out_base if kind == "inplace" else in_base
        out_view, out_window = self.window(out_base)
        in_view, in_window = self.window(source, out_window.shape)
        if in_window.shape != out_window.shape:
            in_view, in_window = as_view(source, out_window), out_window
        if kind == "temporary":  # a temporary of the window's shape, aligned with the input's window
            temp = self.fresh()
            temp_view = c_view(temp, out_window.shape)
            value = self.arrays[source].reshape(-1)[in_window] - 3
            self.arrays[out_base].reshape(-1)[out_window] = value * 2
            instructions = [
                Instruction("subtract", (temp_view,), (in_view, Const(3))),
                Instruction("multiply", (out_view,), (temp_view, Const(2))),
                Instruction("release", (), (), make_attrs(base=temp)),
            ]
            return Batch(bases=[BaseDecl(temp, I8, math.prod(out_window.shape))], instructions=instructions)
        if kind == "reduction":
            axis = draw(st.sampled_from([None, 0, 1]))
            result = self.fresh()
            shape = () if axis is None else tuple(n for a, n in enumerate(in_window.shape) if a != axis)
            axes = (0, 1) if axis is None else (axis,)
            op = draw(st.sampled_from(["sum", "max"]))
            value = getattr(np, op)(self.arrays[in_base].reshape(-1)[in_window], axis=axis)
            out = c_view(result, shape)
            self.fetches.append((out, np.asarray(value)))
            return Batch(bases=[BaseDecl(result, I8, max(1, math.prod(shape)))], instructions=[Instruction(op, (out,), (in_view,), make_attrs(axis=axes))])
        op = draw(st.sampled_from(["add", "subtract", "multiply"]))
        operands: list = [in_view, out_view]
        broadcast = draw(st.booleans())
        if broadcast:  # a row of the input grid, broadcast along the window's rows
            operands[1] = View(in_base, I8, in_view.offset, out_window.shape, (0, in_view.strides[1]))
            second = self.arrays[in_base].reshape(-1)[np.broadcast_to(in_window[0], out_window.shape)]
        else:
            second = self.arrays[out_base].reshape(-1)[out_window]
        first = self.arrays[source].reshape(-1)[in_window]
        value = getattr(np, op)(first, second)
        self.arrays[out_base].reshape(-1)[out_window] = value
        return Batch(instructions=[Instruction(op, (out_view,), tuple(operands))])

    def matmul(self, left_base: int, right_base: int) -> Batch:
        rows, columns = self.shape
        result = self.fresh()
        inner = min(rows, columns)
        left = self.arrays[left_base][:rows, :inner]
        right = self.arrays[right_base][:inner, :columns]
        left_view = View(left_base, I8, 0, (rows, inner), (columns * 8, 8))
        right_view = View(right_base, I8, 0, (inner, columns), (columns * 8, 8))
        out = c_view(result, (rows, columns))
        self.fetches.append((out, left @ right))
        return Batch(bases=[BaseDecl(result, I8, rows * columns)], instructions=[Instruction("matmul", (out,), (left_view, right_view))])


def run(batches: list[Batch], ranks: int, config: PlanConfig) -> tuple[list[Planner], list[ReferenceEngine]]:
    planners = [Planner(rank, ranks, config, TAGS) for rank in range(ranks)]
    engines = [ReferenceEngine() for _ in range(ranks)]
    for batch in batches:
        run_plans([planner.plan(batch) for planner in planners], engines)
    return planners, engines


def check(program: Program, batches: list[Batch], ranks: int, config: PlanConfig) -> None:
    planners, engines = run(batches, ranks, config)
    for base, want in program.arrays.items():
        np.testing.assert_array_equal(fetch(planners, engines, c_view(base, program.shape)), want)
    for view, want in program.fetches:
        np.testing.assert_array_equal(fetch(planners, engines, view), want)


blocks = st.lists(st.integers(1, 6), min_size=0, max_size=2).map(tuple)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), ranks=st.integers(1, 4), rows=st.integers(2, 13), columns=st.integers(2, 11), steps=st.integers(1, 6), block=blocks)
def test_random_programs_in_block_cyclic_layouts_are_numpys(data: st.DataObject, ranks: int, rows: int, columns: int, steps: int, block: tuple[int, ...]) -> None:
    program = Program(data, (rows, columns))
    batches = [program.first()] + [program.step() for _ in range(steps)]
    config = PlanConfig(min_bytes=0, cache_size=4, layout="block-cyclic", block=block, max_pieces=1 << 12)
    planners, _ = run([program.first()], ranks, config)
    if 1 < ranks <= rows * columns:
        assert all(isinstance(planners[0].layouts[base], CyclicLayout) for base in program.arrays)
    check(program, batches, ranks, config)


def test_matmul_of_two_dimensional_blocks_runs_distributed() -> None:
    """``C[R, K]`` per block, not gathered."""
    program = Program.__new__(Program)
    program.shape, program.next, program.fetches = (12, 9), 10, []
    rng = np.random.default_rng(1)
    program.arrays = {1: rng.integers(-9, 9, size=(12, 9)), 2: rng.integers(-9, 9, size=(12, 9))}
    batches = [program.first(), program.matmul(1, 2)]
    config = PlanConfig(min_bytes=64, layout="block-cyclic", block=(4, 4))
    planners, _ = run(batches, 4, config)
    assert not planners[0].warnings
    check(program, batches, 4, config)


def test_a_planner_that_drops_a_sub_view_block_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """Losing one piece of one instruction's split is caught by the comparison above."""
    program = Program.__new__(Program)
    program.shape, program.next, program.fetches = (9, 7), 10, []
    program.arrays = {1: np.arange(63).reshape(9, 7), 2: np.arange(63).reshape(9, 7) * 3}
    out = c_view(1, (9, 7))
    batches = [program.first(), Batch(instructions=[Instruction("add", (out,), (out, c_view(2, (9, 7))))])]
    program.arrays[1] = program.arrays[1] + program.arrays[2]
    config = PlanConfig(min_bytes=64, layout="block-cyclic", block=(2, 3))
    check(program, batches, 3, config)
    real_split = layout_module.split

    def dropping(operands, shape, limit):
        pieces = real_split(operands, shape, limit)
        return pieces[:-1] if len(operands) == 3 and len(pieces) > 1 else pieces

    from shoal.cluster import owner_computes

    monkeypatch.setattr(owner_computes, "split", dropping)  # the owner-computes scheme's split
    with pytest.raises(AssertionError):
        check(program, batches, 3, config)


@pytest.mark.parametrize(("ranks", "block"), [(2, ()), (3, ()), (3, (3, 4))])
def test_the_plan_cache_replays_block_cyclic_plans_exactly(ranks: int, block: tuple[int, ...]) -> None:
    from cluster.test_cluster_plan_cache import Ids, creation, described, reduction, state, sweep

    def batches():
        ids = Ids()
        grid = ids()
        yield creation(grid, 1)
        for _ in range(4):
            yield sweep(grid, ids)
            yield reduction(grid, ids)

    for rank in range(ranks):
        cached = Planner(rank, ranks, PlanConfig(min_bytes=256, cache_size=8, layout="block-cyclic", block=block), TAGS)
        fresh = Planner(rank, ranks, PlanConfig(min_bytes=256, cache_size=0, layout="block-cyclic", block=block), TAGS)
        for batch, again in zip(batches(), batches(), strict=True):
            assert described(cached.plan(batch)) == described(fresh.plan(again))
            assert state(cached) == state(fresh)
        assert any(isinstance(layout, CyclicLayout) for layout in cached.layouts.values())
        assert cached.cache.hits >= 6
