"""Random draws that the cluster distributes; run as ``python draws.py OUT.npz`` (NumPy) and under
``mpiexec -n N python -m shoal`` (the cluster), where other ranks draw their parts of the PCG64
draws themselves. Every array must be NumPy's, bit for bit."""

import sys

import numpy as np

real = sys.modules["numpy"]  # plain NumPy under Shoal too: it writes the results
rng = np.random.default_rng(7)
rng.integers(0, 9, size=3, dtype=np.uint32)  # half a 64-bit output left buffered
results = {
    "grid": rng.random((37, 23)),
    "wide": rng.uniform(-2.0, 3.0, 1201),
    "narrow": rng.uniform(5, 6, size=(3, 401)),
    "keywords": rng.uniform(high=2.5, low=-1.0, size=999),
}
spoiled = rng.random(999)
spoiled[-5] = 2.0  # written before the array reaches the cluster: its data goes as bytes
results["spoiled"] = spoiled * 1.0  # computed where its parts live
results["float32"] = rng.random(777, dtype=np.float32)
results["bounds"] = rng.uniform(np.zeros(300), 1.0)
results["legacy"] = np.random.RandomState(2).random_sample((41, 29))
results["dxsm"] = np.random.Generator(np.random.PCG64DXSM(4)).random(2001)
misaligned = rng.random((40, 30))
results["misaligned"] = misaligned[1:, :] * 3.0  # laid out by its first view, a slice: not as announced
results["after"] = rng.random(50)  # the generator goes on from NumPy's state
results["scaled"] = results["grid"] * 2.0 + results["wide"][:23]
np.savez(sys.argv[1], **{name: real.asarray(value) for name, value in results.items()})
print("cases:", len(results))
