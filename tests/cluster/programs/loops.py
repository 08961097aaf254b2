"""Loops that reach the cluster as one long batch each: run as ``python loops.py KIND OUT.npz``
(NumPy) and under ``mpiexec -n N python -m shoal`` (the cluster), which plans such a batch one
iteration at a time (``shoal/cluster/segments.py``). ``KIND`` is ``sweeps`` (an in-place stencil:
halo rows travel every iteration) or ``means`` (element-wise work and two means a day: only
reductions' results travel) or ``rounds`` (the sweeps' loop again and again, a value read after
each round: later rounds reach the other ranks as the number of a cut kept by every rank,
``shoal/cluster/split_plans.py``)."""

import sys

import numpy as np

real = sys.modules["numpy"]  # plain NumPy under Shoal too: it writes the results
kind, out = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(5)
results = {}
if kind == "sweeps":
    grid = rng.random((96, 80))
    for step in range(24):
        grid[1:-1, 1:-1] = 0.2 * (grid[1:-1, 1:-1] + grid[:-2, 1:-1] + grid[2:, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:])
        if step == 11:
            grid[40:50, ::7] = -grid[40:50, ::7]  # an iteration unlike the others
    results["grid"] = grid
elif kind == "rounds":
    grid = rng.random((96, 80))
    sums = []
    for round_ in range(8):
        factor = 0.2 - round_ / 1024.0  # a constant that changes every round
        for _ in range(16):
            grid[1:-1, 1:-1] = factor * (grid[1:-1, 1:-1] + grid[:-2, 1:-1] + grid[2:, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:])
        sums.append(float(grid.sum()))
    results["grid"] = grid
    results["sums"] = np.array(sums)
else:
    spot = rng.uniform(10.0, 100.0, 6000)
    strike = rng.uniform(10.0, 100.0, 6000)
    total = 0.0
    for day in range(24):
        years = 2.0 - day / 365.0
        value = np.maximum(spot * np.exp(-0.01 * years) - strike, 0.0)
        other = np.sqrt(spot * strike) / (1.0 + years)
        total += np.mean(value) + np.mean(other)
    results["total"] = np.array(total)
    results["value"] = value
np.savez(out, **{name: real.asarray(value) for name, value in results.items()})
print("cases:", len(results))
