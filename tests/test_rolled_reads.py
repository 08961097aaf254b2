"""Rolls of one array read from one padded copy of it (``shoal/rolled_reads.py``): programs
written with ``np.roll`` against NumPy on the node and reference engines, with the rewrite
counted, and the rules that keep a roll out of it."""

from __future__ import annotations

import numpy
import pytest
from numpy_fixtures import AGAINST_NUMPY
from program_runs import assert_same_run, run_program

from shoal import runtime
from shoal.bytecode import BaseDecl, Batch, Const, Instruction, View
from shoal.engine.node import NodeConfig, NodeEngine
from shoal.rolled_reads import padded_rolls

pytestmark = pytest.mark.skipif(AGAINST_NUMPY, reason="runs the Shoal runtime")

LIFE = """
g = np.array(D[0] > 0.2).astype(np.int8)
for _ in range(3):
    n = sum(np.roll(np.roll(g, i, 0), j, 1) for i in (-1, 0, 1) for j in (-1, 0, 1) if (i, j) != (0, 0))
    g = ((n == 3) | ((g == 1) & (n == 2))).astype(np.int8)
read(g)
"""

PROGRAMS = {
    "life": LIFE,
    "five_point": """
a = np.array(D[0])
for _ in range(4):
    a = 0.25 * (np.roll(a, 1, 0) + np.roll(a, -1, 0) + np.roll(a, 1, 1) + np.roll(a, -1, 1))
read(a)
""",
    "both_axes_at_once": """
a = np.array(D[1])
b = np.roll(a, (1, -2), axis=(0, 1)) - np.roll(a, (-1, 2), axis=(0, 1)) + np.roll(a, 0, 0)
read(b)
""",
    "one_axis_vector": """
v = np.array(D[3])
for _ in range(3):
    v = v + 0.5 * (np.roll(v, 1) - 2.0 * v + np.roll(v, -1))
read(v)
""",
    "kept_roll_written_later": """
a = np.array(D[0])
r = np.roll(a, 1, 0)
s = r + np.roll(a, -1, 0)
r[0] = 5.0
read(s)
read(r)
""",
    "source_written_between": """
a = np.array(D[0])
x = np.roll(a, 1, 1) * 1.0
a[2:4] = 7.0
y = np.roll(a, -1, 1) * 1.0
read(x + y)
read(a)
""",
    "roll_of_a_roll_written_later": """
a = np.array(D[0])
r = np.roll(a, 1, 0)
s = np.roll(r, 1, 1)
del r
s[0] = 1.0
t = s + np.roll(a, -1, 0)
del s
read(t)
""",
    "source_written_by_reader": """
a = np.array(D[0])
a += np.roll(a, 1, 0) * np.roll(a, -1, 1)
read(a)
""",
    "roll_of_roll_read_whole_too": """
a = np.array(D[2])
r = np.roll(a, 2, 0)
t = r * 2.0 + np.roll(r, 1, 1) + np.roll(a, -1, 1)
del r
read(t)
""",
    "large_shift_and_flat": """
a = np.array(D[1])
b = np.roll(a, a.shape[0] // 2, 0) + np.roll(a, 1, 0) + np.roll(a, 3)
read(b)
""",
    "three_dimensions": """
c = np.array(D[0]).reshape(1, *D[0].shape) * np.array([1.0, -1.0, 0.5]).reshape(3, 1, 1)
d = np.roll(c, 1, 2) + np.roll(c, -1, 1) + np.roll(c, 1, 0)
read(d)
""",
    "rolls_of_a_view": """
a = np.array(D[0])
b = np.roll(a[1:], 1, 0) + np.roll(a[1:], -1, 0)
read(b)
""",
    "cast_after_roll": """
a = np.array(D[0])
b = np.roll(a, 1, 0).astype(np.float32) + np.roll(a, -1, 0).astype(np.float32)
read(b)
""",
}


def _inputs(size: int) -> list:
    generator = numpy.random.default_rng(size)
    return [generator.uniform(-1, 1, (size, size)) for _ in range(3)] + [generator.uniform(-1, 1, size) for _ in range(2)]


