"""``np.where`` over million-element masks in a loop, one just recorded and one settled; run as
``python large_masks.py OUT.npz`` (NumPy) and under ``mpiexec -n N python -m shoal`` (the
cluster). A mask is small by its bytes and large by its elements: the ranks compute with it where
it lives, nothing is fetched whole to rank 0. The arrays must be NumPy's bit for bit, the means to the last bits."""

import sys

import numpy as np

real = sys.modules["numpy"]  # plain NumPy under Shoal too: it writes the results
x = np.cos(np.arange(1 << 20) * 0.37)
fixed = np.sin(np.arange(1 << 20) * 0.11) < 0.5
print("fixed:", int(np.sum(fixed)))  # computed and settled before the loop reads it
means = []
for _ in range(4):
    y = np.where(x < 0.0, 1.0 - x, x * 0.5)  # a mask just recorded
    y = np.where(fixed, y, -y)  # a settled one
    means.append(np.mean(y))
    x = x + 0.1
np.savez(sys.argv[1], y=real.asarray(y), means=real.asarray([float(value) for value in means]))
print("steps:", len(means))
