"""Temporaries whose rows live on one rank that is not rank 0 (kept beside the rows of their
operand), reduced, sorted, multiplied and read: prints what NumPy prints."""

import numpy as np

a = np.ones((120, 100))
print(float((a[:40] * 2 + a[80:]).sum()), float((a[80:] + a[:40] * 2).sum()))
b = np.arange(12_000, dtype=np.float64).reshape(120, 100)
print(float((b[:60] * 2 + b[60:]).sum()), (b[:40] * 2 + b[80:]).sum(axis=1)[::7])
t = b[:40] * 2 + b[80:]
print(float(t.max()), float(t.mean()), int(t.argmax()), t[3, 4], np.sort(t[:, 5])[:3])
print(float(t @ np.ones(100) @ np.ones(40)))
c = np.empty((2, 100, 100))
c[0] = 1.5
c[1] = 2.5
print(float((c[0] * 2 + c[1]).sum()))
i, j = np.indices((120, 100))
print(int((i[:40] * 2 + j[80:]).sum()), int((i[:40] * 2 + j[80:]).sum(axis=0)[::9].sum()))
