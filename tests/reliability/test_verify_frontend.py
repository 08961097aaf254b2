"""NumPy calls whose batches sit at the edges of the verifier's rules run on both engines,
verified, with NumPy's results: the rules reject lying batches, never an honest program.

(Every other frontend test verifies its batches too: the suite sets ``SHOAL_VERIFY=1`` and both
engines verify at ``execute``.)"""

from __future__ import annotations

import numpy as np
import pytest
from numpy_fixtures import check_same

INDEX = np.array([3, 1, 2])


def _into(out_shape, function):
    def run(xp, *inputs):
        out = xp.zeros(out_shape)
        function(xp, out, *inputs)
        return out

    return run


CASES = {
    "ufunc out= of more dimensions": (_into((3, 6), lambda xp, out, a: xp.add(a, 1.0, out=out)), np.arange(6.0)),
    "ufunc out= from a scalar-shaped input": (_into((6,), lambda xp, out, a: xp.negative(a, out=out)), np.ones(1)),
    "ufunc out= with where=": (_into((6,), lambda xp, out, a: xp.add(a, 1, out=out, where=a > 2)), np.arange(6.0)),
    "sum into keepdims out=": (_into((1, 4), lambda xp, out, a: xp.sum(a, axis=0, keepdims=True, out=out)), np.ones((3, 4))),
    "arange with a float step": (lambda xp: xp.arange(0, 1, 0.15),),
    "arange counting down": (lambda xp: xp.arange(10, 0, -1.5),),
    "linspace without its end": (lambda xp: xp.linspace(0, 1, 7, endpoint=False),),
    "eye off the diagonal": (lambda xp: xp.eye(4, 6, k=3),),
    "consecutive advanced indices": (lambda xp, a: a[:, INDEX, 1], np.arange(120.0).reshape(4, 5, 6)),
    "separated advanced indices": (lambda xp, a: a[INDEX, :, INDEX], np.arange(120.0).reshape(4, 5, 6)),
    "an int and an array": (lambda xp, a: a[0, :, INDEX], np.arange(120.0).reshape(4, 5, 6)),
    "newaxis and ellipsis": (lambda xp, a: a[None, INDEX, ..., None], np.arange(120.0).reshape(4, 5, 6)),
    "boolean mask": (lambda xp, a: a[a % 3 == 0], np.arange(30.0)),
    "scatter of rows": (lambda xp, a: a.__setitem__(INDEX, xp.arange(6.0)) or a, np.zeros((4, 6))),
    "sort kind by its first letter": (lambda xp, a: xp.sort(a, kind="Stable"), np.arange(9.0)[::-1]),
    "partition by several kth": (lambda xp, a: xp.partition(a, [1, 5]), np.arange(9.0)[::-1]),
    "take_along_axis": (lambda xp, a: xp.take_along_axis(a, np.zeros((4, 1), int), axis=1), np.arange(24.0).reshape(4, 6)),
    "sum of a broadcast view": (lambda xp, a: xp.broadcast_to(a, (5, 6)).sum(), np.arange(6.0)),
    "reduce by a ufunc": (lambda xp, a: xp.maximum.reduce(a, axis=1), np.arange(24.0).reshape(4, 6)),
    "reversed view": (lambda xp, a: a[::-1][1:4] * 2, np.arange(9.0)),
    "reinterpreted dtype": (lambda xp, a: a.view(np.int64) + 0, np.arange(4.0)),
    "empty arrays": (lambda xp, a: a.sum(axis=0), np.ones((0, 3))),
}  # fmt: skip


@pytest.mark.parametrize("name", list(CASES))
def test_honest_batches_pass_verification_and_match_numpy(snp, name):
    operation, *inputs = CASES[name]
    check_same(snp, operation, *inputs)
