"""The plan cache: a batch whose structure was planned before runs the same block operations on
its own bases, with results identical to planning it afresh, and a different structure never
hits. Each program runs on the node engine and the reference engine, batch by batch."""

from __future__ import annotations

import numpy as np
import pytest
from engine_node_harness import CachedAndFresh, assert_same
from engine_node_recorder import Recorder
from test_engine_node_repeat import walk  # noqa: F401  (every case with the compiled loops and with the Python ones)

from shoal.bytecode import BaseDecl, Batch, Const, Instruction, View
from shoal.engine.node.schedule.plan_cache import PlanCache, batch_shape

RNG = np.random.default_rng(7)


def stencil_step(rec: Recorder, grid: View, scale: float, dtype=np.float64) -> tuple[View, View]:
    """One Jacobi sweep into a new array plus the sum of the result: fused temporaries, a
    reduction folded from partials, releases and a whole-view copy."""
    inner, up, down = slice(1, -1), slice(None, -2), slice(2, None)
    s = lambda r, c: rec.index(grid, (r, c))  # noqa: E731
    t1 = rec.ufunc("add", s(inner, inner), s(up, inner))
    t2 = rec.ufunc("add", t1, s(down, inner))
    t3 = rec.ufunc("add", t2, s(inner, up))
    t4 = rec.ufunc("add", t3, s(inner, down))
    t5 = rec.ufunc("multiply", scale, t4)
    new = rec.empty(tuple(n for n in grid.shape), dtype)
    rec.copy(new, grid)
    rec.copy(rec.index(new, (inner, inner)), t5)
    total = rec.reduce("sum", new)
    rec.release(t1, t2, t3, t4, t5, grid)
    return new, total


@pytest.fixture
def pair():
    engines = CachedAndFresh()
    yield engines
    engines.close()


@pytest.mark.parametrize("threads", [1, 2])
def test_a_repeated_structure_replays_with_new_bases_and_data(threads):
    engines = CachedAndFresh(threads=threads)
    try:
        rec = engines.recorder
        grid = rec.array(RNG.random((13, 11)))
        engines.run()
        replays = []
        for _ in range(4):
            grid, total = stencil_step(rec, grid, 0.2)
            replays.append(engines.run())
            engines.check(grid, total)
            rec.release(total)
        assert replays == [False, False, True, True]  # the second also releases the first total
        assert engines.node.last_stats.kernels >= 1 and engines.node.last_stats.temporaries >= 4
    finally:
        engines.close()


def test_fresh_data_each_batch_gives_fresh_results(pair):
    rec = pair.recorder
    results = []
    for _ in range(3):
        a = rec.array(RNG.random((9, 8)))
        b = rec.array(RNG.random((9, 8)))
        c = rec.ufunc("multiply", rec.ufunc("add", a, b), 3.0)
        s = rec.reduce("sum", c)
        rec.release(a, b)
        replayed = pair.run()
        pair.check(c, s)
        results.append((replayed, float(pair.node.fetch(s))))
        rec.release(c, s)
    assert [replayed for replayed, _ in results] == [False, False, True]  # 2 and 3 release c, s
    assert len({value for _, value in results}) == 3


@pytest.mark.parametrize(
    "change",
    ["constant", "negative zero", "dtype", "shape", "offset", "scalar type"],
)
def test_a_different_structure_never_replays(pair, change):
    """...and a different constant value of the same kind replays, with the new value."""
    rec = pair.recorder

    def step(variant: bool) -> View:
        dtype = np.float32 if (variant and change == "dtype") else np.float64
        shape = (9, 10) if (variant and change == "shape") else (9, 8)
        a = rec.array(RNG.random(shape).astype(dtype))
        view = rec.index(a, (slice(1, None), slice(None))) if (variant and change == "offset") else rec.index(a, (slice(None, -1), slice(None)))
        constant = {"constant": 2.5, "negative zero": -0.0, "scalar type": np.float64(0.0)}.get(change, 0.0) if variant else 0.0
        b = rec.ufunc("copysign", rec.ufunc("add", view, 1.0), constant)
        rec.release(a)
        return b

    first = step(False)
    assert not pair.run()
    pair.check(first)
    same = step(False)
    assert pair.run()
    pair.check(same)
    other = step(True)
    assert pair.run() == (change in ("constant", "negative zero"))
    pair.check(other)
    if change == "negative zero":
        assert (pair.node.fetch(other) < 0).all() and (pair.node.fetch(same) > 0).all()