class Counting(NodeEngine):
    """The node engine, counting the elements the copies it was given write."""

    def __init__(self) -> None:
        super().__init__(NodeConfig(threads=2, block_size=64, compile="off", direct_work="0"))
        self.copies = 0

    def execute(self, batch: Batch) -> None:
        self.copies += sum(instruction.outputs[0].size for instruction in batch.instructions if instruction.op == "copy")
        super().execute(batch)


def _run(source: str, inputs: list, engine, rolled: str, flush_threshold: int = 2048):
    import shoal.numpy as snp

    with runtime.configure(engine=engine, eager_threshold=0, flush_threshold=flush_threshold, settled_threshold=0) as current:
        current.rolled_reads = rolled == "on"
        return run_program(source, snp, inputs)


@pytest.mark.parametrize("size", [6, 13])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs_give_numpys_values(name, size):
    source, inputs = PROGRAMS[name], _inputs(size)
    expected = run_program(source, numpy, inputs)
    for engine in ("reference", Counting()):
        for threshold in (2048, 7):
            assert_same_run(_run(source, inputs, engine, "on", threshold), expected, f"{name} on {engine} (flush every {threshold})")


def test_game_of_life_copies_each_cell_once_a_generation():
    size = 32
    inputs = _inputs(size)
    counts = {}
    for setting in ("on", "off"):
        engine = Counting()
        assert_same_run(_run(LIFE, inputs, engine, setting), run_program(LIFE, numpy, inputs), f"life, rolled reads {setting}")
        counts[setting] = engine.copies
    # off: 8 neighbours a generation, each rolled twice; on: one padded grid a generation
    # (besides the casts of the first line and of each generation's result)
    casts = 4 * size * size
    assert counts["on"] - casts <= 3 * (size + 2) ** 2
    assert counts["off"] - casts >= 3 * 16 * size * size


def _view(base: int, shape: tuple[int, ...], origin: tuple[int, ...], extent: tuple[int, ...]) -> View:
    strides = tuple(8 * int(numpy.prod(shape[a + 1 :])) for a in range(len(shape)))
    return View(base, numpy.dtype(numpy.float64), sum(o * s for o, s in zip(origin, strides)), extent, strides)


def _roll_copies(target: int, source: int, n: int, shift: int) -> list[Instruction]:
    """The two copies ``np.roll`` records for a 1-D roll by ``shift`` of ``n`` elements."""
    return [
        Instruction("copy", (_view(target, (n,), (shift,), (n - shift,)),), (_view(source, (n,), (0,), (n - shift,)),)),
        Instruction("copy", (_view(target, (n,), (0,), (shift,)),), (_view(source, (n,), (n - shift,), (shift,)),)),
    ]


def _two_rolls(between: list[Instruction]) -> Batch:
    n = 16
    whole = _view
    f8 = numpy.dtype(numpy.float64)
    instructions = [
        *_roll_copies(2, 1, n, 1),
        *between,
        *_roll_copies(3, 1, n, n - 1),
        Instruction("add", (whole(4, (n,), (0,), (n,)),), (whole(2, (n,), (0,), (n,)), whole(3, (n,), (0,), (n,)))),
        Instruction("release", (), (), (("base", 2),)),
        Instruction("release", (), (), (("base", 3),)),
    ]
    return Batch(bases=[BaseDecl(b, f8, n) for b in (1, 2, 3, 4)], data={1: numpy.arange(n, dtype=f8)}, instructions=instructions)


def test_two_rolls_of_one_source_read_one_padded_base():
    batch = _two_rolls([])
    rewritten, moved = padded_rolls(batch, lambda: 99)
    assert rewritten is not batch
    add = next(i for i in rewritten.instructions if i.op == "add")
    assert {view.base for view in add.inputs} == {99}
    assert {decl.id for decl in rewritten.bases} == {1, 4, 99}
    assert moved[len(batch.instructions) - 3] == rewritten.instructions.index(add)


@pytest.mark.parametrize(
    "between",
    [
        [Instruction("fill", (_view(1, (16,), (3,), (2,)),), (7.0,))],  # the source written between the rolls
        [Instruction("copy", (_view(2, (16,), (0,), (1,)),), (_view(4, (16,), (0,), (1,)),))],  # a roll written again
    ],
)
def test_a_source_or_roll_written_between_keeps_the_copies(between):
    between = [Instruction(i.op, i.outputs, tuple(Const(v) if isinstance(v, float) else v for v in i.inputs), i.attrs) for i in between]
    batch = _two_rolls(between)
    rewritten, moved = padded_rolls(batch, lambda: 99)
    assert rewritten is batch and moved == {}


