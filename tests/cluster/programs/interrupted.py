"""A stencil loop that reads a value every few steps (batches, fetches and commands to the other
ranks all the time); prints a line once the cluster runs, then loops until it is interrupted."""

import numpy as np

a = np.random.default_rng(0).random((600, 600))
total = 0.0
for step in range(10**7):
    a = 0.25 * (np.roll(a, 1, 0) + np.roll(a, -1, 0) + np.roll(a, 1, 1) + np.roll(a, -1, 1))
    if step % 3 == 0:
        total += float(a[5, 5])
    if step == 2:
        print("running", flush=True)
print(total)
