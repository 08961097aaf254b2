"""NumPy idioms as users write them (fifty-six), at sizes where Shoal's defaults make arrays lazy.

Most differential tests make every array lazy and round-trip every batch through the wire format
(``SHOAL_VERIFY=1``), which hands the engine copies. Here the runtime runs as ``python -m shoal``
does: default thresholds (arrays from 2^19 elements lazy, smaller ones NumPy's), default block
size (several tiles per block), batches handed over as recorded. Each idiom runs inside a
function, so that its arrays die inside their own batch, and is called three times (plans and
memory reused). Its result must be NumPy's: integers exactly, floating values within a few ulps
of summation order.

An accumulator of zeros returned as ``acc.sum()`` once summed leftover memory here (the planner
took an in-place input for a write); nothing else in the suite saw it.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy
import pytest
from numpy_fixtures import assert_same, needs_runtime

N = 1 << 20  # lazy by default, two blocks of 2^19 elements, tiles within each
SIDE = 1024  # SIDE x SIDE: the same

Idiom = Callable[[ModuleType, dict[str, numpy.ndarray]], Any]
IDIOMS: dict[str, Idiom] = {}


def idiom(function: Idiom) -> Idiom:
    IDIOMS[function.__name__] = function
    return function


@idiom
def accumulate_into_zeros(np, d):
    acc = np.zeros(N)
    for k in range(3):
        acc += np.sqrt(d["ones"] * k)
    return acc.sum()


@idiom
def accumulate_into_empty_after_fill(np, d):
    acc = np.empty(N)
    acc.fill(0.0)
    for k in range(3):
        acc[:] = acc + d["x"] * k
    return acc.sum()


@idiom
def rows_iterated(np, d):
    total = 0.0
    for row in d["grid"][:64]:
        total += row.max() - row.min()
    return total


@idiom
def row_sums_listed(np, d):
    grid = d["grid"] * 2.0
    return np.array([grid[i].sum() for i in range(0, SIDE, 16)])


@idiom
def growing_concatenation(np, d):
    out = np.zeros(0)
    for k in range(4):
        out = np.concatenate([out, np.sin(d["x"][: N // 4] * k)])
    return out


@idiom
def gather_by_indices(np, d):
    values = d["x"] * 3.0
    return values[d["indices"]] - values[d["indices"][::-1]]


@idiom
def masked_updates(np, d):
    a = d["x"].copy()
    for _ in range(3):
        a[a > 0.5] *= 0.9
        a[a < 0.1] += 0.05
    return a


@idiom
def chained_where(np, d):
    x = d["x"]
    for _ in range(5):
        x = np.where(x > 0.5, x * 0.5, x * 1.5 + 0.01)
    return x


@idiom
def standardized_columns(np, d):
    grid = d["grid"]
    return (grid - grid.mean(axis=0)) / grid.std(axis=0)


@idiom
def columns_normalized_in_place(np, d):
    grid = d["grid"].copy()
    for j in range(0, SIDE, 97):
        grid[:, j] = (grid[:, j] - grid[:, j].mean()) / grid[:, j].std()
    return grid


@idiom
def sorted_median(np, d):
    ordered = np.sort(d["x"] * 2.0 - 1.0)
    return ordered[N // 2], ordered[:10], ordered[-10:]


@idiom
def running_sums(np, d):
    running = np.cumsum(d["x"] - 0.5)
    return running[-1], running.max(), running[::4096]


@idiom
def scalar_reads(np, d):
    grid = d["grid"] + 1.0
    return sum(float(grid[i, (7 * i) % SIDE]) * float(grid[(7 * i) % SIDE, i]) for i in range(0, SIDE, 8))


@idiom
def random_walk(np, d):
    rng = np.random.default_rng(5)
    walk = np.zeros(N)
    for _ in range(3):
        walk += rng.random(N) - 0.5
    return walk


@idiom
def listed_prefix(np, d):
    doubled = d["x"] * 2 + 1
    return numpy.array(doubled[:100].tolist()), float(doubled.sum())


@idiom
def power_iteration(np, d):
    matrix = d["grid"]
    vector = d["grid"][0]
    for _ in range(5):
        vector = matrix @ vector
        vector = vector / np.linalg.norm(vector)
    return vector


@idiom
def histogram_of_products(np, d):
    counts, edges = np.histogram(d["x"] * 3.0, bins=17)
    return counts, edges


@idiom
def unique_counts(np, d):
    values, counts = np.unique(d["integers"] % 97, return_counts=True)
    return values, counts


@idiom
def stacked_rows(np, d):
    angles = d["grid"][0]
    return np.stack([np.sin(angles * k) for k in range(SIDE)])


@idiom
def clipped_growth(np, d):
    x = d["x"] - 0.5
    for _ in range(5):
        x = np.clip(x * 1.7, -0.4, 0.4)
    return x


@idiom
def differences_and_gradient(np, d):
    y = np.sin(d["x"] * 10.0)
    return np.diff(y * 2.0), np.gradient(y, 0.5), np.gradient(d["grid"], axis=0)


@idiom
def threshold_counts(np, d):
    return [int(np.count_nonzero(d["x"] > t)) + int((d["x"] < t / 2).sum()) for t in (0.1, 0.5, 0.9)]


@idiom
def rolled_stencil(np, d):
    u = d["grid"]
    for _ in range(3):
        u = 0.25 * (np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1))
    return u


@idiom
def rank_one_updates_from_numpy_vectors(np, d):
    a = d["grid"].copy()
    for k in range(4):
        a += 1e-3 * numpy.outer(d["vectors"][k], d["vectors"][k + 1])
    return a


@idiom
def numpy_operand_changed_after_use(np, d):
    a = d["grid"] * 1.0
    update = numpy.ones((SIDE, SIDE))
    a -= update
    before = a * 2.0
    update[...] = 100.0  # after the call: NumPy's results do not see it
    return before


@idiom
def writes_through_views(np, d):
    a = d["x"].copy()
    every_other = a[::2]
    every_other += 1.0
    a[1::2] *= 3.0
    return a


@idiom
def overlapping_shift(np, d):
    a = d["x"].copy()
    a[1:] = a[:-1]
    a[:-2] += a[2:]
    return a


@idiom
def added_to_own_transpose(np, d):
    a = d["grid"].copy()
    a += a.T
    return a


@idiom
def integer_arithmetic(np, d):
    small = d["integers"].astype(np.int32)
    wrapped = small * 70_000  # wraps around in int32, as in NumPy
    return wrapped, wrapped.astype(np.int64) // 7, (small % 5 == 0).sum()


@idiom
def scattered_adds(np, d):
    totals = np.zeros(N)
    np.add.at(totals, d["indices"][:1000], 1.0)
    return totals.sum(), totals[d["indices"][:10]]


@idiom
def swapped_rows(np, d):
    grid = d["grid"].copy()
    grid[[0, 1]] = grid[[1, 0]]
    grid[:, [2, 5]] = grid[:, [5, 2]]
    return grid[:3], grid[:, :6]


@idiom
def arg_extremes(np, d):
    grid = d["grid"] * 2.0 - 1.0
    rows = np.argmax(grid, axis=1)
    return rows, np.argmin(grid, axis=0), np.take_along_axis(grid, rows[:, None], axis=1)


@idiom
def sorted_by_keys(np, d):
    order = np.argsort(d["x"][: N // 4] * -1.0, kind="stable")
    return d["x"][: N // 4][order][:100], order[-100:]


@idiom
def rounded_conversions(np, d):
    scaled = d["x"] * 1000.0 - 500.0
    return np.round(scaled, 2), np.floor(scaled).astype(np.int32), np.trunc(scaled).astype(np.int16)


@idiom
def complex_values(np, d):
    z = d["x"] + 1j * d["x"][::-1]
    return np.abs(z * z), np.angle(z), (z.conj() * z).real.sum()


@idiom
def single_precision(np, d):
    x = d["x"].astype(np.float32)
    y = x * np.float32(3.0) + 1.0
    return y, (y / x).mean(dtype=np.float64)  # y's dtype (float32) is compared with it


@idiom
def reductions_keeping_axes(np, d):
    cube = d["x"].reshape(64, 128, 128)
    return cube.sum(axis=(0, 2), keepdims=True), cube.max(axis=1), cube.std(axis=-1, ddof=1)


@idiom
def outputs_given(np, d):
    a = d["x"].copy()
    b = d["x"][::-1].copy()
    np.add(a, b, out=a)
    np.multiply(a, 0.5, out=b)
    np.maximum(a, b, out=a)
    return a, b


@idiom
def accumulations(np, d):
    steps = d["x"][:4096] + 0.5
    return np.maximum.accumulate(steps[::-1]), np.cumprod(steps[:200]), np.minimum.reduce(d["grid"], axis=0)


@idiom
def reshaped_and_transposed(np, d):
    cube = d["x"].reshape(128, 64, 128)
    return cube.transpose(2, 0, 1).copy()[::7], cube.reshape(64, -1).T[:5]


@idiom
def padded_tiled_repeated(np, d):
    small = d["grid"][:100, :100]
    return np.pad(small * 2.0, ((3, 1), (0, 2)), mode="edge"), np.tile(small[:3], (2, 3)), np.repeat(small[:4], 3, axis=1)


@idiom
def strided_writes(np, d):
    grid = d["grid"].copy()
    grid[::3, ::2] = 0.0
    inner = grid[10:-10]
    every = inner[::2]
    every *= 2.0
    return grid


@idiom
def meshgrid_field(np, d):
    xs = np.linspace(-2.0, 2.0, SIDE)
    gx, gy = np.meshgrid(xs, xs)
    return np.exp(-(gx**2 + gy**2)) * np.cos(3.0 * gx)


@idiom
def division_by_zero_quietly(np, d):
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (d["x"] - 0.5) / np.floor(d["x"] * 2.0)
    return np.isfinite(ratio).sum(), np.nan_to_num(ratio, posinf=7.0, neginf=-7.0)


@idiom
def order_statistics(np, d):
    values = d["x"] * 3.0
    return np.median(values), np.percentile(values, [5, 50, 95]), np.searchsorted(np.sort(values[:1000]), [0.5, 1.5])


@idiom
def integer_division_signs(np, d):
    signed = d["integers"] - (1 << 19)
    return signed // 7, signed % 7, np.fmod(signed, 7), -signed // 3


@idiom
def selected_pieces(np, d):
    x = d["x"] * 4.0 - 2.0
    return np.select([x < -1.0, x > 1.0], [x * 2.0, x**2], default=0.0), np.clip(x, d["x"] - 1.0, d["x"])


@idiom
def broadcast_assignment(np, d):
    grid = np.zeros((SIDE, SIDE))
    grid[:, :] = d["grid"][0][None, :]
    grid[:, :10] += d["grid"][:, :1]
    return grid


@idiom
def einsum_products(np, d):
    grid = d["grid"]
    return np.einsum("ij,ij->i", grid, grid), np.einsum("ij->j", grid)


@idiom
def nan_ignoring_totals(np, d):
    with np.errstate(invalid="ignore"):
        logs = np.log(d["x"] - 0.3)  # NaN below 0.3
    return np.nansum(logs), np.nanprod(1.0 + logs[:5000] * 1e-3), np.nancumsum(logs)[::4096]


@idiom
def overlapping_in_place_updates(np, d):
    a = d["x"].copy()
    a[1:] += a[:-1]
    a[::-1] += a
    np.add(a[1:], a[:-1], out=a[:-1])
    a += a[::-1]
    return a


@idiom
def transposed_self_assignment(np, d):
    grid = d["grid"].copy()
    grid[:, :-1] = grid[:, 1:]
    grid.T[...] = grid * 0.5
    return grid


@idiom
def transposed_wide_elementwise(np, d):
    wide = d["x"].reshape(2, N // 2)  # at ranks, each column of wide.T spans two ranks
    tall = wide.T + 1.0
    return tall, (tall * wide.T).sum(axis=0), np.ascontiguousarray(wide.T)[::4096]


@idiom
def repeated_indices_in_place(np, d):
    counts = np.zeros(N)
    counts[d["indices"][:1000] % 100] += 1.0  # buffered: a repeated index counts once, as in NumPy
    values = d["x"].copy()
    values[d["indices"][:5000]] = values[d["indices"][5000:10000]]
    return counts, values


@idiom
def rows_relaxed_in_place(np, d):
    grid = np.random.default_rng(7).random((SIDE, SIDE))  # drawn: the cluster's ranks draw it too
    for i in range(1, 160):
        grid[i, 1:-1] = 0.25 * (grid[i - 1, 1:-1] + grid[i + 1, 1:-1] + grid[i, :-2] + grid[i, 2:])
    return grid.sum(), grid[:170]


@idiom
def diagonal_after_update(np, d):
    grid = d["grid"] + 1.0
    total = 0.0
    for i in range(0, SIDE, 8):
        total += np.tanh(grid[i, i])
    return total, grid[::64] + total


def _inputs() -> dict[str, numpy.ndarray]:
    rng = numpy.random.default_rng(11)
    return {
        "ones": numpy.ones(N),
        "x": rng.random(N),
        "grid": rng.random((SIDE, SIDE)),
        "indices": rng.integers(0, N, N),
        "integers": rng.integers(0, 1 << 20, N),
        "vectors": rng.random((5, SIDE)),
    }


def _assert_same(got: Any, expected: Any, path: str) -> None:
    """The suite's comparison (``numpy_fixtures.assert_same``), with floating values allowed the
    few ulps of a different summation order, and the idiom and call named."""
    try:
        assert_same(got, expected, rtol=1e-9, atol=1e-9)
    except AssertionError as difference:
        raise AssertionError(f"{path}: {difference}") from None


@pytest.mark.filterwarnings("ignore::shoal.errors.ShoalFallbackWarning")  # histogram, unique, add.at: NumPy's, on computed data
@pytest.mark.parametrize("compiled", ["off", pytest.param("sync", marks=pytest.mark.full)])
@pytest.mark.parametrize("name", sorted(IDIOMS))
def test_idiom_gives_numpys_result(name: str, compiled: str, monkeypatch: pytest.MonkeyPatch) -> None:
    needs_runtime()
    import shoal.numpy as snp
    from shoal import runtime

    monkeypatch.setenv("SHOAL_VERIFY", "0")
    monkeypatch.setenv("SHOAL_COMPILE", compiled)
    inputs = _inputs()
    expected = IDIOMS[name](numpy, {key: value.copy() for key, value in inputs.items()})
    with runtime.configure(engine="node"):
        lazy_inputs = {key: snp.array(value) for key, value in inputs.items()}
        for call in range(3):
            _assert_same(IDIOMS[name](snp, lazy_inputs), expected, f"{name}, call {call + 1}")
        for key, value in lazy_inputs.items():
            _assert_same(value, inputs[key], f"{name}: input {key} afterwards")

