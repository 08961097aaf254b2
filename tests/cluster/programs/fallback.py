"""A cluster program with an operation the cluster runs gathered: its warning names this line."""

import numpy as np

values = np.arange(200_000, dtype=np.float64)[::-1] * 0.5
ordered = np.sort(values)
print("first:", float(ordered[0]))
