"""A batch compared with the previous keyed batch (``shoal/engine/node/schedule/repeat.py``) must
take over its key exactly when :func:`batch_shape` would give it the same key, with the same base
ids and constants: each case below changes one fact of a loop body's batch (or none) and checks
both answers against each other, so a fact the comparison missed or added fails here."""

from __future__ import annotations

import numpy as np
import pytest

from shoal.bytecode import BaseDecl, Batch, Const, Instruction, View, make_attrs
from shoal.engine.node.schedule import compiled_checks
from shoal.engine.node.schedule.plan_cache import batch_shape
from shoal.engine.node.schedule.repeat import Previous, repeated_shape

F8 = np.dtype("f8")
N = 8


@pytest.fixture(autouse=True, params=["compiled", "python"])
def walk(request, monkeypatch):
    """Every case with the loops over a replayed batch in C (``_repeat_walk.c``, where built:
    comparison, verification's id checks, binding) and in Python."""
    if request.param == "python":
        monkeypatch.setattr(compiled_checks, "CHECKS", None)
    elif compiled_checks.CHECKS is None:
        pytest.skip("shoal/engine/node/schedule/_repeat_walk.c was not built here")
    return request.param


def _body(
    first: int,
    *,
    offset: int = 0,
    shape: tuple[int, ...] = (N,),
    strides: tuple[int, ...] = (8,),
    dtype: np.dtype = F8,
    scalar: object = 0.5,
    other: object = 2.0,
    alias: bool = False,
    size: int = N,
    carried: bool = False,
    donated: bool = False,
    attr: float = 1.0,
    released: int | None = None,
    kept: int = 1,
) -> Batch:
    """``t = kept[offset:] * scalar; u = t + other (or t + t); s = sum(u, attr); release t``:
    base ``kept`` from an earlier batch, ``first`` and ``first + 1`` declared here."""
    t, u = first, first + 1
    view = View(kept, dtype, offset, shape, strides)
    bases = [BaseDecl(t, dtype, size), BaseDecl(u, dtype, size)]
    data = {t: np.zeros(size, dtype)} if carried else {}
    tv = View(t, dtype, 0, shape, strides)
    uv = View(u, dtype, 0, shape, strides)
    instructions = [
        Instruction("multiply", (tv,), (view, Const(scalar))),
        Instruction("add", (uv,), (tv, tv if alias else Const(other))),
        Instruction("clip", (uv,), (uv, Const(-attr), Const(attr))),
        Instruction("release", (), (), make_attrs(base=t if released is None else released)),
    ]
    return Batch(bases, data, instructions, {t} if donated else set())


LIVE = {1: BaseDecl(1, F8, 64), 2: BaseDecl(2, F8, 64), 3: BaseDecl(3, np.dtype("i8"), 64), 4: BaseDecl(4, F8, 32)}


def _compare(before: Batch, after: Batch, live: dict = LIVE) -> bool:
    """True if ``after`` repeats ``before``; checks the answer against ``batch_shape``'s."""
    shape = batch_shape(before, live)
    assert shape is not None
    expected = batch_shape(after, live)
    got = repeated_shape(after, Previous(before, shape, False, 0), live)
    same_key = expected is not None and expected.key == shape.key
    assert (got is not None) == same_key
    if got is not None:
        assert got.key is shape.key
        assert got.ids == expected.ids
        assert got.constants == expected.constants
        assert (got.declared, got.released_first, got.written) == (expected.declared, expected.released_first, expected.written)
    return got is not None


REPEATS = {
    "new ids only": {},
    "another kept base of the same dtype and size": {"kept": 2},
    "another scalar of the same kind": {"scalar": 0.75},
    "negative zero scalar": {"scalar": -0.0},
}

