"""Groups of one batch lowered once per structure (``shoal/engine/node/schedule/lowering_memo.py``).

Each program records a loop into one batch (nothing is read inside the loop) on a node engine
that plans every batch in small view-blocks, and is compared with NumPy: values (signs of zeros
included), and the warnings each iteration makes. A group bound from an earlier one with the
wrong constants, instructions or geometry gives other values or other warnings.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from fp_engines import blocked_engine, warnings_shown
from numpy_fixtures import needs_runtime

from shoal.engine.node.schedule import lowering_memo


@pytest.fixture
def bound(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one for each program bound from an earlier group's."""
    calls: list[int] = []
    original = lowering_memo._bound
    monkeypatch.setattr(lowering_memo, "_bound", lambda *args: calls.append(1) or original(*args))
    return calls


def ping_pong(xp: ModuleType) -> list[Any]:
    """A 1-D Jacobi from ``a`` into ``b`` and back, a weight that changes every sweep."""
    a, b = xp.linspace(0.0, 1.0, 5000), xp.zeros(5000)
    for k in range(6):
        weight = 1.0 / (k + 3)
        b[1:-1] = (a[:-2] + a[1:-1] + a[2:]) * weight
        a[1:-1] = (b[:-2] + b[1:-1] + b[2:]) * weight
    return [a, b]


def signed_zeros(xp: ModuleType) -> list[Any]:
    """A ping-pong scaled by 0.0 and -0.0 in turn: the zeros' signs, and so ``1 / x``, depend on
    each sweep's own constant."""
    a, b = xp.ones(4096), xp.ones(4096)
    for c in (0.0, -0.0, np.float64(-0.0), 0.0, -0.0):
        b[1:-1] = a[:-2] * c
        a[1:-1] = b[2:] * c
    with np.errstate(divide="ignore"):
        return [1.0 / a, 1.0 / b]


def field_steps(xp: ModuleType) -> list[Any]:
    """FDTD steps: a row set to each NumPy scalar of a source, then in-place updates, one of
    them through an intermediate array that is new in every step."""
    ex, ey, hz = xp.ones((64, 64)), xp.ones((64, 64)), xp.full((64, 64), 0.5)
    source = np.arange(5.0) / 7.0
    for t in range(source.shape[0]):
        ey[0, :] = source[t]
        ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])
    return [ex, ey, hz]


def shortest_paths(xp: ModuleType) -> list[Any]:
    """Floyd-Warshall: every iteration reads another column and row of the last result, a new
    array each time, so its group matches the earlier ones but for its bases and offsets."""
    path = (xp.arange(64.0 * 64).reshape(64, 64) * 7.0) % 13.0
    for k in range(0, 64, 9):  # row k lies in another base-block every other iteration
        path = xp.minimum(path, path[:, k, None] + path[None, k, :])
    return [path]


def shrinking(xp: ModuleType) -> list[Any]:
    """A loop whose arrays lose an element every iteration: no two groups share a shape."""
    a = xp.linspace(0.0, 1.0, 5000)
    for _ in range(5):
        a = a[1:] * 0.5 + a[:-1]
    return [a]


def run(case: Callable[[ModuleType], list[Any]], xp: ModuleType) -> list[np.ndarray]:
    return [np.array(np.asarray(value)) for value in case(xp)]


@pytest.mark.parametrize("case", [ping_pong, signed_zeros, field_steps, shortest_paths], ids=lambda case: case.__name__)
def test_a_loop_in_one_batch_binds_later_iterations_and_gives_numpys_values(case, bound: list[int]) -> None:
    needs_runtime()
    import shoal.numpy as snp
    from shoal import runtime

    expected = run(case, np)
    with runtime.configure(engine=blocked_engine("off"), eager_threshold=0, settled_threshold=0):
        got = run(case, snp)
    assert bound, "no group was bound from an earlier one"
    for want, have in zip(expected, got, strict=True):
        assert have.dtype == want.dtype
        np.testing.assert_array_equal(have, want)
        assert np.array_equal(np.signbit(have), np.signbit(want))


def test_groups_of_other_shapes_are_lowered_apart(bound: list[int]) -> None:
    needs_runtime()
    import shoal.numpy as snp
    from shoal import runtime

    expected = run(shrinking, np)
    with runtime.configure(engine=blocked_engine("off"), eager_threshold=0, settled_threshold=0):
        got = run(shrinking, snp)
    np.testing.assert_array_equal(got[0], expected[0])
    assert not bound


