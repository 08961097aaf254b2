"""Programs written with shoal.numpy, run on the node engine, against NumPy itself."""

from __future__ import annotations

import numpy
import pytest

import shoal
import shoal.numpy as snp
from shoal import runtime
from shoal.engine.node import NodeEngine


@pytest.fixture(params=[7, 64])
def node(request, monkeypatch):
    monkeypatch.setenv("SHOAL_BLOCK_SIZE", str(request.param))
    monkeypatch.setenv("SHOAL_COMPILE", "off")
    monkeypatch.setenv("SHOAL_DIRECT_WORK", "0")
    with runtime.configure(engine="node", eager_threshold=0, settled_threshold=0) as rt:
        assert isinstance(rt.engine, NodeEngine)
        yield rt


def jacobi(np, grid, sweeps):
    new = grid.copy()
    for _ in range(sweeps):
        new[1:-1, 1:-1] = 0.2 * (grid[1:-1, 1:-1] + grid[:-2, 1:-1] + grid[2:, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:])
        grid, new = new, grid
    return grid


def heat(np, size, sweeps):
    grid = np.zeros((size + 2, size + 2))
    grid[:, 0] = -273.15
    grid[0, :] = 40.0
    center = grid[1:-1, 1:-1]
    deltas = []
    for _ in range(sweeps):
        work = 0.2 * (center + grid[:-2, 1:-1] + grid[2:, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:])
        deltas.append(float(np.sum(np.abs(work - center)) / center.size))
        center[:] = work
    return grid, deltas


def black_scholes(np, spot, strike, years):
    def cnd(x):
        k = 1.0 / (1.0 + 0.2316419 * np.abs(x))
        poly = k * (0.319381530 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429))))
        upper = 1.0 - np.exp(-0.5 * x * x) / np.sqrt(2.0 * np.pi) * poly
        return np.where(x < 0.0, 1.0 - upper, upper)

    sqrt_years = np.sqrt(years)
    d1 = (np.log(spot / strike) + (0.02 + 0.5 * 0.3**2) * years) / (0.3 * sqrt_years)
    d2 = d1 - 0.3 * sqrt_years
    discounted = strike * np.exp(-0.02 * years)
    call = spot * cnd(d1) - discounted * cnd(d2)
    put = discounted * cnd(-d2) - spot * cnd(-d1)
    return call, put, np.mean(call) + np.mean(put)


def test_jacobi_matches_numpy(node):
    start = numpy.random.default_rng(1).random((23, 31))
    expected = jacobi(numpy, start.copy(), 4)
    got = jacobi(snp, snp.array(start), 4)
    numpy.testing.assert_allclose(numpy.asarray(got), expected, rtol=1e-13)


def test_one_sweep_is_one_kernel(node):
    grid = snp.array(numpy.random.default_rng(2).random((40, 40)))
    new = grid.copy()
    shoal.flush()
    new[1:-1, 1:-1] = 0.2 * (grid[1:-1, 1:-1] + grid[:-2, 1:-1] + grid[2:, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:])
    shoal.flush()
    stats = node.engine.last_stats
    assert stats.kernels == 1 and stats.temporaries >= 4


def test_heat_equation_with_convergence_reads(node):
    expected_grid, expected_deltas = heat(numpy, 30, 5)
    grid, deltas = heat(snp, 30, 5)
    numpy.testing.assert_allclose(numpy.asarray(grid), expected_grid, rtol=1e-12)
    numpy.testing.assert_allclose(deltas, expected_deltas, rtol=1e-12)


def test_black_scholes(node):
    rng = numpy.random.default_rng(3)
    spot, strike, years = rng.uniform(10, 100, 500), rng.uniform(10, 100, 500), rng.uniform(0.5, 2, 500)
    expected = black_scholes(numpy, spot, strike, years)
    got = black_scholes(snp, snp.array(spot), snp.array(strike), snp.array(years))
    for g, e in zip(got, expected):
        numpy.testing.assert_allclose(numpy.asarray(g), e, rtol=1e-12)


def test_integer_and_boolean_programs_are_exact(node):
    a = numpy.arange(-300, 300, dtype=numpy.int16).reshape(20, 30)
    b = snp.array(a)
    expected = ((a * 7) // 3 + (a > 5)) ^ (a & 0x0F)
    got = ((b * 7) // 3 + (b > 5)) ^ (b & 0x0F)
    numpy.testing.assert_array_equal(numpy.asarray(got), expected)
    assert int(snp.sum(b[::2, 1::3] % 7)) == int(numpy.sum(a[::2, 1::3] % 7))


def test_errors_keep_numpy_types(node):
    a = snp.ones((10, 10))
    with pytest.raises(ValueError):
        _ = a + snp.ones((3, 7))
