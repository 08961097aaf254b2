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
