"""Random draws remembered as recipes (``shoal/drawn.py``): any range drawn again is bit for bit
NumPy's, a draw that cannot be made again range by range gets no recipe, a recipe from another
process is checked field by field, and a recipe never outlives a write to its data."""

from __future__ import annotations

import importlib
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy_fixtures import needs_runtime

from shoal import drawn

DRAWS: dict[str, Callable] = {
    "random": lambda rng, size: rng.random(size),
    "uniform": lambda rng, size: rng.uniform(-3.5, 12.25, size),
}


def remembered(generator: np.random.Generator, kind: str, size: int) -> tuple[np.ndarray, drawn.Recipe | None]:
    before = drawn.state_before(generator, kind)
    assert before is not None
    result = DRAWS[kind](generator, size)
    low, high = (-3.5, 12.25) if kind == "uniform" else (0.0, 1.0)
    return result, drawn.recipe(generator, before, kind, low, high, result)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    generator=st.sampled_from(["PCG64", "PCG64DXSM"]),
    kind=st.sampled_from(sorted(DRAWS)),
    halves=st.integers(0, 3),
    size=st.integers(1, 3000),
    cut=st.tuples(st.floats(0, 1), st.floats(0, 1)),
)
def test_any_range_drawn_again_is_numpys(seed: int, generator: str, kind: str, halves: int, size: int, cut: tuple[float, float]) -> None:
    rng = np.random.Generator(getattr(np.random, generator)(seed))
    rng.integers(0, 7, size=halves, dtype=np.uint32)  # leaves half a 64-bit output buffered when odd
    result, made = remembered(rng, kind, size)
    assert made is not None
    begin = int(cut[0] * size)
    count = int(cut[1] * (size - begin))
    np.testing.assert_array_equal(made.draw(begin, count), result[begin : begin + count], strict=True)
    assert drawn.Recipe.decode(made.encode()) == made


@pytest.mark.parametrize(
    "make, draw",
    [
        (lambda: np.random.Generator(np.random.MT19937(1)), lambda rng: rng.random(100)),
        (lambda: np.random.Generator(np.random.Philox(1)), lambda rng: rng.random(100)),
        (lambda: np.random.Generator(np.random.SFC64(1)), lambda rng: rng.uniform(0, 1, 100)),
        (lambda: np.random.RandomState(1), lambda rng: rng.random_sample(100)),
    ],
)
def test_generators_that_cannot_jump_get_no_recipe(make, draw) -> None:  # type: ignore[no-untyped-def]
    rng = make()
    assert drawn.state_before(rng, "random") is None


@pytest.mark.parametrize(
    "kind, draw, low, high",
    [
        ("random", lambda rng: rng.random(100, dtype=np.float32), 0.0, 1.0),
        ("uniform", lambda rng: rng.uniform(np.zeros(100), 1.0), np.zeros(100), 1.0),
        ("uniform", lambda rng: rng.uniform(0.0, np.ones(100)), 0.0, np.ones(100)),
        ("random", lambda rng: (rng.random(), rng.random(100))[1], 0.0, 1.0),  # the state check: 101 outputs for 100
    ],
)
def test_draws_not_made_range_by_range_get_no_recipe(kind: str, draw, low, high) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(5)
    before = drawn.state_before(rng, kind)
    assert before is not None
    assert drawn.recipe(rng, before, kind, low, high, draw(rng)) is None


def _recipe_bytes(**change: int | float) -> np.ndarray:
    made = drawn.Recipe("uniform", "PCG64", 3, 5, 0, 0, -1.0, 2.0)
    buffer = made.encode().copy()
    words = buffer[:64].view(np.uint64)
    bounds = buffer[64:].view(np.float64)
    positions = {"kind": 0, "generator": 1, "has_uint32": 6, "uinteger": 7}
    for field, value in change.items():
        if field in positions:
            words[positions[field]] = value
        else:
            bounds[0 if field == "low" else 1] = value
    return buffer


@pytest.mark.parametrize(
    "buffer, message",
    [
        (np.zeros(drawn.WIRE_BYTES - 8, dtype=np.uint8), "80 bytes, not 72"),
        (_recipe_bytes(kind=2), "unknown"),
        (_recipe_bytes(generator=2), "unknown"),
        (_recipe_bytes(has_uint32=2), "out of range"),
        (_recipe_bytes(uinteger=2**32), "out of range"),
        (_recipe_bytes(high=float("inf")), "not finite"),
        (_recipe_bytes(low=float("nan")), "not finite"),
        (_recipe_bytes(low=-1.7e308, high=1.7e308), "not finite"),
    ],
)
def test_a_recipe_from_elsewhere_is_checked(buffer: np.ndarray, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        drawn.Recipe.decode(buffer)


WRITES: dict[str, Callable] = {
    "element": lambda a: a.__setitem__(3, 7.0),
    "slice": lambda a: a.__setitem__(slice(10, 20), 0.5),
    "in place": lambda a: a.__iadd__(1.0),
    "read": lambda a: float(a[5]),
}


@pytest.mark.parametrize("verify", ["1", "0"], ids=["wire copies", "data handed over"])
@pytest.mark.parametrize("settled", [None, 0], ids=["settled views", "recorded views"])
@pytest.mark.parametrize("steps", [["read"], ["element"], ["read", "slice"], ["in place"], ["read", "element", "read"]])
def test_a_recipe_never_outlives_a_write_to_its_data(settled: int | None, steps: list[str], verify: str, monkeypatch: pytest.MonkeyPatch) -> None:
    needs_runtime()
    monkeypatch.setenv("SHOAL_VERIFY", verify)  # without the wire's copy the engine writes the very data
    runtime = importlib.import_module("shoal.runtime")
    snp = importlib.import_module("shoal.numpy")
    with runtime.configure(engine="node", eager_threshold=0, settled_threshold=settled):
        current = runtime.current()
        array = snp.random.default_rng(3).random(1000)
        base = array._view.base
        data = current._deferred[base][2]
        made = drawn.recipe_of(data)
        assert made is not None
        for step in steps:
            WRITES[step](array)
            held_back = current._deferred.get(base)
            data = held_back[2] if held_back else current.pending.data.get(base, data)
            found = drawn.recipe_of(data)
            assert found is None or np.array_equal(made.draw(0, 1000), data)
        assert np.array_equal(np.asarray(array), np.random.default_rng(3).random(1000)) == (steps == ["read"])


def test_only_large_draws_read_the_generator_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading the state costs more than a scalar draw: small draws skip it."""
    needs_runtime()
    runtime = importlib.import_module("shoal.runtime")
    snp = importlib.import_module("shoal.numpy")
    calls: list[str] = []
    original = drawn.state_before
    monkeypatch.setattr(drawn, "state_before", lambda generator, kind: calls.append(kind) or original(generator, kind))
    with runtime.configure(engine="node", eager_threshold=100):
        rng = snp.random.default_rng(3)
        rng.random(), rng.random(5), rng.uniform(0.0, 1.0, 3), rng.uniform(size=(2, 2)), rng.random(size=None)
        assert calls == []
        rng.random((10, 20)), rng.uniform(0.0, 1.0, 100), rng.uniform(high=2.0, size=[5, 40])
        assert calls == ["random", "uniform", "uniform"]
