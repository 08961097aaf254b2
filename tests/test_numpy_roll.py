"""``np.roll`` over several axes: NumPy's values, one copy per moving block of the result."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest
from numpy_fixtures import LAZY_MODES, check_same, needs_runtime, shoal_numpy, snp  # noqa: F401

CASES = [
    ((1, 1), (0, 1)),
    ((0, 1), (0, 1)),
    ((0, 0), (0, 1)),
    ((-1, 5), (0, 1)),
    ((2, -3, 1), (0, 2, 0)),  # the same axis twice: shifts add up
    ((4, 10), (1, 2)),  # a whole turn moves nothing
    (7, (0, 1, 2)),
    (-2, -1),
]


@pytest.mark.parametrize(("shift", "axis"), CASES)
def test_roll_over_several_axes_matches_numpy(snp: ModuleType, shift, axis) -> None:  # noqa: F811
    array = np.arange(4 * 5 * 6, dtype=np.float64).reshape(4, 5, 6)
    check_same(snp, lambda xp, a: xp.roll(a, shift, axis=axis), array)
    check_same(snp, lambda xp, a: xp.roll(a[:, ::2, 1:], shift, axis=axis), array)


def test_a_two_axis_roll_is_four_copies() -> None:
    needs_runtime()
    with shoal_numpy(LAZY_MODES[0], flush_threshold=1 << 20, settled_threshold=0) as xp:  # recorded, not NumPy's at once
        from shoal import runtime

        array = xp.array(np.arange(30.0).reshape(5, 6))
        pending = runtime.current()._pending.instructions
        before = len(pending)
        rolled = xp.roll(array, (1, 2), axis=(0, 1))
        assert [i.op for i in pending[before:]] == ["copy"] * 4
        np.testing.assert_array_equal(np.asarray(rolled), np.roll(np.arange(30.0).reshape(5, 6), (1, 2), axis=(0, 1)))


ONE_AXIS = [(1, 0), (-7, 1), (0, 2), (13, 2), (3, -3), (6, 2), (True, 1), (np.int64(2), 0)]


@pytest.mark.parametrize(("shift", "axis"), ONE_AXIS, ids=repr)
def test_one_axis_roll_of_a_small_array_matches_numpy(snp: ModuleType, shift, axis) -> None:  # noqa: F811
    """A small settled array rolled by an integer along one axis: two copies made at once."""
    array = np.arange(4 * 5 * 6, dtype=np.int8).reshape(4, 5, 6)
    check_same(snp, lambda xp, a: xp.roll(a, shift, axis=axis), array)
    check_same(snp, lambda xp, a: xp.roll(a[:, ::2, 1:], shift, axis=axis), array)
    fortran = np.asfortranarray(array)
    expected = np.roll(fortran, shift, axis)
    got = snp.roll(snp.array(fortran, order="K"), shift, axis)
    np.testing.assert_array_equal(np.asarray(got), expected, strict=True)
    assert got.flags.f_contiguous == expected.flags.f_contiguous


@pytest.mark.parametrize("axis", [3, -4])
def test_one_axis_roll_out_of_range_raises_numpys_error(snp: ModuleType, axis: int) -> None:  # noqa: F811
    array = np.zeros((2, 3, 4))
    with pytest.raises(np.exceptions.AxisError) as expected:
        np.roll(array, 1, axis)
    with pytest.raises(np.exceptions.AxisError) as got:
        snp.roll(snp.array(array), 1, axis)
    assert str(got.value) == str(expected.value)
