"""A loop that reaches the cluster as one long batch (planned an iteration at a time,
``shoal/cluster/segments.py``; halo rows travel in every iteration) whose iterations 17, 23 and
24 meet floating-point conditions on two lines: NumPy's warnings, one per iteration met, at
those lines, as under plain ``python``."""

import warnings

import numpy as np

grid = np.ones((256, 256))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for step in range(30):
        scale = 0.0 if step == 17 else 1.0
        grid[1:-1] = np.minimum(grid[:-2] / scale, 2.0) * 0.5 + 0.5
        z = np.log(grid[1:-1] * (0.0 if step in (23, 24) else 1.0))
    print("value", float(z[5:9].sum()), float(grid.sum()))
for warning in caught:
    print("W", warning.category.__name__, warning.message, warning.lineno)
