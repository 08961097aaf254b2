"""Reductions whose results the cluster must give as NumPy does; run as ``python reductions.py
OUT.npz`` (NumPy) and under ``mpiexec -n N python -m shoal`` (the cluster).

Shapes are odd so that three ranks split every array unevenly; a reshaped view cuts the ranks'
ranges in the middle of its rows, so partials of different ranks meet in parts of the output.
"""

import sys

import numpy as np

real = sys.modules["numpy"]  # plain NumPy under Shoal too: it writes the results
results = {}


def keep(name, value):
    results[name] = real.asarray(value)


rng = real.random.default_rng(11)
f = np.array(rng.standard_normal((41, 29)))
f32 = np.array(rng.standard_normal((41, 29)), dtype=np.float32)
cube = np.array(rng.standard_normal((9, 7, 11)))
i8 = np.array(rng.integers(-128, 127, size=(41, 29)), dtype=np.int8)
i64 = np.array(rng.integers(-(2**40), 2**40, size=(41, 29)), dtype=np.int64)
u = np.array(rng.integers(0, 2**32, size=(41, 29), dtype=np.uint64), dtype=np.uint64)
flags = np.array(rng.random((41, 29)) > 0.3)
long = np.array(rng.integers(-9, 9, size=1189), dtype=np.int32)

for axis in (None, 0, 1, (0, 1), -1):
    label = "all" if axis is None else str(axis).replace(" ", "")
    keep(f"f_sum_{label}", f.sum(axis=axis))
    keep(f"f_mean_{label}", f.mean(axis=axis))
    keep(f"f_min_{label}", f.min(axis=axis))
    keep(f"f_max_{label}", f.max(axis=axis))
    keep(f"f32_sum_{label}", f32.sum(axis=axis))
    keep(f"i8_sum_{label}", i8.sum(axis=axis))
    keep(f"i8_sum8_{label}", i8.sum(axis=axis, dtype=np.int8))  # wraps around as NumPy's
    keep(f"i8_prod_{label}", (i8 % 3 + 1).prod(axis=axis, dtype=np.int8))
    keep(f"i64_sum_{label}", i64.sum(axis=axis))
    keep(f"i64_prod_{label}", (i64 % 5).prod(axis=axis))
    keep(f"i64_min_{label}", i64.min(axis=axis))
    keep(f"u_max_{label}", u.max(axis=axis))
    keep(f"u_sum_{label}", u.sum(axis=axis))
    keep(f"b_sum_{label}", flags.sum(axis=axis))
    keep(f"b_any_{label}", (f > 2.5).any(axis=axis))
    keep(f"b_all_{label}", (f > -3.5).all(axis=axis))
    keep(f"b_min_{label}", flags.min(axis=axis))

keep("keep_sum", i64.sum(axis=0, keepdims=True))
keep("keep_max", f.max(axis=1, keepdims=True))
keep("keep_all", f.sum(keepdims=True))
for axis in (None, 0, 1, 2, (0, 2), (1, 2)):
    label = "all" if axis is None else str(axis).replace(" ", "")
    keep(f"cube_sum_{label}", cube.sum(axis=axis))
    keep(f"cube_max_{label}", cube.max(axis=axis))
# a reshaped view whose rows cross the ranks' ranges in the middle
keep("reshaped_sum0", long.reshape(29, 41).sum(axis=0))
keep("reshaped_sum1", long.reshape(29, 41).sum(axis=1))
keep("reshaped_prod", (long.reshape(41, 29) % 2 + 1).prod(axis=0))
keep("strided", i64[::3, 1::2].sum(axis=0))
keep("transposed", i64.T.sum(axis=1))
# outputs large enough to be distributed themselves: each part goes straight to its owner
stack = np.array(rng.standard_normal((5, 40, 30)))
istack = np.array(rng.integers(-(2**20), 2**20, size=(5, 40, 30)), dtype=np.int64)
keep("scatter_sum0", stack.sum(axis=0))
keep("scatter_mean0", stack.mean(axis=0))
keep("scatter_max0_keep", stack.max(axis=0, keepdims=True))
keep("scatter_isum0", istack.sum(axis=0))
keep("scatter_iprod0", (istack % 3 - 1).prod(axis=0))
keep("scatter_sum2", stack.sum(axis=2))
keep("scatter_wide", np.array(rng.standard_normal((7, 400))).sum(axis=0))
keep("scatter_reshaped", istack.reshape(40, 150).sum(axis=0))
keep("nan", np.where(f > 2.0, np.nan, f).max(axis=0))
print("cases:", len(results))
real.savez(sys.argv[1], **results)
