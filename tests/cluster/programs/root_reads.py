"""Reads at rank 0 in a loop; run as ``python root_reads.py OUT.npz`` (NumPy) and under ``mpiexec
-n N python -m shoal`` (the cluster). A reduction's result lives on rank 0, so reading it takes no
other rank; an element of a distributed grid does. The grid must be NumPy's bit for bit, the sums to the last bits."""

import sys

import numpy as np

real = sys.modules["numpy"]  # plain NumPy under Shoal too: it writes the results
ROOT_READS = 12  # the loop's tests of its reduced change
GRID_READS = 3  # elements of the grid read as Python floats

grid = np.cos(np.arange(600 * 400) * 0.37).reshape(600, 400)
changes = []
change = 1.0
sweeps = 0
while change > 1e-12 and sweeps < ROOT_READS:  # read at rank 0 each time, as a solver tests convergence
    new = grid.copy()
    new[1:-1, 1:-1] = 0.25 * (grid[:-2, 1:-1] + grid[2:, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:])
    change = np.sum(np.abs(new - grid)) / grid.size
    changes.append(change)
    grid = new
    sweeps += 1
corners = [float(grid[-1, -1]), float(grid[0, 0]), float(grid[300, 7])]
assert len(corners) == GRID_READS
np.savez(sys.argv[1], grid=real.asarray(grid), changes=real.asarray([float(value) for value in changes]), corners=real.asarray(corners))
print("reads:", ROOT_READS, GRID_READS)
