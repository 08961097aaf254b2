"""Paper 003's Figure 6: each rank's receive waits on a send that its peer can only make after
its own receive has finished, a step later. A naive evaluation (all ready work first, then block
on every receive) deadlocks in the first step; the flush must not.

Two arrays are split over the ranks; every step moves each array's halves across the ranks, in
opposite directions, and each move reads what the previous one wrote.
"""

import sys

import numpy as np

n = int(sys.argv[1]) if len(sys.argv) > 1 else 4000
half = n // 2
x = np.arange(n, dtype=np.float64)
y = np.arange(n, dtype=np.float64)[::-1].copy()
for step in range(6):
    y[:half] = x[half:] * 0.5 + step  # rank 0's part of y needs rank 1's part of x
    x[half:] = y[:half] + 1.0  # ... which rank 1 writes next from rank 0's part of y
    x[:half] = y[half:] - x[half:]  # and the other way round
    y[half:] = x[:half] * 2.0
print(f"checksum: {float(x.sum() + y.sum())!r}")
print(f"probe: {float(x[1])!r} {float(y[n - 2])!r}")
