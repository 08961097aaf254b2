"""Halo rows (:mod:`shoal.cluster.halo`): layouts with halos, the plans that keep them current,
and programs under ``mpiexec`` that give NumPy's results bit for bit with halos of 1-3 rows."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from cluster.harness import (
    PROGRAMS,
    RUN_TIMEOUT,
    assert_same_arrays,
    environment,
    lines,
    load_arrays,
    numpy_arrays,
    run,
    run_numpy,
)
from cluster.test_cluster_plan_cache import COLUMNS, ROWS, TAGS, Ids, creation, sweep
from shoal.cluster.layout import block
from shoal.cluster.plan import PlanConfig, Planner

PROGRAM = PROGRAMS / "halo_stencils.py"
REORDERED = frozenset({"jacobi_sum"})
SWEEPING = ("jacobi", "wide", "pingpong", "line")  # the program's cases that sweep a grid in place


def test_block_layouts_keep_halo_rows_within_the_base() -> None:
    layout = block(3, 37 * 53, 8, row=53, halo_rows=2)
    assert layout.halo == 106
    assert [layout.local_range(rank) for rank in range(3)] == [(0, 15 * 53), (11 * 53, 27 * 53), (23 * 53, 37 * 53)]
    assert [layout.local_count(rank) for rank in range(3)] == [15 * 53, 16 * 53, 14 * 53]
    assert block(3, 37 * 53, 8, row=53).halo == 0  # no halo asked for
    assert block(4, 3, 8, row=1, halo_rows=1).local_range(3) == (3, 3)  # a rank without elements holds none


def test_a_base_from_python_is_split_by_the_rows_of_a_square() -> None:
    square = block(3, 64 * 64, 8, halo_rows=2)  # no view tells its rows
    assert all(start % 64 == 0 for start in square.starts) and square.halo == 128
    other = block(3, 1001, 8, halo_rows=2)  # not a square: elements, halo of 2 * isqrt(1001)
    assert other.starts == (0, 334, 668, 1001) and other.halo == 62
    assert block(3, 64 * 64, 8).starts == (0, 1366, 2731, 4096)  # without halos: elements as before


@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("halo", [1, 2, 3])
def test_sweeps_exchange_once_per_halo_depth(ranks: int, halo: int) -> None:
    """A five-point sweep reads one row each way: with ``halo`` rows two ranks exchange once
    every ``halo`` sweeps, and each instruction is one computation per rank. At three ranks the
    temporaries' rows are split one row off the grid's, which costs halo rows: exchanges are
    more frequent, and with one halo row some instructions run piece by piece. Every send has its
    receive on the peer."""
    ids = Ids()
    grid = ids()
    stream = [creation(grid, 1)] + [sweep(grid, ids) for _ in range(12)]
    sides = [Planner(rank, ranks, PlanConfig(min_bytes=256, cache_size=0, halo_rows=halo), TAGS) for rank in range(ranks)]
    exchanges = 0
    for batch in stream:
        plans = [side.plan(batch) for side in sides]
        sends = sorted((rank, op.peer, op.tag, op.view.size) for rank, ops in enumerate(plans) for op in ops if op.kind == "send")
        receives = sorted((op.peer, rank, op.tag, int(np.prod(op.shape))) for rank, ops in enumerate(plans) for op in ops if op.kind == "receive")
        assert sends == receives
        exchanges += bool(sends)
        for ops in plans:  # one computation per instruction and rank
            computes = [op for op in ops if op.kind == "compute" and not op.needs and op.instructions and op.instructions[0].op in ("add", "multiply", "copy")]
            if batch is stream[0] or ranks == 2:
                assert len(computes) == (0 if batch is stream[0] else 6)
    bound = {(2, 1): 11, (2, 2): 6, (2, 3): 4, (3, 1): 12, (3, 2): 12, (3, 3): 6}  # the first sweep's halo came with the data
    assert 0 < exchanges <= bound[ranks, halo]
    assert sides[0].layouts[grid].halo == halo * COLUMNS and sides[0].layouts[grid].size == ROWS * COLUMNS


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    return numpy_arrays(PROGRAM, tmp_path_factory.mktemp("numpy"))


@pytest.mark.full
@pytest.mark.parametrize(
    ("ranks", "halo", "mode", "sweeps"),
    [(2, 1, "on", "auto"), (2, 3, "on", "redundant"), (3, 2, "on", "auto"), (3, 2, "off", "redundant"), (3, 1, "off", "auto"), (3, 3, "on", "redundant")],
)
def test_stencils_with_halos_give_numpys_results(ranks: int, halo: int, mode: str, sweeps: str, expected: dict[str, np.ndarray], tmp_path: Path) -> None:
    path = tmp_path / "got.npz"
    env = environment(SHOAL_CLUSTER_HALO=str(halo), SHOAL_LATENCY_HIDING=mode, SHOAL_CLUSTER_HALO_SWEEPS=sweeps, SHOAL_STATS="1")
    result = run(ranks, PROGRAM, str(path), env=env)
    assert result.returncode == 0, result.stderr
    assert lines(result.stdout, "cases:") == [str(len(expected))]
    assert_same_arrays(load_arrays(path), expected, REORDERED)


@pytest.mark.full
@pytest.mark.timeout(4 * RUN_TIMEOUT)  # its run may take three
def test_ranks_fuse_their_shrinking_sweeps_into_passes(expected: dict[str, np.ndarray], tmp_path: Path) -> None:
    """With redundant halo rows a rank's sweeps between two exchanges each write a row fewer on
    every side a neighbour owns; compiled, its node engine runs several of them per pass (each
    row stored from the last sweep that computes it), and every result is still NumPy's. Three
    ranks meet every chain there is (shrinking at the bottom, at both ends, at the top). Each rank
    compiles its kernels first, which is most of the test's time: only the cases that sweep run."""
    ranks = 3
    path = tmp_path / "got.npz"
    env = environment(SHOAL_CLUSTER_HALO="3", SHOAL_CLUSTER_HALO_SWEEPS="redundant", SHOAL_COMPILE="sync", SHOAL_DIRECT_WORK="0", SHOAL_STATS="1")
    result = run(ranks, PROGRAM, str(path), ",".join(SWEEPING), env=env, timeout=3 * RUN_TIMEOUT)  # compiling, ranks share the cores
    assert result.returncode == 0, result.stderr
    assert_same_arrays(load_arrays(path), {name: array for name, array in expected.items() if name.split("_")[0] in SWEEPING}, REORDERED)
    passes = [int(field.split("=")[1]) for line in lines(result.stderr, "shoal-stats:") for field in line.split() if field.startswith("sweep_passes=")]
    assert len(passes) == ranks and all(count > 0 for count in passes), passes


