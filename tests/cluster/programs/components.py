"""Arrays that lead with a few components over a grid (lattice Boltzmann's populations) across the
ranks; run as ``python components.py OUT.npz`` (NumPy) and under ``mpiexec -n N python -m shoal``.

The grid is 61 x 37 so that three ranks split it unevenly; the components stay together on each
rank, so indexing them (``f[perm]``) runs where the result lives.
"""

import sys

import numpy as np

real = sys.modules["numpy"]  # plain NumPy under Shoal too: it writes the results
results = {}


def keep(name, value):
    results[name] = real.asarray(value)


rng = real.random.default_rng(11)
f = np.array(rng.random((5, 61, 37)))
w = np.array(rng.random((61, 37)))
perm = real.array([0, 3, 4, 1, 2])
VELOCITY = real.array([0, 1, -1, 1, 0])

keep("permuted", f[perm])
keep("listed", f[[4, 2, 0, 1, 3]])
keep("repeated", f[real.array([4, 4, 0, -1])])
keep("longer", f[real.array([0, 1, 2, 3, 4, 4, 3, 2, 1, 0, 2, 2])])
keep("lazy_index", f[np.array(perm)])
keep("sum0", np.sum(f, axis=0))
keep("weighted", np.sum(f * VELOCITY[:, None, None], axis=0) / np.sum(f, axis=0))
rolled = f.copy()
for i in range(5):
    rolled[i] = np.roll(rolled[i], (i % 3 - 1, 1 - i % 3), axis=(0, 1))
keep("rolled", rolled)
keep("where", np.where(w > 0.5, f[perm], f * 2))
keep("with_grid", f + w)
keep("argmax0", np.argmax(f, axis=0))
keep("argmin0", f.argmin(axis=0, keepdims=True))
keep("argmax_last", np.argmax(f[perm] * 2.0, axis=-3))
state = f.copy()
for _ in range(3):  # a lattice-Boltzmann-like step: stream, sum, relax, bounce back
    for i in range(5):
        state[i] = np.roll(state[i], (VELOCITY[i], -VELOCITY[i]), axis=(0, 1))
    density = np.sum(state, axis=0)
    relaxed = state - (state - density / 5) * 0.6
    state = np.where(w < 0.2, state[perm], relaxed)
keep("steps", state)

real.savez(sys.argv[1], **results)
print(f"cases: {len(results)}")
