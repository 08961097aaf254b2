"""Draws drawn ahead (``shoal/cluster/drawn_ahead.py``): what a rank draws while idle is the part
the batch's layout gives it, bit for bit NumPy's; a command that is not a draw's is refused; the
program announces exactly the draws a batch can later send as recipes (no MPI needed)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import shoal.numpy as snp
from shoal import drawn, runtime
from shoal.bytecode import BaseDecl, Batch, Const, Instruction, View
from shoal.cluster.drawn_ahead import KEPT, DrawsAhead, announce, decode, expected_range
from shoal.cluster.plan import PlanConfig, Planner
from shoal.engine import Component, create

F8 = np.dtype(np.float64)


def recipe_of_draw(seed: int, shape: tuple[int, ...], kind: str = "random") -> tuple[drawn.Recipe, np.ndarray]:
    generator = np.random.default_rng(seed)
    before = generator.bit_generator.state
    result = generator.random(shape) if kind == "random" else generator.uniform(-1.0, 2.0, shape)
    made = drawn.recipe(generator, before, kind, -1.0 if kind == "uniform" else 0.0, 2.0 if kind == "uniform" else 1.0, result)
    assert made is not None
    return made, result.reshape(-1)


def strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(np.prod(shape[axis + 1 :])) * 8 for axis in range(len(shape)))


def planned_range(shape: tuple[int, ...], rank: int, ranks: int) -> tuple[int, int]:
    """The local range the planner gives ``rank`` of a drawn base of ``shape`` whose first view in
    its batch is the whole base."""
    size = int(np.prod(shape))
    view = View(1, F8, 0, shape, strides(shape))
    out = View(2, F8, 0, shape, strides(shape))
    batch = Batch(
        bases=[BaseDecl(1, F8, size), BaseDecl(2, F8, size)],
        instructions=[Instruction("multiply", (out,), (view, Const(2.0)))],
        data={1: np.zeros(size)},
    )
    layout = Planner(rank, ranks, PlanConfig(1 << 10, halo_rows=8), 1 << 14).new_layouts(batch)[1]
    return layout.local_range(rank)


@pytest.mark.parametrize("ranks", [2, 3, 4])
@pytest.mark.parametrize("shape", [(300, 200), (1201,), (40, 30), (7, 5, 300)])
def test_the_expected_range_is_the_planners(ranks: int, shape: tuple[int, ...]) -> None:
    for rank in range(1, ranks):
        found = expected_range(shape, rank, ranks, 1 << 10, 8)
        assert found == planned_range(shape, rank, ranks), (rank, shape)


def test_no_range_where_the_base_is_not_split_in_ranges() -> None:
    assert expected_range((100,), 1, 2, 1 << 10, 8) is None  # 800 bytes: kept on rank 0
    assert expected_range((4000,), 1, 1, 1 << 10, 8) is None  # one rank
    assert expected_range((9, 400, 300), 1, 2, 1 << 10, 8) is None  # components first: blocks, not ranges


@pytest.mark.parametrize("kind", ["random", "uniform"])
def test_a_part_drawn_ahead_is_numpys(kind: str) -> None:
    made, whole = recipe_of_draw(5, (300, 200), kind)
    ahead = DrawsAhead(1, 3, 1 << 10, 8)
    ahead.draw(*announce(made, (300, 200)))
    begin, end = expected_range((300, 200), 1, 3, 1 << 10, 8)  # type: ignore[misc]
    part = ahead.take(made.encode().tobytes(), begin, end - begin)
    assert part is not None and ahead.taken == 1
    np.testing.assert_array_equal(part, whole[begin:end], strict=True)
    assert ahead.take(made.encode().tobytes(), begin, end - begin) is None  # taken once


def test_a_part_inside_what_was_drawn_is_cut_out_and_one_outside_is_not_given() -> None:
    made, whole = recipe_of_draw(6, (300, 200))
    key = made.encode().tobytes()
    ahead = DrawsAhead(1, 2, 1 << 10, 8)
    ahead.draw(*announce(made, (300, 200)))
    begin, end = expected_range((300, 200), 1, 2, 1 << 10, 8)  # type: ignore[misc]
    inside = ahead.take(key, begin + 200, 1000)
    assert inside is not None and inside.base is None  # its own memory, not the whole part's
    np.testing.assert_array_equal(inside, whole[begin + 200 : begin + 1200], strict=True)
    ahead.draw(*announce(made, (300, 200)))
    assert ahead.take(key, begin - 1, 10) is None
    ahead.draw(*announce(made, (300, 200)))
    assert ahead.take(key, end - 5, 10) is None
    other, _ = recipe_of_draw(7, (300, 200))
    ahead.draw(*announce(made, (300, 200)))
    assert ahead.take(other.encode().tobytes(), begin, 10) is None


def test_only_the_latest_draws_are_kept() -> None:
    ahead = DrawsAhead(1, 2, 1 << 10, 8)
    recipes = [recipe_of_draw(seed, (200, 100))[0] for seed in range(KEPT + 2)]
    for made in recipes:
        ahead.draw(*announce(made, (200, 100)))
    begin, end = expected_range((200, 100), 1, 2, 1 << 10, 8)  # type: ignore[misc]
    assert ahead.take(recipes[0].encode().tobytes(), begin, end - begin) is None
    assert ahead.take(recipes[1].encode().tobytes(), begin, end - begin) is None
    assert ahead.take(recipes[-1].encode().tobytes(), begin, end - begin) is not None


@pytest.mark.parametrize(
    ("payload", "ints", "message"),
    [
        (b"\0" * 79, [10, 10], "80 bytes"),
        (b"\xff" * 80, [10, 10], "unknown"),
        (None, [], "0 axes"),
        (None, [1] * 65, "65 axes"),
        (None, [10, -1], "shape"),
        (None, [1 << 30, 1 << 30], "past"),
    ],
)
def test_a_malformed_announcement_is_refused(payload: bytes | None, ints: list[int], message: str) -> None:
    made, _ = recipe_of_draw(8, (10, 10))
    with pytest.raises(ValueError, match=message):
        decode(made.encode().tobytes() if payload is None else payload, ints)


class Announced(Component):
    """The node engine, noting the draws announced to it."""

    name = "announced"

    def __init__(self) -> None:
        self.inner = create("node")
        self.calls: list[tuple[drawn.Recipe, tuple[int, ...]]] = []

    @classmethod
    def configure(cls, environ: object = None) -> None:
        return None

    def execute(self, batch: Batch) -> None:
        self.inner.execute(batch)

    def fetch(self, view: View) -> np.ndarray:
        return self.inner.fetch(view)

    def expect_draw(self, made: drawn.Recipe, shape: tuple[int, ...]) -> None:
        self.calls.append((made, shape))

    def shutdown(self) -> None:
        self.inner.shutdown()


@pytest.fixture
def announced() -> Iterator[Announced]:
    component = Announced()
    with runtime.configure(engine=component, eager_threshold=1000):
        yield component


def test_a_large_draw_is_announced_with_the_recipe_a_batch_will_send(announced: Announced) -> None:
    generator = snp.random.default_rng(3)
    grid = generator.random((60, 50))
    spread = generator.uniform(2.0, 5.0, size=4000)
    expected = np.random.default_rng(3)
    made = []
    for kind, low, high, draw in (("random", 0.0, 1.0, lambda: expected.random((60, 50))), ("uniform", 2.0, 5.0, lambda: expected.uniform(2.0, 5.0, size=4000))):
        before = expected.bit_generator.state
        result = draw()
        made.append((drawn.recipe(expected, before, kind, low, high, result), result.shape))
    assert announced.calls == made
    reference = np.random.default_rng(3)
    np.testing.assert_array_equal(np.asarray(grid), reference.random((60, 50)), strict=True)
    np.testing.assert_array_equal(np.asarray(spread), reference.uniform(2.0, 5.0, size=4000), strict=True)


def test_draws_a_batch_cannot_send_as_recipes_are_not_announced(announced: Announced) -> None:
    generator = snp.random.default_rng(4)
    generator.random(500)  # small
    generator.random(4000, dtype=np.float32)  # 32-bit outputs
    generator.uniform(np.zeros(4000), 1.0)  # array bounds
    snp.random.Generator(snp.random.MT19937(1)).random(4000)  # cannot jump ahead
    with pytest.raises(ValueError):
        generator.random((-1, 4000))
    assert announced.calls == []


def test_a_part_larger_than_half_the_free_memory_is_not_drawn_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    made, _ = recipe_of_draw(9, (300, 200))
    begin, end = expected_range((300, 200), 1, 2, 1 << 10, 8)  # type: ignore[misc]

    class Scarce:
        available = (end - begin) * 8  # twice the part would not fit

    monkeypatch.setattr("shoal.cluster.drawn_ahead.psutil.virtual_memory", lambda: Scarce())
    ahead = DrawsAhead(1, 2, 1 << 10, 8)
    ahead.draw(*announce(made, (300, 200)))
    assert ahead.take(made.encode().tobytes(), begin, end - begin) is None