def computed_shapes(ops: list) -> list[tuple]:
    return [(instruction.op, instruction.outputs[0].shape) for op in ops if op.kind == "compute" for instruction in op.instructions if instruction.op != "release" and not op.needs]


@pytest.mark.parametrize("ranks", [2, 3, 4])
def test_own_rows_sweeps_are_alike_and_exchange_before_computing(ranks: int) -> None:
    """Computing own rows only, every sweep of a rank computes the same shapes (so its node
    engine fuses and replays them) and each temporary is declared by the computation that first
    writes it (so it lives and dies in one node-engine batch). Each sweep after the first gets
    both sides of its halo in one exchange before its first computation: the temporaries' rows
    are split where the grid's interior rows are (``row_alignment``; split evenly, at three ranks
    and more they fell a row off the grid's, and the last copy needed a row of one)."""
    ids = Ids()
    grid = ids()
    stream = [creation(grid, 1)] + [sweep(grid, ids) for _ in range(6)]
    sides = [Planner(rank, ranks, PlanConfig(min_bytes=256, cache_size=0, halo_rows=2, redundant_rows=False), TAGS) for rank in range(ranks)]
    shapes: list[list[tuple] | None] = [None] * ranks
    for number, batch in enumerate(stream):
        plans = [side.plan(batch) for side in sides]
        sends = sorted((rank, op.peer, op.tag, op.view.size) for rank, ops in enumerate(plans) for op in ops if op.kind == "send")
        receives = sorted((op.peer, rank, op.tag, int(np.prod(op.shape))) for rank, ops in enumerate(plans) for op in ops if op.kind == "receive")
        assert sends == receives
        if number < 2:
            continue
        assert len(sends) == 2 * (ranks - 1)  # one message each way between neighbours
        for rank, ops in enumerate(plans):
            kinds = [op.kind for op in ops]
            first_compute = next(index for index, op in enumerate(ops) if op.kind == "compute" and not op.needs and op.instructions)
            assert all(index < first_compute for index, kind in enumerate(kinds) if kind in ("send", "receive"))
            assert shapes[rank] is None or computed_shapes(ops) == shapes[rank]
            shapes[rank] = computed_shapes(ops)
            for decl in (decl for op in ops for decl in op.declares):
                holder = next(op for op in ops if decl in op.declares)
                assert holder.instructions and any(view.base == decl.id for instruction in holder.instructions for view in instruction.outputs)


