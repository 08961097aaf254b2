"""Array programs whose results the cluster must give as NumPy does; run as ``python
differential.py OUT.npz`` (NumPy) and under ``mpiexec -n N python -m shoal`` (the cluster).

Sizes are odd (37 x 53, 1001) so that three ranks split every array unevenly, and a view's rows
cross the ranges of the ranks.
"""

import sys

import numpy as np

real = sys.modules["numpy"]  # plain NumPy under Shoal too: it writes the results
results = {}


def keep(name, value):
    results[name] = real.asarray(value)


rng = real.random.default_rng(7)
a = np.array(rng.random((37, 53)))
b = np.array(rng.random((37, 53)))
v = np.array(rng.random(1001))
ints = np.array(rng.integers(-50, 50, size=(37, 53)), dtype=np.int32)
row = np.array(rng.random(53))
col = np.array(rng.random(37))

# element-wise, broadcasting, dtypes
keep("arith", a * 2 + b / 3 - 1)
scanned = a * 1.0
np.cumsum(scanned, axis=0, out=scanned)  # gathered with out= its own input: the input was never fetched
strided = b * 1.0
np.cumsum(strided[:, :3], axis=0, out=strided[:, :3])
keep("scan_in_place", np.concatenate([scanned, strided], axis=1))
keep("half_mean", np.array([(a * 40000).astype(np.float16).mean(), np.full((37, 53), 0.5, dtype=np.float16).mean()]))  # float16 partials would overflow
keep("sin", np.sin(a) + np.exp(-b))
keep("where", np.where(a > b, a, b))
keep("mixed", ints * 2.5 + a)
keep("intdiv", ints // 7 + ints % 5)
keep("compare", (a < b) & (ints > 0))
keep("row", a + row)
keep("col", a * col[:, None])
keep("outer", col[:, None] * row[None, :])
keep("complex", (a + 1j * b) * (2 - 1j))

# views: stencils, reversed and strided, transposes
s = a.copy()
s[1:-1, 1:-1] = (s[:-2, 1:-1] + s[2:, 1:-1] + s[1:-1, :-2] + s[1:-1, 2:]) * 0.25
keep("stencil", s)
keep("reversed", a[::-1, ::-2] + b[::-1, ::-2])
keep("transpose", a.T + b.T * 2)
keep("transpose_mix", a[:37, :37].T + b[:37, :37])
keep("column", a[:, 5] * 3)

# in-place updates over overlapping views (NumPy reads every input first)
w = v.copy()
w[1:] += w[:-1]
keep("shift_add", w)
x = v.copy()
x[:-1] = x[1:]
keep("shift_left", x)
y = v.copy()
y[1:] = y[:-1] * 2
keep("shift_right", y)
z = a.copy()
z += z.T[:37, :37].sum()
keep("self_sum", z)
for _ in range(3):
    t = a.copy()
    t[1:-1] = 0.5 * (t[:-2] + t[2:])
keep("sweeps", t)

# reductions, scans, matmul
keep("sum", a.sum())
keep("sum0", a.sum(axis=0))
keep("sum1", b.sum(axis=1))
keep("mean", v.mean())
keep("max", a.max())
keep("argmax", a.argmax())
keep("argmax1", a.argmax(axis=1))
keep("argmin0", ints.argmin(axis=0))
keep("argmin1_kept", ints.argmin(axis=1, keepdims=True))
keep("prod_int", (ints % 3 + 1)[:5, :7].prod())
keep("any_all", np.array([(a > 0.99).any(), (a > -1).all()]))
keep("cumsum", v.cumsum())
keep("matmul", a @ b.T)
keep("dot", a.dot(row))

# creation and indexing
keep("arange", np.arange(1001) * 2)
keep("linspace", np.linspace(0, 1, 999))
keep("eye", np.eye(37, 53, 2) + a)
keep("full", np.full((37, 53), 3.5) - a)
keep("gather", a[[3, 30, 7], :])
keep("mask", a[a > 0.5])
g = a.copy()
g[[1, 20, 36]] = 7.0
keep("scatter", g)
keep("sort", np.sort(v))
keep("scalar", np.array([float(a[3, 4]), float(v[1000]), float(a[36, 52])]))

real.savez(sys.argv[1], **results)
print(f"cases: {len(results)}")
