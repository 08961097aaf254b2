"""Views alias their base exactly as in NumPy, also when writes and reads interleave lazily."""

from __future__ import annotations

import operator
from types import ModuleType

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy_fixtures import DIFFERENTIAL, arrays, check_same, dtypes, nonempty_shapes

IN_PLACE_OPERATORS = (
    operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
    operator.imod, operator.ipow, operator.iand, operator.ior, operator.ixor, operator.ilshift,
    operator.irshift,
)  # fmt: skip


def _small_non_negative(values: np.ndarray) -> np.ndarray:
    """Exponents and shift counts that NumPy accepts for every integer dtype."""
    if values.dtype.kind in "iu":
        return np.remainder(values, 7).astype(values.dtype)
    return values


@st.composite
def in_place_cases(draw):
    """(operator, target array, basic index selecting the written region, operand)."""
    target = draw(arrays(dtypes, nonempty_shapes, bound=100))
    index = draw(hnp.basic_indices(target.shape, allow_newaxis=False, allow_ellipsis=True))
    region = np.shape(target[index])
    operand_shape = draw(
        hnp.broadcastable_shapes(region, min_dims=0, max_dims=len(region), min_side=0)
        | hnp.array_shapes(min_dims=0, max_dims=2, max_side=4)
    )
    operand = _small_non_negative(draw(arrays(dtypes, operand_shape, bound=100)))
    return draw(st.sampled_from(IN_PLACE_OPERATORS)), target, index, operand


@DIFFERENTIAL
@given(case=in_place_cases())
def test_in_place_operator_on_a_view_matches_numpy(snp_any: ModuleType, case) -> None:
    op, target, index, operand = case

    def apply_in_place(xp, a, b):
        view = a[index]
        result = op(view, b)
        if isinstance(view, np.generic) or getattr(view, "_scalar", False):
            return result  # a scalar (Shoal: a scalar-like 0-d array): rebinding, nothing is written
        assert result is view
        return a

    check_same(snp_any, apply_in_place, target, operand)


@DIFFERENTIAL
@given(
    op=st.sampled_from(IN_PLACE_OPERATORS),
    array=arrays(dtypes, nonempty_shapes, bound=100),
    scalar=st.integers(0, 5) | st.floats(-5, 5) | st.booleans(),
)
def test_in_place_operator_with_python_scalar(snp: ModuleType, op, array, scalar) -> None:
    def apply_in_place(xp, a):
        result = op(a, scalar)
        assert result is a
        return a

    check_same(snp, apply_in_place, array)


@pytest.mark.parametrize(
    "statement",
    [
        "a[1:] += a[:-1]",
        "a[:-1] += a[1:]",
        "a[::-1] += a",
        "a[::2] *= a[1::2]",
        "a[:-1] = a[1:]",
        "a[1:] = a[:-1]",
        "a[::-1] = a",
        "a[2:] -= a[:-2][::-1]",
        "m = a.reshape(4, 4); m += m.T",
        "m = a.reshape(4, 4); m[:] = m.T",
        "m = a.reshape(4, 4); m[1:, 1:] = m[:-1, :-1]",
        "a.clip(3, 9, out=a)",
        "a[1:] = a[:-1] * 2",
    ],
)
def test_overlapping_reads_and_writes_act_as_if_copied(snp: ModuleType, statement: str) -> None:
    def run(xp, a):
        exec(statement, {"xp": xp}, {"a": a})
        return a

    check_same(snp, run, np.arange(16, dtype=np.int64))


def test_write_through_view_after_other_operations_were_recorded(snp: ModuleType) -> None:
    def program(xp, a):
        doubled = a * 2  # recorded before the write: must see the old values
        window = a[2:7]
        window[:] = -1
        after = a + 1  # recorded after the write: must see the new values
        window[1::2] *= 10
        total = a.sum()
        return doubled, after, total, window

    check_same(snp, program, np.arange(10.0))


