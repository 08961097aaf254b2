"""Random stencil programs whose temporaries are read several times, with shifted rows; run as
``python halo_fuzz.py SEED COUNT`` (NumPy) and under ``mpiexec -n N python -m shoal``. Prints
one digest of the final arrays per program."""

import hashlib
import sys

import numpy as np

real = sys.modules["numpy"]  # plain NumPy under Shoal too: it draws the programs
seed, count = int(sys.argv[1]), int(sys.argv[2])
for case in range(count):
    rng = real.random.default_rng(seed * 1000 + case)
    rows, columns = int(rng.integers(20, 90)), int(rng.integers(8, 40))
    g = np.array(rng.random((rows, columns)))
    h = np.array(rng.random((rows, columns)))
    for _ in range(int(rng.integers(1, 6))):
        a, b = (int(x) for x in rng.integers(0, 3, 2))
        c = int(rng.integers(1, 3))
        first = g[a : rows - 2 + a, 1:-1] + g[b : rows - 2 + b, :-2] * 0.5
        second = first[1:, :] - first[:-1, :] if rng.random() < 0.5 else first * 2.0
        third = h[c : c + second.shape[0], 1:-1] + second
        if rng.random() < 0.5:
            third = third + first[: third.shape[0]]
        g[1 : 1 + third.shape[0], 1:-1] = 0.25 * third + 0.5 * g[1 : 1 + third.shape[0], 1:-1]
        if rng.random() < 0.3:
            h[1:-1, 1:-1] = h[:-2, 1:-1] * 0.3 + h[2:, 1:-1] * 0.3 + g[1:-1, 1:-1] * 0.4
    final = real.ascontiguousarray(real.asarray(g)).tobytes() + real.ascontiguousarray(real.asarray(h)).tobytes()
    print(case, hashlib.sha1(final).hexdigest()[:16])
