"""Error parity: NumPy's exception type and message, raised by the offending call itself.

Each case builds its operands with the module under test (lazy arrays for Shoal), then runs one
statement that NumPy rejects. Shoal must raise the same exception type with the same message from
that call, without running the recorded work first (no flush) unless the error depends on values
that only exist after running it; and the operands must be left as NumPy leaves them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from numpy_fixtures import assert_same, flush_count, needs_runtime


@dataclass(frozen=True)
class ErrorCase:
    """One statement NumPy rejects, with the operands it runs on."""

    name: str
    make: Callable[[ModuleType], tuple[Any, ...]]
    statement: Callable[..., Any]
    # The error (or the result's shape, as for boolean masks) depends on array contents, so
    # checking it may run the recorded work.
    needs_values: bool = False


def grid(xp: ModuleType) -> tuple[Any, ...]:
    return (xp.arange(6).reshape(2, 3),)


def floats_and_ints(xp: ModuleType) -> tuple[Any, ...]:
    return xp.linspace(0, 1, 6).reshape(2, 3), xp.arange(6).reshape(2, 3)


def vector(xp: ModuleType) -> tuple[Any, ...]:
    return (xp.arange(5),)


def in_place(operator: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    """A statement applying an in-place operator (lambdas cannot hold augmented assignment)."""

    def apply(xp: ModuleType, target: Any, operand: Any) -> None:
        operator(target, operand)

    return apply


def setitem(xp: ModuleType, target: Any, key: Any, value: Any) -> None:
    target[key] = value


BROADCASTING = [
    ErrorCase("binary-operator", lambda xp: (xp.arange(3), xp.arange(4)), lambda xp, a, b: a + b),
    ErrorCase(
        "ufunc-call",
        lambda xp: (xp.ones((2, 3)), xp.ones((3, 2))),
        lambda xp, a, b: xp.multiply(a, b),
    ),
    ErrorCase("comparison", lambda xp: (xp.ones((2, 3)), xp.ones(2)), lambda xp, a, b: a < b),
    ErrorCase(
        "in-place-output-too-small",
        lambda xp: (xp.ones(3), xp.ones((2, 3))),
        in_place(lambda a, b: a.__iadd__(b)),
    ),
    ErrorCase("where", lambda xp: (xp.ones(3) > 0, xp.ones(4)), lambda xp, c, a: xp.where(c, a, 0)),
    ErrorCase(
        "setitem",
        lambda xp: (xp.zeros(5), xp.ones(3)),
        lambda xp, a, b: setitem(xp, a, slice(0, 2), b),
    ),
    ErrorCase(
        "setitem-mask",
        lambda xp: (xp.zeros(4), xp.ones(3)),
        lambda xp, a, b: setitem(xp, a, a == 0, b),
        needs_values=True,
    ),
    ErrorCase("broadcast-to", vector, lambda xp, a: xp.broadcast_to(a, (3, 4))),
    ErrorCase(
        "ufunc-out-shape",
        lambda xp: (xp.ones(4), xp.zeros(2)),
        lambda xp, a, out: xp.add(a, a, out=out),
    ),
]
SHAPES = [
    ErrorCase("reduction-out-shape", floats_and_ints, lambda xp, f, i: xp.sum(f, axis=0, out=i)),
    ErrorCase("reshape-size", grid, lambda xp, a: a.reshape(4, 2)),
    ErrorCase("reshape-two-unknowns", grid, lambda xp, a: a.reshape(-1, -1)),
    ErrorCase(
        "concatenate-sizes",
        lambda xp: (xp.ones((2, 3)), xp.ones((2, 4))),
        lambda xp, a, b: xp.concatenate([a, b]),
    ),
    ErrorCase(
        "concatenate-ndim",
        lambda xp: (xp.ones((2, 3)), xp.ones(3)),
        lambda xp, a, b: xp.concatenate([a, b]),
    ),
    ErrorCase(
        "stack-shapes", lambda xp: (xp.ones(2), xp.ones(3)), lambda xp, a, b: xp.stack([a, b])
    ),
    ErrorCase(
        "matmul-operator", lambda xp: (xp.ones((2, 3)), xp.ones((2, 3))), lambda xp, a, b: a @ b
    ),
    ErrorCase("matmul-scalar", grid, lambda xp, a: xp.matmul(a, 3)),
    ErrorCase("dot", lambda xp: (xp.ones((2, 3)), xp.ones((2, 3))), lambda xp, a, b: xp.dot(a, b)),
    # Pending work, past the settled threshold: Shoal's own check, which wrote the shapes as Python does
    ErrorCase("dot of large operands", lambda xp: (xp.ones((600, 1000)) * 2.0, xp.ones((3, 1000)) * 2.0), lambda xp, a, b: xp.dot(a, b)),
    ErrorCase("dot of a vector", lambda xp: (xp.ones((600, 1000)) * 2.0, xp.ones(999) * 2.0), lambda xp, a, b: xp.dot(a, b)),
    ErrorCase("squeeze-non-unit-axis", grid, lambda xp, a: a.squeeze(axis=0)),
    ErrorCase("transpose-axes", grid, lambda xp, a: a.transpose(0, 0)),
    ErrorCase("negative-dimension", lambda xp: (), lambda xp: xp.zeros((2, -1))),
    ErrorCase("linspace-negative-num", lambda xp: (), lambda xp: xp.linspace(0, 1, -2)),
    ErrorCase("eye-negative", lambda xp: (), lambda xp: xp.eye(-1)),
    ErrorCase("truth-value", grid, lambda xp, a: bool(a)),
    ErrorCase("truth-value-and", grid, lambda xp, a: a and a),
    ErrorCase("float-of-vector", vector, lambda xp, a: float(a)),
    ErrorCase("int-of-one-element-vector", lambda xp: (xp.ones(1),), lambda xp, a: int(a)),
    ErrorCase("len-of-0d", lambda xp: (xp.asarray(3.0),), lambda xp, a: len(a)),
    ErrorCase("iterate-0d", lambda xp: (xp.asarray(3.0),), lambda xp, a: iter(a)),
    ErrorCase("hash", grid, lambda xp, a: hash(a)),
    ErrorCase("min-of-empty", lambda xp: (xp.zeros((0, 3)),), lambda xp, a: a.min()),
    ErrorCase(
        "argmax-of-empty-axis", lambda xp: (xp.zeros((0, 3)),), lambda xp, a: a.argmax(axis=0)
    ),
    ErrorCase(
        "write-to-broadcast", vector, lambda xp, a: setitem(xp, xp.broadcast_to(a, (2, 5)), 0, 1)
    ),
]
AXES = [
    ErrorCase("sum", grid, lambda xp, a: a.sum(axis=2)),
    ErrorCase("sum-negative", grid, lambda xp, a: xp.sum(a, axis=-3)),
    ErrorCase("sum-duplicate", grid, lambda xp, a: a.sum(axis=(1, -1))),
    ErrorCase("mean-tuple", grid, lambda xp, a: a.mean(axis=(0, 5))),
    ErrorCase("argmax", grid, lambda xp, a: a.argmax(axis=3)),
    ErrorCase("cumsum", grid, lambda xp, a: a.cumsum(axis=-4)),
    ErrorCase("swapaxes", grid, lambda xp, a: a.swapaxes(0, 2)),
    ErrorCase("expand-dims", grid, lambda xp, a: xp.expand_dims(a, 4)),
    ErrorCase("concatenate", grid, lambda xp, a: xp.concatenate([a, a], axis=2)),
    ErrorCase("stack", grid, lambda xp, a: xp.stack([a, a], axis=-4)),
    ErrorCase("squeeze", grid, lambda xp, a: a.squeeze(axis=5)),
    ErrorCase("roll", grid, lambda xp, a: xp.roll(a, 1, axis=2)),
    ErrorCase("ufunc-reduce", grid, lambda xp, a: xp.add.reduce(a, axis=2)),
]
CASTING = [
    ErrorCase(
        "in-place-float-into-int",
        floats_and_ints,
        lambda xp, f, i: in_place(lambda a, b: a.__iadd__(b))(xp, i, f),
    ),
    ErrorCase(
        "in-place-true-divide-int",
        grid,
        lambda xp, a: in_place(lambda x, y: x.__itruediv__(y))(xp, a, 2),
    ),
    ErrorCase(
        "in-place-python-float-into-int",
        grid,
        lambda xp, a: in_place(lambda x, y: x.__imul__(y))(xp, a, 1.5),
    ),
    ErrorCase("ufunc-out-dtype", floats_and_ints, lambda xp, f, i: xp.add(f, f, out=i)),
    ErrorCase("bitwise-on-floats", floats_and_ints, lambda xp, f, i: f & i),
    ErrorCase("invert-floats", floats_and_ints, lambda xp, f, i: ~f),
    ErrorCase("shift-floats", floats_and_ints, lambda xp, f, i: i << f),
    ErrorCase(
        "python-int-out-of-range", lambda xp: (xp.arange(4, dtype=xp.uint8),), lambda xp, a: a + 300
    ),
    ErrorCase(
        "python-int-negative-unsigned",
        lambda xp: (xp.arange(4, dtype=xp.uint16),),
        lambda xp, a: a * -1,
    ),
    ErrorCase("astype-safe", floats_and_ints, lambda xp, f, i: f.astype(np.int64, casting="safe")),
    ErrorCase("bool-subtract", lambda xp: (xp.ones(3, dtype=bool),), lambda xp, a: a - a),
    ErrorCase("bool-negative", lambda xp: (xp.ones(3, dtype=bool),), lambda xp, a: -a),
    ErrorCase("unknown-dtype", lambda xp: (), lambda xp: xp.zeros(3, dtype="float7")),
    ErrorCase("integer-to-negative-power", grid, lambda xp, a: a**-1),
    ErrorCase(
        "integer-to-negative-power-array",
        lambda xp: (xp.arange(3), xp.arange(-1, 2)),
        lambda xp, a, b: a**b,
        needs_values=True,
    ),
]
INDEXING = [
    ErrorCase("integer-out-of-bounds", grid, lambda xp, a: a[2]),
    ErrorCase("negative-out-of-bounds", grid, lambda xp, a: a[0, -4]),
    ErrorCase("too-many-indices", grid, lambda xp, a: a[0, 0, 0]),
    ErrorCase("two-ellipses", grid, lambda xp, a: a[..., 0, ...]),
    ErrorCase("float-index", grid, lambda xp, a: a[1.0]),
    ErrorCase("string-index", grid, lambda xp, a: a["x"]),
    ErrorCase("mask-shape", grid, lambda xp, a: a[xp.ones(3, dtype=bool)], needs_values=True),
    ErrorCase(
        "mask-shape-2d", grid, lambda xp, a: a[xp.ones((3, 2), dtype=bool)], needs_values=True
    ),
    ErrorCase("fancy-shape-mismatch", grid, lambda xp, a: a[[0, 1], [0, 1, 2]]),
    ErrorCase("float-array-index", grid, lambda xp, a: a[xp.ones(2)]),
    ErrorCase("setitem-out-of-bounds", grid, lambda xp, a: setitem(xp, a, (0, 3), 1)),
    ErrorCase("setitem-too-many", grid, lambda xp, a: setitem(xp, a, (0, 0, 0), 1)),
    ErrorCase("list-index-out-of-bounds", grid, lambda xp, a: a[[0, 5]]),
    ErrorCase(
        "lazy-index-out-of-bounds",
        lambda xp: (*grid(xp), xp.arange(3)),
        lambda xp, a, i: a[i],
        needs_values=True,
    ),
    ErrorCase(
        "lazy-index-setitem-out-of-bounds",
        lambda xp: (*grid(xp), xp.arange(-4, 0)),
        lambda xp, a, i: setitem(xp, a, (0, i), 0),
        needs_values=True,
    ),
]
RANDOM = [
    ErrorCase("integers-empty-range", lambda xp: (xp.random.default_rng(0),), lambda xp, g: g.integers(5, 2)),
    ErrorCase("normal-negative-scale", lambda xp: (xp.random.default_rng(0),), lambda xp, g: g.normal(0, -1, size=3)),
    ErrorCase("negative-size", lambda xp: (xp.random.default_rng(0),), lambda xp, g: g.random((2, -1))),
    ErrorCase("legacy-seed", lambda xp: (), lambda xp: xp.random.seed(-1)),
    ErrorCase("randint-empty-range", lambda xp: (), lambda xp: xp.random.randint(3, 3, size=2)),
]  # fmt: skip

CASES = {
    "broadcasting": BROADCASTING,
    "shape": SHAPES,
    "axis": AXES,
    "casting": CASTING,
    "index": INDEXING,
    "random": RANDOM,
}


def _numpy_error(case: ErrorCase) -> tuple[BaseException, tuple[Any, ...]]:
    operands = case.make(np)
    with pytest.raises(Exception) as caught:
        case.statement(np, *operands)
    return caught.value, operands


def _message(error: BaseException) -> str:
    """The message without blanks (NumPy writes shapes as ``(2,3)``, Python as ``(2, 3)``).

    The lazy class may also call itself plain ``'ndarray'``.
    """
    return "".join(str(error).replace("'numpy.ndarray'", "'ndarray'").split())


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(case, id=f"{group}-{case.name}")
        for group, cases in CASES.items()
        for case in cases
    ],
)
@pytest.mark.parametrize("settled", [False, True], ids=["recorded", "settled"])
def test_error_matches_numpy_and_is_raised_by_the_call(snp: ModuleType, case: ErrorCase, settled: bool) -> None:
    """Recorded: the error is found by probes at the call, nothing runs. Settled (small views
    computed at once, ``shoal/numpy/_settled.py``): the operands' short batch may run first, and
    NumPy itself raises at the call."""
    needs_runtime()
    import shoal.runtime

    if not settled:
        shoal.runtime.current().settled_threshold = 0
    expected, numpy_operands = _numpy_error(case)
    operands = case.make(snp)
    flushes_before = flush_count()
    with pytest.raises(Exception) as caught:
        case.statement(snp, *operands)
    if not case.needs_values and not settled:
        assert flush_count() == flushes_before, (
            "the error needed a flush: it was not found at the call"
        )
    assert type(caught.value) is type(expected), f"{type(caught.value)!r}: {caught.value}"
    assert _message(caught.value) == _message(expected)
    for operand, numpy_operand in zip(operands, numpy_operands):
        if isinstance(numpy_operand, np.ndarray):
            assert_same(operand, numpy_operand)  # a failed statement changes nothing


def test_failed_statement_leaves_the_program_usable(snp: ModuleType) -> None:
    array = snp.arange(12.0).reshape(3, 4)
    total = array.sum()
    with pytest.raises(ValueError):
        array += snp.ones(5)
    with pytest.raises(IndexError):
        array[7] = 0
    array[0] = -1
    assert_same(array, np.concatenate([[[-1.0] * 4], np.arange(4.0, 12.0).reshape(2, 4)]))
    assert_same(total, np.float64(66.0))


@pytest.mark.parametrize("shapes", [((600, 1000), (3, 1000)), ((600, 1000), (999,)), ((3,), (600, 1000))])
def test_dot_writes_shapes_as_numpy_does(snp: ModuleType, shapes) -> None:
    """Exactly, blanks included (``(600,1000)``, ``(999,)``): Shoal's own check of pending
    operands wrote them as Python does."""
    needs_runtime()
    first, second = shapes
    with pytest.raises(ValueError) as expected:
        np.dot(np.ones(first), np.ones(second))
    with pytest.raises(ValueError) as caught:
        snp.dot(snp.ones(first) * 2.0, snp.ones(second) * 2.0)
    assert str(caught.value) == str(expected.value)


def test_einsum_names_the_operands_shapes_as_numpy_does(snp: ModuleType) -> None:
    """The message named the small probes' shapes (``(1,1024)->...``), not the operands'."""
    needs_runtime()
    with pytest.raises(ValueError) as expected:
        np.einsum("ij,jk->ik", np.ones((1024, 1024)), np.ones((3, 1024)))
    with pytest.raises(ValueError) as caught:
        snp.einsum("ij,jk->ik", snp.ones((1024, 1024)) * 2.0, snp.ones((3, 1024)) * 2.0)
    assert str(caught.value) == str(expected.value)