def test_outside_bases_of_another_dtype_or_size_do_not_replay():
    def batch_using(decl: BaseDecl) -> Batch:
        view = View(decl.id, decl.dtype, 0, (decl.size,), (decl.dtype.itemsize,))
        out = View(100, decl.dtype, 0, (decl.size,), (decl.dtype.itemsize,))
        return Batch(bases=[BaseDecl(100, decl.dtype, decl.size)], instructions=[Instruction("negative", (out,), (view,))])

    f8 = BaseDecl(5, np.dtype(np.float64), 10)
    key = batch_shape(batch_using(f8), {5: f8})
    assert batch_shape(batch_using(f8), {5: f8}) == key
    assert batch_shape(batch_using(f8), {}).key != key.key  # not live
    bigger = BaseDecl(5, np.dtype(np.float64), 12)
    assert batch_shape(batch_using(f8), {5: bigger}).key != key.key
    f4 = BaseDecl(5, np.dtype(np.float32), 10)
    assert batch_shape(batch_using(f8), {5: f4}).key != key.key


def test_keys_rename_bases_by_first_use_and_keep_constants_kinds():
    def batch(first: int, second: int, value: object, data: bool = False) -> Batch:
        decl = BaseDecl(second, np.dtype(np.float64), 4)
        src = View(first, np.dtype(np.float64), 0, (4,), (8,))
        out = View(second, np.dtype(np.float64), 0, (4,), (8,))
        result = Batch(bases=[decl], instructions=[Instruction("add", (out,), (src, Const(value))), Instruction("release", (), (), (("base", first),))])
        if data:
            result.data[second] = np.zeros(4)
        return result

    live = {1: BaseDecl(1, np.dtype(np.float64), 4), 7: BaseDecl(7, np.dtype(np.float64), 4)}
    one = batch_shape(batch(1, 2, 1.5), live)
    assert one.ids == (2, 1)
    assert batch_shape(batch(7, 9, 1.5), live).key == one.key
    for same in (2.5, -1.5, -0.0, float("nan")):
        assert batch_shape(batch(1, 2, same), live).key == one.key, same
    for other in (1, True, np.float32(1.5), np.float64(1.5), 1.5 + 0j):
        assert batch_shape(batch(1, 2, other), live).key != one.key, other
    assert batch_shape(batch(1, 2, 3), live).key == batch_shape(batch(1, 2, 100), live).key
    assert batch_shape(batch(1, 2, -3), live).key == batch_shape(batch(1, 2, -100), live).key
    assert batch_shape(batch(1, 2, 3), live).key != batch_shape(batch(1, 2, 300), live).key  # not an int8
    assert batch_shape(batch(1, 2, 3), live).key != batch_shape(batch(1, 2, 2**63), live).key  # a uint64
    assert batch_shape(batch(1, 2, 3), live).key != batch_shape(batch(1, 2, -3), live).key  # not a uint8
    assert batch_shape(batch(1, 2, 2**70), live).key != batch_shape(batch(1, 2, 2**71), live).key
    assert batch_shape(batch(1, 2, np.int8(3)), live).key == batch_shape(batch(1, 2, np.int8(-3)), live).key
    assert batch_shape(batch(1, 2, 1.5, data=True), live).key != one.key


def test_the_cache_keeps_the_most_recently_used_entries(pair):
    cache = PlanCache(entries=2)
    shapes = [batch_shape(Batch(bases=[BaseDecl(1, np.dtype(np.float64), n)]), {}) for n in (1, 2, 3)]
    for shape in shapes[:2]:
        cache.put(shape, object())  # type: ignore[arg-type]
    cache._plans.move_to_end(shapes[0].key)
    cache.put(shapes[2], object())  # type: ignore[arg-type]
    assert shapes[0].key in cache._plans and shapes[1].key not in cache._plans and len(cache) == 2


def test_replay_drops_the_same_temporaries_and_frees_released_bases(pair):
    rec = pair.recorder
    keep = rec.array(RNG.random(40))
    pair.run()
    for _ in range(3):
        t = rec.ufunc("sqrt", keep)
        u = rec.ufunc("add", t, 1.0)
        rec.copy(keep, u)
        rec.release(t, u)
        pair.run()
        pair.check(keep)
    assert pair.node.last_stats.replayed and pair.node.last_stats.temporaries == 2
    assert pair.node.live_bases() == 1


@pytest.mark.full
def test_a_plan_cache_hit_with_compiled_kernels_matches(tmp_path, monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.setenv("SHOAL_CACHE_DIR", str(tmp_path))
    engines = CachedAndFresh(threads=2, block=16, compile="sync")
    try:
        rec = engines.recorder
        grid = rec.array(RNG.random((13, 11)))
        engines.run()
        for _ in range(3):
            grid, total = stencil_step(rec, grid, 0.2)
            engines.run()
            assert_same(engines.node.fetch(grid), engines.reference.fetch(grid), exact=False)
            rec.release(total)
        stats = engines.node.last_stats
        assert stats.replayed and stats.compiled_block_ops > 0
    finally:
        engines.close()
