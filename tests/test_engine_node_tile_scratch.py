"""Tile-sized arrays for temporaries on the NumPy tile path: temporaries whose lives do not
overlap share one, and no array is read by one temporary while another writes it."""

from __future__ import annotations

import numpy
import pytest
from test_engine_node_group_cuts import CapturingEngine, black_scholes

import shoal.numpy as snp
from shoal import runtime
from shoal.bytecode import BaseDecl, Batch
from shoal.engine.node.config import NodeConfig
from shoal.engine.node.engine import NodeEngine
from shoal.engine.node.lower.program import TEMP, KernelProgram, lower
from shoal.engine.node.plan.plan import Group, plan_batch
from shoal.engine.node.run.tiles import scratch_arrays

TILE = (4, 8)


def rank_one_updates(np, size: int, updates: int) -> float:
    """``a += rate * np.outer(u, v)`` for rows of two NumPy arrays, then the sum of ``a``."""
    rng = numpy.random.default_rng(3)
    a = np.array(rng.random((size, size)))
    us, vs = rng.random((updates, size)) - 0.5, rng.random((updates, size)) - 0.5
    for u, v in zip(us, vs):
        a += 1e-3 * np.outer(u, v)
    return float(np.sum(a))


def programs(batches: list[Batch]) -> list[KernelProgram]:
    """The kernel programs the node engine lowers ``batches`` to."""
    known: dict[int, BaseDecl] = {}
    lowered = []
    for batch in batches:
        known.update((decl.id, decl) for decl in batch.bases)
        plan = plan_batch(batch, known)
        lowered += [lower(step, plan.temporaries, 1 << 16) for step in plan.steps if isinstance(step, Group)]
        for instruction in batch.instructions:
            if instruction.op == "release":
                known.pop(instruction.attr("base"), None)
    return lowered


def recorded(program_of) -> list[KernelProgram]:
    engine = CapturingEngine()
    with runtime.configure(engine=engine, eager_threshold=0, flush_threshold=100_000, settled_threshold=0):
        program_of(snp)
    return programs(engine.batches)


def lives(program: KernelProgram) -> dict[int, tuple[int, int]]:
    """Each temporary's first write and last read (a reduction at position p reads at p)."""
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for position, step in enumerate(program.steps):
        for slot in (*step.inputs, *step.outputs):
            first.setdefault(slot, position)
            last[slot] = position
    for reduction in program.reductions:
        last[reduction.source] = max(last.get(reduction.source, reduction.position), reduction.position)
    return {slot: (first[slot], last[slot]) for slot in first if program.slots[slot].kind == TEMP}


@pytest.mark.parametrize("program_of", [lambda np: rank_one_updates(np, 64, 20), lambda np: black_scholes(np, 1000, 2)], ids=["rank_one_updates", "black_scholes"])
def test_temporaries_share_arrays_only_when_their_lives_do_not_overlap(program_of) -> None:
    checked = 0
    for program in recorded(program_of):
        arrays = scratch_arrays(program, TILE)
        spans = lives(program)
        assert set(arrays) == set(spans)
        for slot, array in arrays.items():
            assert array.shape == TILE and array.dtype == program.slots[slot].dtype
        for one in spans:
            for other in spans:
                if one < other and arrays[one] is arrays[other]:
                    (a, b), (c, d) = spans[one], spans[other]
                    assert b < c or d < a, (one, other, spans[one], spans[other])
                    checked += 1
    assert checked > 0


def test_a_long_fused_loop_body_needs_a_few_tile_arrays() -> None:
    """Twenty rank-one updates fuse into one program of 40 temporaries; two arrays hold them
    (each had its own before: 10 MiB of tiles at 32768 elements, more than the L2 cache)."""
    (program,) = [p for p in recorded(lambda np: rank_one_updates(np, 64, 20)) if len(p.steps) >= 60]
    arrays = scratch_arrays(program, TILE)
    assert len(arrays) == 40
    assert len({id(array) for array in arrays.values()}) <= 2


@pytest.mark.parametrize("program_of", [lambda np: rank_one_updates(np, 300, 20), lambda np: black_scholes(np, 5000, 3)], ids=["rank_one_updates", "black_scholes"])
def test_tile_path_with_shared_arrays_matches_numpy(program_of) -> None:
    engine = NodeEngine(NodeConfig(compile="off", block_size=4096, direct_work=0, threads=2))
    with runtime.configure(engine=engine, eager_threshold=0, flush_threshold=100_000, settled_threshold=0):
        got = program_of(snp)
    assert engine.last_stats is not None
    assert got == pytest.approx(program_of(numpy), rel=1e-12)



@pytest.mark.parametrize("tile_elements", [1, 7, 1000, 1 << 18])
def test_every_tile_size_gives_numpys_values(tile_elements: int) -> None:
    """Tiles of one element, of a few (rows split mid-way through the block's rows), of whole
    rows and of whole view-blocks: the same values as NumPy's."""
    config = NodeConfig(compile="off", block_size=4096, direct_work=0, threads=2, tile_elements=tile_elements)
    engine = NodeEngine(config)
    with runtime.configure(engine=engine, eager_threshold=0, flush_threshold=100_000, settled_threshold=0):
        got = rank_one_updates(snp, 97, 5)
    assert got == pytest.approx(rank_one_updates(numpy, 97, 5), rel=1e-12)


def test_the_tile_size_setting_reaches_the_tile_path(monkeypatch: pytest.MonkeyPatch) -> None:
    import shoal.engine.node.run.group_runner as group_runner

    seen: list[int] = []
    run_tiles = group_runner.run_tiles

    def recording(*args: object) -> object:
        seen.append(args[-1])  # type: ignore[arg-type]
        return run_tiles(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(group_runner, "run_tiles", recording)
    engine = NodeEngine(NodeConfig.from_settings({"SHOAL_TILE_ELEMENTS": "333"}, compile="off", direct_work=0, threads=1))
    with runtime.configure(engine=engine, eager_threshold=0, flush_threshold=100_000, settled_threshold=0):
        rank_one_updates(snp, 40, 3)
    assert seen and set(seen) == {333}
