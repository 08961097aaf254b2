"""A program whose NumPy error comes from rank 0 at the user's line, then exits with 3 when asked."""

import sys

import numpy as np

a = np.ones((64, 64))
b = np.ones((64, 65))
try:
    a + b
except ValueError as error:
    print(f"caught: {error}")
print(f"checksum: {float((a * 3).sum())!r}")
if sys.argv[1:] == ["exit"]:
    sys.exit(3)
if sys.argv[1:] == ["raise"]:
    (a @ b.T)[0, 0] + (a[0] @ b[:, :10])