DIFFERS = {
    "offset": {"offset": 8},
    "shape": {"shape": (N - 1,)},
    "strides": {"strides": (16,)},
    "dtype": {"dtype": np.dtype("f4")},
    "dtype character (long and long long)": {"dtype": np.dtype("l"), "kept": 3},
    "scalar kind int": {"scalar": 1},
    "scalar kind bool": {"scalar": True},
    "scalar kind NumPy float64": {"scalar": np.float64(0.5)},
    "scalar kind int range": {"scalar": 300},
    "constants become equal": {"scalar": 2.0},
    "attribute value": {"attr": 2.0},
    "aliasing: an operand becomes the other": {"alias": True},
    "declared size": {"size": N + 1},
    "carried data": {"carried": True},
    "donated data": {"donated": True},
    "released base from outside": {"released": 2},
    "kept base of another size": {"kept": 4},
    "kept base not live": {"kept": 99},
}


@pytest.mark.parametrize("change", REPEATS.values(), ids=REPEATS.keys())
def test_a_loop_body_with_new_ids_and_values_repeats(change):
    assert _compare(_body(10), _body(20, **change))


@pytest.mark.parametrize("change", DIFFERS.values(), ids=DIFFERS.keys())
def test_a_changed_fact_does_not_repeat(change):
    assert not _compare(_body(10), _body(20, **change))


def test_integer_kinds_repeat_within_their_range_only():
    assert _compare(_body(10, scalar=3), _body(20, scalar=100))
    assert not _compare(_body(10, scalar=3), _body(20, scalar=200))  # int8 no longer holds it
    assert not _compare(_body(10, scalar=3), _body(20, scalar=-3))  # nor unsigned types


def test_a_renaming_must_be_one_to_one():
    before = _body(10)
    # The kept base is renamed onto a base the batch declares: two planned bases, one base.
    assert not _compare(before, _body(20, kept=20))
    # A declared id repeated.
    after = _body(20)
    after.bases[1] = BaseDecl(20, F8, N)
    assert not _compare(before, after)


def test_a_different_opcode_count_or_gather_is_not_compared():
    before = _body(10)
    shorter = _body(20)
    shorter.instructions.pop()
    assert not _compare(before, shorter)
    index = np.arange(4, dtype=np.intp)
    gather = Batch(
        [BaseDecl(30, F8, 4), BaseDecl(31, np.dtype(np.intp), 4)],
        {31: index},
        [Instruction("gather", (View(30, F8, 0, (4,), (8,)),), (View(1, F8, 0, (8,), (8,)), View(31, np.dtype(np.intp), 0, (4,), (8,))), make_attrs(axis=0))],
    )
    shape = batch_shape(gather, LIVE)
    assert shape is not None
    again = Batch(
        [BaseDecl(40, F8, 4), BaseDecl(41, np.dtype(np.intp), 4)],
        {41: index[::-1].copy()},
        [Instruction("gather", (View(40, F8, 0, (4,), (8,)),), (View(1, F8, 0, (8,), (8,)), View(41, np.dtype(np.intp), 0, (4,), (8,))), make_attrs(axis=0))],
    )
    assert repeated_shape(again, Previous(gather, shape, False, 0), LIVE) is None


def test_a_constant_object_seen_before_still_pairs_with_one_value():
    """A loop's literal is the same object every iteration and is not keyed again; which
    constants are equal is still compared."""
    x, y = float("0.5"), float("2.0")
    before = _body(10, scalar=x, other=y)
    assert _compare(before, _body(20, scalar=x, other=y))
    assert not _compare(before, _body(20, scalar=x, other=x))
    assert not _compare(before, _body(20, scalar=y, other=y))
    assert _compare(before, _body(20, scalar=y, other=x))  # values rebound, as batch_shape keys them
    assert not _compare(before, _body(20, scalar=1, other=y))


def test_a_release_with_other_attributes_is_compared_by_its_base():
    before, after = _body(10), _body(20)
    for batch, base in ((before, 10), (after, 20)):
        batch.instructions[-1] = Instruction("release", (), (), make_attrs(base=base, note=1))
    assert _compare(before, after)
    after.instructions[-1] = Instruction("release", (), (), make_attrs(base=2, note=1))
    assert not _compare(before, after)