@pytest.mark.parametrize("ranks", [2, 3])
def test_redundant_rows_give_every_instruction_of_an_expression_one_shape(ranks: int) -> None:
    """With redundant halo rows each temporary is computed only on the rows its readers can use,
    after the exchange its first reader needs: ``c + n`` would otherwise get a row more than
    ``(c + n) + s`` on a rank whose halo lies on one side, or be computed before that exchange,
    and that rank's node engine could not fuse the expression."""
    ids = Ids()
    grid = ids()
    stream = [creation(grid, 1)] + [sweep(grid, ids) for _ in range(6)]
    sides = [Planner(rank, ranks, PlanConfig(min_bytes=256, cache_size=0, halo_rows=3, redundant_rows=True), TAGS) for rank in range(ranks)]
    for side in sides:
        side.plan(stream[0])
    for batch in stream[1:]:
        for side in sides:
            shapes = {shape for op, shape in computed_shapes(side.plan(batch)) if op in ("add", "multiply")}
            assert len(shapes) == 1, (side.rank, shapes)
    for side in sides:  # each rank still computes its own rows every sweep
        assert all(low <= owned_low and owned_high <= high for (low, high), (owned_low, owned_high) in zip(side.valid[grid], _own_bytes(side, grid)))


def _own_bytes(planner: Planner, base: int) -> list[tuple[int, int]]:
    layout = planner.layouts[base]
    return [(layout.starts[rank] * layout.itemsize, layout.starts[rank + 1] * layout.itemsize) for rank in range(planner.ranks)]


@pytest.mark.full
@pytest.mark.parametrize(("ranks", "halo", "sweeps"), [(2, 1, "redundant"), (3, 2, "redundant"), (3, 2, "own"), (4, 3, "redundant")])
def test_random_stencil_programs_give_numpys_bits(ranks: int, halo: int, sweeps: str) -> None:
    """Twelve random programs (shifted reads of temporaries read several times, in-place updates
    of two grids): every final array is NumPy's, bit for bit."""
    program = PROGRAMS / "halo_fuzz.py"
    expected = run_numpy(program, "7", "12")
    assert expected.returncode == 0, expected.stderr
    got = run(ranks, program, "7", "12", env=environment(SHOAL_CLUSTER_HALO=str(halo), SHOAL_CLUSTER_HALO_SWEEPS=sweeps))
    assert got.returncode == 0, got.stderr
    assert got.stdout == expected.stdout and len(expected.stdout.splitlines()) == 12


@pytest.mark.full
@pytest.mark.parametrize("ranks", [2, 3])
def test_the_halo_sweeps_follow_the_measured_link(ranks: int, tmp_path: Path) -> None:
    """``auto`` computes own rows only when the measured round trip is under the limit (shared
    memory: microseconds, unless the host is loaded enough to stall every probe), and then a rank
    exchanges before nearly every sweep (``own``: more messages than ``redundant``, which
    exchanges once per halo depth), except in a batch that repeats one sweep (the program's
    Jacobi loop), which it plans with redundant rows: fewer messages than ``own``. On a slow link
    ``auto`` and ``own`` compute each sweep's interior first. All give NumPy's results (the test
    above)."""
    messages, modes = {}, {}
    for mode in ("auto", "redundant", "own"):
        env = environment(SHOAL_CLUSTER_HALO="3", SHOAL_CLUSTER_HALO_SWEEPS=mode, SHOAL_STATS="1")
        result = run(ranks, PROGRAM, str(tmp_path / f"{mode}.npz"), env=env)
        assert result.returncode == 0, result.stderr
        sent = [line.split()[3] for line in result.stderr.splitlines() if line.strip().startswith("rank 1 ")]
        messages[mode] = int(sent[0].split("/")[0])
        modes[mode] = [found.group(0) for found in re.finditer(r"halo sweeps: (own rows( \(redundant in a loop of one sweep\)|, interior first)?|redundant)( \(a 256 KiB round trip took [0-9.]+ ms\))?", result.stderr)]
        assert len(modes[mode]) == ranks
    assert all(line == "halo sweeps: redundant" for line in modes["redundant"])  # forced: no probe
    probe = modes["auto"][0]
    assert len(set(modes["auto"])) == 1  # every rank took the same decision from the same figure
    took = float(probe.split("took ")[1].split(" ms")[0])
    assert probe.startswith("halo sweeps: own rows (redundant in a loop of one sweep)" if took < 4.0 else "halo sweeps: own rows, interior first")
    for line in modes["own"]:  # its own probe decides whether interiors go first
        own_took = float(line.split("took ")[1].split(" ms")[0])
        assert line.startswith("halo sweeps: own rows (a " if own_took < 4.0 else "halo sweeps: own rows, interior first")
    if took < 4.0:
        assert messages["own"] > messages["auto"] >= messages["redundant"]
