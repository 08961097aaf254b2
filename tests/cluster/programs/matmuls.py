"""Matrix products of distributed matrices; run as ``python matmuls.py OUT.npz`` (NumPy) and under
``mpiexec -n N python -m shoal`` (the cluster). Odd and non-square shapes split unevenly over
three ranks; a strided and a transposed operand cut the ranks' ranges across their rows."""

import sys

import numpy as np

real = sys.modules["numpy"]  # plain NumPy under Shoal too: it writes the results
results = {}


def keep(name, value):
    results[name] = real.asarray(value)


rng = real.random.default_rng(5)
a = np.array(rng.standard_normal((47, 31)))
b = np.array(rng.standard_normal((31, 53)))
square = np.array(rng.standard_normal((40, 40)))
vector = np.array(rng.standard_normal(31))
ia = np.array(rng.integers(-1000, 1000, size=(47, 31)), dtype=np.int64)
ib = np.array(rng.integers(-1000, 1000, size=(31, 53)), dtype=np.int64)
i32 = np.array(rng.integers(-(2**20), 2**20, size=(31, 53)), dtype=np.int32)  # products wrap
ba = np.array(rng.random((47, 31)) > 0.8)
bb = np.array(rng.random((31, 53)) > 0.8)
tall = np.array(rng.standard_normal((301, 7)))
wide = np.array(rng.standard_normal((7, 301)))

keep("rect", a @ b)
keep("square", square @ square)
keep("square_dot", np.dot(square, square.T.copy()))
keep("matvec", a @ vector)
keep("dot_vec", a.dot(vector))
keep("int", ia @ ib)
keep("int32_wraps", ia.astype(np.int32) @ i32)
keep("bool", ba @ bb)
keep("mixed", ia @ b)
keep("outer_like", tall @ wide)
keep("inner_like", wide @ tall)
keep("strided", a[::2, 1:] @ b[1:, ::3])
keep("transposed", b.T @ a.T)
keep("chain", (a @ b) @ (b.T @ vector))
print("cases:", len(results))
real.savez(sys.argv[1], **results)
