"""An LU factorisation without pivoting, written as NumPy slices: a triangular loop whose work
shrinks to the bottom-right corner, so a layout of one range of rows per rank leaves the first
ranks idle (paper 003's block-cyclic distribution keeps every rank busy).
Run as ``python lu_like.py N [STEPS]``; prints a checksum of the factors."""

import sys

import numpy as np

n = int(sys.argv[1]) if len(sys.argv) > 1 else 400
steps = int(sys.argv[2]) if len(sys.argv) > 2 else n - 1
a = np.fromfunction(lambda i, j: ((i * 7 + j * 13) % 17) / 17.0, (n, n)) + n * np.eye(n)
for k in range(min(steps, n - 1)):
    a[k + 1 :, k : k + 1] /= a[k : k + 1, k : k + 1]
    a[k + 1 :, k + 1 :] -= a[k + 1 :, k : k + 1] * a[k : k + 1, k + 1 :]
print(f"checksum: {float(np.abs(a).sum())!r}")
