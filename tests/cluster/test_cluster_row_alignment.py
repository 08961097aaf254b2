"""Temporaries split in the rows of the views they are first combined with
(``shoal/cluster/row_alignment.py``; no MPI needed)."""

from __future__ import annotations

import numpy as np
import pytest

from shoal.bytecode import BaseDecl, Batch, Const, Instruction, View, make_attrs
from shoal.cluster.layout import Layout, whole_on
from shoal.cluster.plan import PlanConfig, Planner

F8, B1 = np.dtype(np.float64), np.dtype(np.bool_)


def grid_view(base: int, rows: tuple[int, int], columns: tuple[int, int], width: int, dtype: np.dtype = F8) -> View:
    item = dtype.itemsize
    return View(base, dtype, rows[0] * width * item + columns[0] * item, (rows[1] - rows[0], columns[1] - columns[0]), (width * item, item))


def interior_sum(n: int, grid_data: bool = True, temp_dtype: np.dtype = F8) -> Batch:
    """``t = grid[1:-1, 1:-1] + grid[:-2, 1:-1]`` over an ``n`` x ``n`` grid (base 1 from Python),
    ``t`` a new base 2."""
    inner = (n - 2, n - 2)
    out = View(2, temp_dtype, 0, inner, (inner[1] * temp_dtype.itemsize, temp_dtype.itemsize))
    op = "add" if temp_dtype == F8 else "greater"
    return Batch(
        bases=[BaseDecl(1, F8, n * n), BaseDecl(2, temp_dtype, inner[0] * inner[1])],
        data={1: np.zeros(n * n)} if grid_data else {},
        instructions=[Instruction(op, (out,), (grid_view(1, (1, n - 1), (1, n - 1), n), grid_view(1, (0, n - 2), (1, n - 1), n)))],
    )


@pytest.mark.parametrize("ranks", [2, 3, 4, 7])
@pytest.mark.parametrize("n", [40, 41, 2000])
def test_a_temporary_lives_where_the_rows_of_its_operand_do(ranks: int, n: int) -> None:
    layouts = Planner(0, ranks, PlanConfig(min_bytes=1024, halo_rows=2), 1 << 14).new_layouts(interior_sum(n))
    grid, temp = layouts[1], layouts[2]
    assert isinstance(grid, Layout) and isinstance(temp, Layout)
    row = n - 2
    for rank in range(ranks):  # temporary row i is grid row i + 1, on the same rank
        first, last = temp.starts[rank] // row, temp.starts[rank + 1] // row
        assert temp.starts[rank] % row == 0
        grid_first, grid_last = max(1, grid.starts[rank] // n), min(n - 1, grid.starts[rank + 1] // n)
        assert (first, last) == (grid_first - 1, grid_last - 1) or (first == last and grid_first >= grid_last)
    assert temp.halo == 2 * row  # as wide as before


def test_a_small_temporary_lives_in_the_rows_of_its_operand() -> None:
    """A bool temporary of 38² elements (1,444 bytes) beside a distributed float64 grid: kept
    whole on rank 0, each rank's rows of it were a message there and (for a store into the grid)
    a message back."""
    planner = Planner(0, 3, PlanConfig(min_bytes=4096, halo_rows=2), 1 << 14)
    layouts = planner.new_layouts(interior_sum(40, temp_dtype=B1))
    grid, temp = layouts[1], layouts[2]
    assert isinstance(grid, Layout) and isinstance(temp, Layout) and grid.distributed and temp.distributed
    for rank in range(3):  # temporary row i is grid row i + 1
        first, last = temp.starts[rank] // 38, temp.starts[rank + 1] // 38
        assert (first, last) == (max(1, grid.starts[rank] // 40) - 1, min(39, grid.starts[rank + 1] // 40) - 1)


def reflected(n: int, row: bool) -> Batch:
    """``grid[-1, :] = -1.0 * grid[-2, :]`` (``row``) or ``grid[:, 0] = -1.0 * grid[:, 1]`` on
    an ``n`` x ``n`` grid (base 1, from Python); the small temporary is base 2."""
    item = F8.itemsize
    source = grid_view(1, (n - 2, n - 1), (0, n), n) if row else grid_view(1, (0, n), (1, 2), n)
    target = grid_view(1, (n - 1, n), (0, n), n) if row else grid_view(1, (0, n), (0, 1), n)
    source = View(1, F8, source.offset, (n,), (item,) if row else (n * item,))
    target = View(1, F8, target.offset, (n,), (item,) if row else (n * item,))
    temp = View(2, F8, 0, (n,), (item,))
    return Batch(
        bases=[BaseDecl(1, F8, n * n), BaseDecl(2, F8, n)],
        data={1: np.zeros(n * n)},
        instructions=[
            Instruction("multiply", (temp,), (Const(-1.0), source)),
            Instruction("copy", (target,), (temp,)),
            Instruction("release", (), (), make_attrs(base=2)),
        ],
    )


@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("row", [True, False])
def test_reflecting_a_boundary_row_or_column_sends_nothing(ranks: int, row: bool) -> None:
    """Shallow water's walls: a small temporary kept on rank 0 made each of them a round trip
    (152 messages a rank in 10 steps at 2 ranks, 62 after)."""
    for rank in range(ranks):
        planner = Planner(rank, ranks, PlanConfig(min_bytes=4096, halo_rows=2), 1 << 14)
        ops = planner.plan(reflected(64, row))
        assert [op.kind for op in ops if op.kind != "compute"] == []
    layout = Planner(0, ranks, PlanConfig(min_bytes=4096, halo_rows=2), 1 << 14).new_layouts(reflected(64, row))[2]
    assert isinstance(layout, Layout)
    assert layout == whole_on(ranks - 1, ranks, 64, 8) if row else layout.distributed


@pytest.mark.parametrize("ranks", [2, 3])
def test_an_empty_temporary_beside_empty_rows_keeps_its_layout(ranks: int) -> None:
    """A Cholesky column loop's last step reads ``a[n:, :j]``, no rows of the split matrix, into
    an empty temporary: aligning it divided by its zero rows and every rank failed."""
    n = 40
    empty = View(2, F8, 0, (0, n), (n * 8, 8))
    batch = Batch(
        bases=[BaseDecl(1, F8, n * n), BaseDecl(2, F8, 0)],
        data={1: np.zeros(n * n)},
        instructions=[Instruction("multiply", (empty,), (grid_view(1, (n, n), (0, n), n), Const(2.0)))],
    )
    layouts = Planner(0, ranks, PlanConfig(min_bytes=1024, halo_rows=2), 1 << 14).new_layouts(batch)
    assert isinstance(layouts[1], Layout) and layouts[1].distributed
    assert 2 in layouts
