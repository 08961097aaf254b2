"""A NumPy program that catches the errors of array work and goes on with its arrays.

Run as ``python caught_errors_program.py`` it is the reference; the tests run it under
``python -m shoal`` in this process's engine, through a server and across MPI ranks, and compare
what it prints. Each case computes independent work before the failing call (in the same batch),
catches NumPy's error, computes more on the arrays made before it, and prints checksums.
"""

import numpy as np

N = 96  # matrices N x N
M = 1 << 14  # vectors
found = []


def show(*values):
    print(*(f"{float(value):.10g}" for value in values))


def linalg_errors():
    rng = np.random.default_rng(7)
    a = rng.random((N, N))
    singular = np.ones((N, N))
    indefinite = -np.eye(N) + 0.25
    before = np.sin(a) + a.T  # recorded with the failing call, before it
    product = a @ a.T
    scaled = singular * 3.0
    for name, call in (
        ("inv", lambda: np.linalg.inv(scaled)),
        ("solve", lambda: np.linalg.solve(scaled, before[:, 0])),
        ("cholesky", lambda: np.linalg.cholesky(indefinite * 2.0)),
    ):
        kept = before * 2.0 - product
        try:
            call()
            found.append(f"{name}: no error")
        except np.linalg.LinAlgError as error:
            found.append(f"{name}: {error}")
        after = kept + scaled
        show(before.sum(), product.sum(), scaled.sum(), kept.sum(), after[3].sum())
    fixed = np.linalg.pinv(scaled)  # the fallback a program takes, on the same array
    show(fixed.sum(), np.linalg.inv(product + np.eye(N)).trace())


def floating_point_errors():
    a = np.linspace(-1.0, 1.0, M)
    b = a * 3.0 + 1.0
    zero = a - a
    with np.errstate(all="raise"):
        c = b + 1.0
        try:
            d = b / zero
        except FloatingPointError as error:
            found.append(f"errstate: {error}")
            d = b
        e = c * 2.0
    try:
        with np.errstate(invalid="raise"):
            np.sqrt(zero - 1.0)
    except FloatingPointError as error:
        found.append(f"errstate: {error}")
    show(c.sum(), d.sum(), e.sum(), (b + c).sum())


def index_errors():
    a = np.arange(M, dtype=np.float64)
    twice = (a * 2.0).astype(np.int64)  # half of it out of range
    kept = a + 1.0
    try:
        a[twice]
    except IndexError as error:
        found.append(f"index: {error}")
    try:
        kept[twice] = 0.0
    except IndexError as error:
        found.append(f"index: {error}")
    show(a[twice // 2].sum(), kept.sum(), np.take(kept, twice, mode="clip").sum())


def shape_errors():
    a = np.arange(M, dtype=np.float64).reshape(-1, 64)
    b = a[:, ::-1] * 0.5
    try:
        a + np.ones(65)
    except ValueError as error:
        found.append(f"shape: {error}")
    try:
        a @ b
    except ValueError as error:
        found.append(f"shape: {error}")
    show((a + b).sum(), (a @ b.T).trace())


def moved_rows():
    """Work that needs other ranks' rows (shifted and reversed slices) recorded before a failing
    call: at a rank it may come after that call, waiting for its messages."""
    a = np.arange(N * 64, dtype=np.float64).reshape(N, 64)
    shifted = a[1:] + a[:-1]
    reversed_rows = shifted[::-1] * 2.0
    singular = np.ones((N, N)) * 1.0
    try:
        np.linalg.inv(singular)
    except np.linalg.LinAlgError as error:
        found.append(f"rows: {error}")
    later = reversed_rows[5:] - shifted[:-5]
    show(shifted.sum(), reversed_rows[:7].sum(), reversed_rows[-3:].sum(), later.sum())


for case in (linalg_errors, floating_point_errors, index_errors, shape_errors, moved_rows):
    case()
for line in found:
    print("caught", line)
