"""Random whole NumPy programs under the node engine against the reference engine and NumPy.

Each seed writes a program (``program_fuzzer``) and runs it three times: on NumPy itself, on
``shoal.numpy`` over the reference engine, and on ``shoal.numpy`` over the node engine with
every array lazy and the batch size, block size, thread count, schedule and direct-run limit
drawn from the seed, so that batches are cut at every position, plans are replayed across loop
iterations and ready operations run in program order and in reverse. Every value the program
reads must agree, and so must an exception (type and line). A failure prints the program.

The quick tier runs a few dozen programs; the full tier a fixed budget of several hundred.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from unittest import mock

import numpy
import pytest
from numpy_fixtures import AGAINST_NUMPY
from program_fuzzer import program_inputs, program_size, write_program
from program_runs import assert_same_run, run_on_shoal, run_program

from shoal.engine.node import NodeConfig, NodeEngine

QUICK_PROGRAMS = 40
FULL_PROGRAMS = 600
PROGRAMS_PER_TEST = 40

pytestmark = pytest.mark.skipif(AGAINST_NUMPY, reason="runs the Shoal runtime")


@dataclass(frozen=True)
class NodeSettings:
    """How one program's node engine and runtime are set up."""

    flush_threshold: int
    block: int
    threads: int
    schedule: str
    direct_work: str
    verify: str  # "0": batches reach the engine as recorded (one View object may be input and output)
    tile: int  # elements per NumPy call on the tile path (several tiles per view-block below the block size)

    @classmethod
    def draw(cls, seed: int) -> NodeSettings:
        rng = random.Random(~seed)
        return cls(
            flush_threshold=rng.choice((1, 2, 3, 5, 8, 13, 32, 2048)),
            block=rng.choice((1, 3, 7, 16, 64, 4096)),
            threads=rng.choice((1, 2, 2)),
            schedule=rng.choice(("program", "reverse")),
            direct_work=rng.choice(("0", "0", "64", str(1 << 23))),
            verify=rng.choice(("1", "0")),
            tile=rng.choice((1, 5, 64, 1 << 18)),
        )


def configured_node_engine(settings: NodeSettings) -> NodeEngine:
    """A node engine set up as ``settings`` say."""
    config = NodeConfig(threads=settings.threads, block_size=settings.block, compile="off", schedule=settings.schedule, direct_work=settings.direct_work, tile_elements=settings.tile)
    return NodeEngine(config)


def check_program(seed: int) -> None:
    """Run program ``seed`` on NumPy, the reference engine and a node engine; compare reads."""
    source = write_program(seed)
    inputs = program_inputs(seed, program_size(source))
    settings = NodeSettings.draw(seed)
    try:
        expected = run_program(source, numpy, inputs)
        reference = run_on_shoal(source, inputs, "reference", settings.flush_threshold)
        assert_same_run(reference, expected, "reference engine vs NumPy")
        with mock.patch.dict(os.environ, {"SHOAL_VERIFY": settings.verify}):
            node = run_on_shoal(source, inputs, configured_node_engine(settings), settings.flush_threshold)
        assert_same_run(node, expected, "node engine vs NumPy")
    except AssertionError as failure:
        raise AssertionError(f"program {seed} under {settings}:\n{source}\n{failure}") from None


def test_generated_programs_quick():
    for seed in range(QUICK_PROGRAMS):
        check_program(seed)


@pytest.mark.full
@pytest.mark.parametrize("first", range(QUICK_PROGRAMS, QUICK_PROGRAMS + FULL_PROGRAMS, PROGRAMS_PER_TEST))
def test_generated_programs_full(first):
    for seed in range(first, first + PROGRAMS_PER_TEST):
        check_program(seed)


def test_generator_writes_every_pattern():
    """The programs the suite runs contain every pattern the fuzzer is meant to cover."""
    sources = "\n".join(write_program(seed) for seed in range(QUICK_PROGRAMS))
    for pattern in ("for i in range", "] = ", "] += ", "] *= ", " > -2.0] = ", "[m", "[[", ".T", "float(np.", " @ ", "del t", "[::-1]", "] = np.tanh(", "i + 1:"):
        assert pattern in sources, pattern
    chained = [line for line in sources.splitlines() if line.count("] = ") >= 2]
    assert chained
