"""A stencil loop whose ranks exchange halo rows of 1,448 doubles (sent by copy from the receiver,
so a send is still under way after it is posted) while each computes about a million elements a
sweep: long enough for a test to kill a rank while another tests its sends from a thread."""

import numpy as np

grid = np.ones((1448, 1448))
print(f"first: {float(grid.sum())!r}", flush=True)
for _ in range(3000):
    grid[1:-1, 1:-1] = 0.25 * (grid[:-2, 1:-1] + grid[2:, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:])
    float(grid[700, 700])
print(f"last: {float(grid.sum())!r}", flush=True)
