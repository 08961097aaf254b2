"""Stencils whose halos go stale in every way: run as ``python halo_stencils.py OUT.npz [CASES]``
(NumPy) and under ``mpiexec -n N python -m shoal`` with ``SHOAL_CLUSTER_HALO`` (the cluster);
``CASES``, names separated by commas, runs only those cases (all by default).

Grids of odd sizes (three ranks split them unevenly), a square one that came from Python (its
rows are guessed), reaches of one and two rows, sweeps in place and into a second grid, a row
shift that reads further than the halo, a one-dimensional stencil, writes that are not
element-wise (a gathered sort, a reduction into a view) between the sweeps, and stencils written
with ``np.roll`` (game of life's rolls of rolls, a five-point one).
"""

import sys

import numpy as np

real = sys.modules["numpy"]  # plain NumPy under Shoal too: it writes the results
results = {}
chosen = set(sys.argv[2].split(",")) if len(sys.argv) > 2 else None


def wanted(case):
    return chosen is None or case in chosen


def keep(name, value):
    results[name] = real.asarray(value)


rng = real.random.default_rng(11)
square = np.array(rng.random((64, 64)))  # from Python: its rows are known only by its size
tall = np.array(rng.random((67, 31)))
line = np.array(rng.random(4099))
life_cells = rng.random((67, 31)) < 0.3

if wanted("jacobi"):
    g = square.copy()
    for _ in range(7):
        g[1:-1, 1:-1] = 0.2 * (g[1:-1, 1:-1] + g[:-2, 1:-1] + g[2:, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:])
    keep("jacobi", g)
    keep("jacobi_sum", g.sum())

if wanted("wide"):
    t = tall * 1.0
    for step in range(5):
        t[2:-2] = (t[:-4] + t[4:]) * 0.5 - t[2:-2] * (0.1 * step)  # a reach of two rows
        keep(f"wide_{step}", t[30:40].copy())  # a copy: NumPy would keep a view of t
    keep("wide", t)

if wanted("pingpong"):
    u = tall + 0.0
    w = np.zeros_like(tall)
    for _ in range(4):  # two grids in turn
        w[1:-1] = u[:-2] + u[2:]
        u[1:-1] = w[1:-1] * 0.5
    keep("pingpong", u)

if wanted("far"):
    r = square * 2.0
    for _ in range(3):
        r[10:] = r[:-10] + 1.0  # reads ten rows up: further than any halo here
        r[1:-1] = (r[:-2] + r[2:]) * 0.5
    keep("far", r)

if wanted("resorted"):
    s = tall * 1.0
    for step in range(3):
        s[1:-1] = s[:-2] * 0.25 + s[2:] * 0.75
        s[step * 7 : step * 7 + 9] = np.sort(s[step * 7 : step * 7 + 9], axis=0)  # written gathered
        s[1:-1] = s[1:-1] + s[2:]
    keep("resorted", s)

if wanted("line"):
    v = line * 1.0
    for _ in range(6):
        v[1:-1] = (v[:-2] + v[1:-1] + v[2:]) / 3.0
    keep("line", v)

if wanted("life"):
    life = np.array(life_cells.astype(real.int8))
    for _ in range(3):  # rolls of rolls: one padded grid a generation (shoal/rolled_reads.py)
        n = sum(np.roll(np.roll(life, i, 0), j, 1) for i in (-1, 0, 1) for j in (-1, 0, 1) if (i, j) != (0, 0))
        life = ((n == 3) | ((life == 1) & (n == 2))).astype(np.int8)
    keep("life", life)

if wanted("rolled"):
    p = square * 1.0
    for _ in range(3):
        p = 0.25 * (np.roll(p, 1, 0) + np.roll(p, -1, 0) + np.roll(p, 1, 1) + np.roll(p, -2, 1))
    keep("rolled", p)

print("cases:", len(results))
real.savez(sys.argv[1], **results)