def test_a_roll_kept_after_the_batch_keeps_its_copies():
    batch = _two_rolls([])
    batch.instructions = [i for i in batch.instructions if i.attr("base") != 3]
    rewritten, _ = padded_rolls(batch, lambda: 99)
    assert rewritten is batch


def test_the_setting_turns_it_off():
    engine = Counting()
    inputs = _inputs(16)
    _run(PROGRAMS["five_point"], inputs, engine, "off")
    off = engine.copies
    engine = Counting()
    _run(PROGRAMS["five_point"], inputs, engine, "on")
    assert off == 4 * 4 * 16 * 16  # four rolls of the whole grid a sweep
    assert engine.copies == 4 * 18 * 18  # one grid padded by one on each side a sweep


def _random_program(seed: int) -> str:
    """A program of rolls in every arrangement: along one axis, several or none, of rolls and of
    views, kept, written afterwards, with the source written between them, read whole or not."""
    import random

    rng = random.Random(seed)
    ndim = rng.choice((1, 2, 2, 3))
    shape = tuple(rng.randint(1, 7) for _ in range(ndim))
    lines = [f"a = np.array(D[0].ravel()[:{int(numpy.prod(shape))}].reshape({shape}))", "b = a * 0.5"]
    names = ["a", "b"]

    def shift() -> str:
        axes = rng.sample(range(ndim), rng.randint(1, ndim)) if rng.random() < 0.8 else None
        if axes is None:
            return str(rng.randint(-9, 9))
        shifts = [rng.randint(-shape[a] - 1, shape[a] + 1) for a in axes]
        return f"{shifts[0]}, {axes[0]}" if len(axes) == 1 else f"{tuple(shifts)}, {tuple(axes)}"

    def roll() -> str:
        source = rng.choice(names)
        if rng.random() < 0.3:
            source = f"np.roll({source}, {shift()})"
        return f"np.roll({source}, {shift()})"

    for step in range(rng.randint(2, 6)):
        kind = rng.random()
        if kind < 0.45:
            terms = " + ".join(f"{rng.choice((1.0, -2.0, 0.25))} * {roll()}" for _ in range(rng.randint(1, 4)))
            target = rng.choice(names)
            lines.append(f"{target} = {terms}" if rng.random() < 0.7 else f"{target} += {terms}")
        elif kind < 0.6:
            name = f"k{step}"
            lines.append(f"{name} = {roll()}")
            names.append(name)
        elif kind < 0.75:
            lines.append(f"{rng.choice(names)}[{'...' if rng.random() < 0.5 else '0'}] = {rng.choice((3.0, -1.0))}")
        elif kind < 0.9:
            lines.append(f"read({roll()} * {roll()})")
        else:
            lines.append(f"read({rng.choice(names)})")
    lines.extend(f"read({name})" for name in names)
    return "\n".join(lines)


@pytest.mark.parametrize("first", range(0, 400, 40))
def test_random_roll_programs_give_numpys_values(first):
    for seed in range(first, first + 40):
        source = _random_program(seed)
        inputs = _inputs(9)
        expected = run_program(source, numpy, inputs)
        for engine, threshold in (("reference", 3), (Counting(), 2048), (Counting(), 5)):
            try:
                assert_same_run(_run(source, inputs, engine, "on", threshold), expected, f"{engine} flushing every {threshold}")
            except AssertionError as failure:
                raise AssertionError(f"program {seed}:\n{source}\n{failure}") from None


def test_a_roll_declared_by_an_earlier_batch_keeps_its_release():
    """A flush between ``np.roll``'s new array and its copies leaves the declaration in the
    batch before: the roll is read from the padded base all the same, and its release stays."""
    batch = _two_rolls([])
    batch.bases = [decl for decl in batch.bases if decl.id != 2]
    rewritten, _ = padded_rolls(batch, lambda: 99)
    add = next(i for i in rewritten.instructions if i.op == "add")
    assert {view.base for view in add.inputs} == {99}
    assert [i.attr("base") for i in rewritten.instructions if i.op == "release"] == [2, 99]
    assert not any(i.op == "copy" and i.outputs[0].base in (2, 3) for i in rewritten.instructions)
