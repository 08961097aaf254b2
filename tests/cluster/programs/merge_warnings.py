"""Sums whose partial results meet a condition only where the ranks merge them: NumPy's warning
("... encountered in reduce") at the summing line, as under plain ``python``."""

import warnings

import numpy as np

N = 1 << 20  # lazy at the default threshold too
halves = np.ones(N)
halves[: N // 2] = np.inf
halves[N // 2 :] = -np.inf  # each rank's part sums to +inf or -inf; their sum is invalid
ends = np.zeros(N)
ends[0] = ends[-1] = 1.5e308  # each part is finite; their sum overflows

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    print("sums", float(halves.sum()), float(ends.sum()), float(np.sum(ends * 1.0)))
for warning in caught:
    print("W", warning.category.__name__, warning.message, warning.lineno)