def each_iteration_divides_by_zero(xp: ModuleType) -> Any:
    """A ping-pong whose first sweep divides by zero in every iteration (the fixed boundary
    keeps a finite numerator)."""
    a, b, z = xp.ones(4096), xp.ones(4096), xp.zeros(4096)
    for k in range(3):
        b[1:-1] = (a[:-2] + k) / z[1:-1]
        a[1:-1] = (b[:-2] + b[2:]) * 0.5
    return a


@pytest.mark.parametrize("compile", ["off", pytest.param("sync", marks=pytest.mark.full)])
def test_every_bound_iteration_warns_at_its_own_call(compile: str, bound: list[int]) -> None:
    """With the "always" filter NumPy warns once per call: three iterations, three warnings. A
    program bound with the first iteration's instructions would note all three on that one."""
    needs_runtime()
    import shoal.numpy as snp
    from shoal import runtime

    expected = warnings_shown(lambda: each_iteration_divides_by_zero(np))
    assert len(expected) == 3
    with runtime.configure(engine=blocked_engine(compile), eager_threshold=0, settled_threshold=0):
        assert warnings_shown(lambda: each_iteration_divides_by_zero(snp)) == expected
    assert bound


def _accesses(case: Callable[[ModuleType], list[Any]], monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    """The reads and writes of every block operation ``case`` inserts, bases numbered by first
    appearance (each run makes new bases)."""
    import shoal.numpy as snp
    from shoal import runtime
    from shoal.engine.blocks.dependencies import DependencyLists

    inserted: list[tuple] = []
    insert_group = DependencyLists.insert_group

    def recording(self: DependencyLists, ops: Any, after: Any = ()) -> None:
        ops = list(ops)
        inserted.extend((op.label.split(" ")[0], op.reads, op.writes) for op in ops)
        insert_group(self, ops, after)

    with monkeypatch.context() as patch:
        patch.setattr(DependencyLists, "insert_group", recording)
        with runtime.configure(engine=blocked_engine("off"), eager_threshold=0, settled_threshold=0):
            run(case, snp)
    names: dict[int, int] = {}
    return [
        (label, *(tuple((names.setdefault(base, len(names)), k) for base, k in keys) for keys in (reads, writes)))
        for label, reads, writes in inserted
    ]


@pytest.mark.parametrize("case", [ping_pong, field_steps, shortest_paths], ids=lambda case: case.__name__)
def test_bound_groups_access_their_own_bases(case, monkeypatch: pytest.MonkeyPatch, bound: list[int]) -> None:
    """Every block operation reads and writes the base-blocks it would without the memo: the
    base-block lists shared from an earlier group name this group's bases, and a group at
    other offsets has its own."""
    needs_runtime()
    with_memo = _accesses(case, monkeypatch)
    assert bound
    monkeypatch.setattr(lowering_memo, "_key", lambda *args: None)
    assert _accesses(case, monkeypatch) == with_memo


def test_groups_that_differ_only_in_their_bases_share_base_block_lists(monkeypatch: pytest.MonkeyPatch, bound: list[int]) -> None:
    """The sweeps ``a`` into ``b`` and ``b`` into ``a`` share one structure: each lists its
    base-blocks by renaming the first sweep's bases, none walks its view-blocks again (the
    lists' contents are checked by ``test_bound_groups_access_their_own_bases``)."""
    needs_runtime()
    import shoal.numpy as snp
    from shoal import runtime

    walked: list[int] = []
    base_blocks = lowering_memo.LoweringMemo.base_blocks
    monkeypatch.setattr(lowering_memo.LoweringMemo, "base_blocks", lambda self, program, compute: base_blocks(self, program, lambda: walked.append(1) or compute()))
    with runtime.configure(engine=blocked_engine("off"), eager_threshold=0, settled_threshold=0):
        got = run(ping_pong, snp)
    for want, have in zip(run(ping_pong, np), got, strict=True):
        np.testing.assert_array_equal(have, want)
    assert len(bound) == 11  # twelve sweeps, the first lowered
    assert len(walked) == 1, walked
