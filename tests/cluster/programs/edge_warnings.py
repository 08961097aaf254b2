"""Floating-point warnings met only in rows that read another rank's rows, in a sweep written
over two lines: run as ``python edge_warnings.py`` and under ``mpiexec -n 2 python -m shoal``
with interiors first, each warning must name the line NumPy names."""

import warnings

import numpy as np

warnings.simplefilter("default", RuntimeWarning)  # shown once per line, under python -W error too
g = np.ones((200, 300))
g[101] = 1e307  # the first sweep makes rank 1's first row 1e308; in the second rank 0 reads it in its last row
for _ in range(2):
    g[1:-1] = (g[:-2] * 0.0
               + g[2:] * 10.0)
print("infinite", int(np.isinf(g).sum()), "nan", int(np.isnan(g).sum()))