def test_view_sees_later_writes_to_its_base(snp: ModuleType) -> None:
    def program(xp, a):
        evens = a[::2]
        first = evens.copy()
        a += 100
        a[-1] = -5
        return first, evens, evens.sum()

    check_same(snp, program, np.arange(9, dtype=np.int32))


def test_views_of_views_of_views(snp: ModuleType) -> None:
    def program(xp, a):
        grid = a.reshape(4, 6)
        inner = grid[1:, ::-1][::2, 1:5].T
        inner[1:3] += 1000
        corner = inner[0, :, None]
        corner[:] = 7
        return a, inner, corner

    check_same(snp, program, np.arange(24, dtype=np.int64))


def test_shape_changing_views_write_the_base(snp: ModuleType) -> None:
    def program(xp, a):
        a.ravel()[::5] = -1
        a[xp.newaxis, ..., None][0, 1, 2, 0] = -2
        xp.expand_dims(a, 0)[0, 2] = -3
        xp.swapaxes(a, 0, 1)[4, 0] = -4
        a.transpose()[0, 2] = -5
        a.squeeze()[1, 1] = -6
        a.T.T[2, 2] = -7
        return a

    check_same(snp, program, np.arange(15.0).reshape(3, 5))


def test_copies_do_not_alias(snp: ModuleType) -> None:
    def program(xp, a):
        for copied in (
            a.copy(),
            xp.copy(a),
            a.flatten(),
            a.astype(a.dtype),
            xp.array(a),
            a.T.reshape(-1),  # not contiguous: reshape must copy
            a[[0, 1]],
            a[a > 3],
        ):
            copied[...] = 0
        return a

    check_same(snp, program, np.arange(12.0).reshape(3, 4))


def test_asarray_of_a_shoal_array_is_the_same_array(snp: ModuleType) -> None:
    array = snp.array(np.arange(5))
    assert snp.asarray(array) is array
    snp.asarray(array)[0] = 9
    assert array[0] == 9


def test_real_and_imag_are_views(snp: ModuleType) -> None:
    def program(xp, c):
        c.real[::2] = 0
        c.imag[1:] += 1
        return c, c.real, c.imag

    check_same(snp, program, np.arange(6) * (1 + 2j))


def test_broadcast_to_is_a_read_only_view(snp: ModuleType) -> None:
    def program(xp, a):
        wide = xp.broadcast_to(a, (3, 4))
        a[0] = 100  # the view sees writes to its base
        return wide

    check_same(snp, program, np.arange(4.0))
    error = check_same(snp, lambda xp, a: xp.broadcast_to(a, (3, 4)).__setitem__(0, 1), np.ones(4))
    assert isinstance(error, ValueError)


@DIFFERENTIAL
@given(
    array=arrays(np.dtype("int64"), hnp.array_shapes(min_dims=2, max_dims=2, min_side=2), bound=9),
    data=st.data(),
)
def test_interleaved_writes_views_and_snapshots(snp: ModuleType, array: np.ndarray, data) -> None:
    view_indices = [
        data.draw(hnp.basic_indices(array.shape, min_dims=1, allow_ellipsis=False), label="view")
        for _ in range(2)
    ]
    steps = data.draw(
        st.lists(
            st.tuples(st.sampled_from(["base", "view0", "view1"]),
                      st.sampled_from(["add", "set", "negate", "snapshot"]),
                      st.integers(-3, 3)),
            min_size=2,
            max_size=8,
        ),
        label="steps",
    )  # fmt: skip

    def program(xp, a):
        targets = {"base": a, **{f"view{i}": a[index] for i, index in enumerate(view_indices)}}
        snapshots = []
        for target_name, action, number in steps:
            target = targets[target_name]
            if action == "add":
                target += number
            elif action == "set":
                target[...] = number
            elif action == "negate":
                xp.negative(target, out=target)
            else:
                snapshots.append(target * 1)
        return a, snapshots, targets["view0"], targets["view1"]

    check_same(snp, program, array)
