"""A program that keeps the ranks busy long enough for a test to kill one of them."""

import numpy as np

a = np.ones((400, 400))
print(f"first: {float(a.sum())!r}", flush=True)
for _ in range(2000):
    a = a * 1.0001 + 1
    float(a[200, 200])
print(f"last: {float(a.sum())!r}", flush=True)
