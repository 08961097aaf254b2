"""Small NumPy constants combined with a distributed field in a loop; run as ``python
small_constants.py OUT.npz`` (NumPy) and under ``mpiexec -n N python -m shoal`` (the cluster).

Under the cluster tests' settings every array is lazy, so ``VELOCITY`` and ``weights`` are small
bases that come with data: each rank keeps a copy, until the program writes ``weights`` in a
later batch (from then on it is rank 0's alone). The field must be NumPy's bit for bit, the sums to the last bits."""

import sys

import numpy as np

real = sys.modules["numpy"]  # plain NumPy under Shoal too: it writes the results

VELOCITY = np.array([0.0, 1.0, -1.0, 0.5])
MIX = np.array([[1.0, 0.5, 0.25, 0.125], [0.0, 1.0, 0.0, -1.0], [0.5, 0.5, 0.5, 0.5]])
weights = np.array([0.25, 0.5, 0.125, 0.125])
field = np.cos(np.arange(4 * 300 * 200) * 0.01).reshape(4, 300, 200)
totals = []
for step in range(6):
    field = field * VELOCITY[:, np.newaxis, np.newaxis] + weights[:, np.newaxis, np.newaxis] * np.sin(field)
    totals.append(float(np.sum(field * weights[:, np.newaxis, np.newaxis])))  # read: each step is a batch of its own
    if step == 0:
        early = MIX @ field.reshape(4, -1)  # a matrix product reading the copy every rank keeps
    if step == 2:
        weights[1] = 0.75  # written: rank 0's alone from now on
        weights *= 1.5
projected = weights @ field.reshape(4, -1)  # a product of the small base and the field
np.savez(
    sys.argv[1],
    field=real.asarray(field),
    totals=real.asarray(totals),
    projected=real.asarray(projected),
    early=real.asarray(early),
    weights=real.asarray(weights),
)
