"""The six network-benchmark programs written for Dask distributed and for Heat (issue 11 item 8).

Run by :mod:`benchmarks.cluster_network`, not by hand:

- ``python cluster_peers.py dask ADDRESS APP ARGS...``: ``dask.array`` on a Dask cluster
  (``ADDRESS`` a scheduler's address, or ``local:N:T`` for a ``LocalCluster`` of ``N`` worker
  processes of ``T`` threads each);
- ``mpiexec -n N python cluster_peers.py heat - APP ARGS...``: Heat (MPI, arrays split along
  their first axis, or the grid axis for lattice Boltzmann).

Each program is the example's computation (``examples/*.py``, the same arguments, the same
seeded data, the same checksum) written once against an array namespace: both libraries mirror
NumPy's API, so the code differs from the example only where a library needs it: Dask's graph is
persisted every few steps (``SETTLE``) so that it does not grow without bound, its stencil sweeps
use ``map_overlap``, Dask's way of writing them (each block gets only its neighbours' edge rows;
a slice shifted by a row is a new chunking of the whole array), and populations are rolled by ``stack``
rather than assigned one by one. It prints ``checksum:`` and ``time:``
(of the computation, without start-up) as the examples do. This file imports neither Shoal nor
anything but NumPy and the library, so it runs in Heat's own environment.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

SETTLE = 5  # Dask: persist the state every this many steps


class Dask:
    """``dask.array`` on a Dask distributed cluster, chunks of about one per worker."""

    def __init__(self, address: str) -> None:
        import dask.array
        from dask.distributed import Client, LocalCluster

        self.xp: Any = dask.array
        self.cluster = None
        if address.startswith("local:"):
            _, workers, threads = address.split(":")
            self.cluster = LocalCluster(n_workers=int(workers), threads_per_worker=int(threads), processes=True, dashboard_address=None)
            self.client = Client(self.cluster)
        else:
            self.client = Client(address)
            workers = os.environ.get("DASK_PEERS_WORKERS", "1")
        self.client.wait_for_workers(int(workers), timeout=120)
        self.workers = len(self.client.scheduler_info()["workers"])

    def array(self, values: np.ndarray, axis: int = 0) -> Any:
        chunks = list(values.shape)
        chunks[axis] = max(1, math.ceil(values.shape[axis] / self.workers))
        return self.client.persist(self.xp.from_array(values, chunks=tuple(chunks)))

    def settle(self, value: Any, step: int) -> Any:
        return self.client.persist(value) if step % SETTLE == SETTLE - 1 else value

    def value(self, value: Any) -> float:
        return float(value.compute())

    def replicate(self, value: Any) -> Any:
        return value

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


class Heat:
    """Heat's distributed arrays over MPI (``mpiexec``), split along one axis."""

    def __init__(self) -> None:
        import heat

        self.xp: Any = heat

    def array(self, values: np.ndarray, axis: int = 0) -> Any:
        return self.xp.array(values, split=axis)

    def settle(self, value: Any, step: int) -> Any:
        return value

    def value(self, value: Any) -> float:
        return float(value.item())

    def replicate(self, value: Any) -> Any:
        """``value`` whole on every rank: Heat combines only operands split along one axis."""
        return self.xp.resplit(value, None)

    def close(self) -> None:
        pass


def _sweep(block: np.ndarray) -> np.ndarray:
    """One five-point sweep of ``block``'s inner points (Dask's ``map_overlap`` gives each block
    a row and a column of its neighbours on each side, none at the grid's edges)."""
    out = block.copy()
    out[1:-1, 1:-1] = 0.2 * (block[1:-1, 1:-1] + block[:-2, 1:-1] + block[2:, 1:-1] + block[1:-1, :-2] + block[1:-1, 2:])
    return out


def jacobi(lib: Any, args: list[str]) -> float:
    size, iterations = int(args[0]), int(_option(args, "--iterations", "50"))
    xp = lib.xp
    grid = lib.array(np.random.default_rng(42).random((size, size)))
    start = time.perf_counter()
    for step in range(iterations):
        if isinstance(lib, Dask):  # the stencil the Dask way (module docstring)
            grid = grid.map_overlap(_sweep, depth=1, boundary="none")
        else:
            grid[1:-1, 1:-1] = 0.2 * (grid[1:-1, 1:-1] + grid[:-2, 1:-1] + grid[2:, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:])
        grid = lib.settle(grid, step)
    checksum = lib.value(xp.sum(grid))
    return _report(checksum, start)


def heat_equation(lib: Any, args: list[str]) -> float:
    size = int(args[0])
    iterations = int(_option(args, "--max-iterations", "10000"))
    epsilon = float(_option(args, "--epsilon", "0.02"))
    xp = lib.xp
    start_grid = np.zeros((size + 2, size + 2))
    start_grid[:, 0] = start_grid[:, -1] = start_grid[-1, :] = -273.15
    start_grid[0, :] = 40.0
    grid = lib.array(start_grid)
    start = time.perf_counter()
    delta, done = epsilon + 1.0, 0
    while delta > epsilon and done < iterations:
        if isinstance(lib, Dask):  # as in jacobi: the sweep with map_overlap
            work = grid.map_overlap(_sweep, depth=1, boundary="none")
            delta = lib.value(xp.sum(xp.abs(work - grid))) / (size * size)  # the boundary is the same in both
            grid = work
        else:
            center = grid[1:-1, 1:-1]
            work = 0.2 * (center + grid[:-2, 1:-1] + grid[2:, 1:-1] + grid[1:-1, 2:] + grid[1:-1, :-2])
            delta = lib.value(xp.sum(xp.abs(work - center))) / (size * size)
            grid[1:-1, 1:-1] = work
        grid = lib.settle(grid, SETTLE - 1)  # every step: ``delta`` reads the state anyway
        done += 1
    checksum = lib.value(xp.sum(grid))
    print(f"iterations: {done}")
    return _report(checksum, start)


GRAVITY, TIME_STEP, SPACING = 9.8, 0.02, 1.0


def _fluxes(height: Any, along: Any, across: Any) -> tuple[Any, Any, Any]:
    return along, along**2 / height + 0.5 * GRAVITY * height**2, along * across / height


def _faces(lower: tuple, upper: tuple, ratio: float) -> list:
    flux_lower, flux_upper = _fluxes(*lower), _fluxes(*upper)
    return [0.5 * (a + b) - 0.5 * ratio * (fb - fa) for a, b, fa, fb in zip(lower, upper, flux_lower, flux_upper)]


def shallow_water(lib: Any, args: list[str]) -> float:
    n, steps = int(args[0]), int(_option(args, "--steps", "100"))
    xp = lib.xp
    coordinates = np.linspace(-1.0, 1.0, n + 2)
    x, y = np.meshgrid(coordinates, coordinates, indexing="ij")
    height = lib.array(1.0 + 0.5 * np.exp(-((x - 0.2) ** 2 + (y + 0.1) ** 2) / 0.02))
    momentum_x = lib.array(np.zeros((n + 2, n + 2)))
    momentum_y = lib.array(np.zeros((n + 2, n + 2)))
    ratio = TIME_STEP / SPACING
    start = time.perf_counter()
    for step in range(steps):
        for field, flip_rows, flip_columns in ((height, 1.0, 1.0), (momentum_x, -1.0, 1.0), (momentum_y, 1.0, -1.0)):
            field[0, :] = flip_rows * field[1, :]
            field[-1, :] = flip_rows * field[-2, :]
            field[:, 0] = flip_columns * field[:, 1]
            field[:, -1] = flip_columns * field[:, -2]
        height_x, along_x, across_x = _faces(
            (height[:-1, 1:-1], momentum_x[:-1, 1:-1], momentum_y[:-1, 1:-1]), (height[1:, 1:-1], momentum_x[1:, 1:-1], momentum_y[1:, 1:-1]), ratio
        )
        height_y, along_y, across_y = _faces(
            (height[1:-1, :-1], momentum_y[1:-1, :-1], momentum_x[1:-1, :-1]), (height[1:-1, 1:], momentum_y[1:-1, 1:], momentum_x[1:-1, 1:]), ratio
        )
        flux_x = _fluxes(height_x, along_x, across_x)
        flux_y = _fluxes(height_y, along_y, across_y)
        height[1:-1, 1:-1] = height[1:-1, 1:-1] - (ratio * (flux_x[0][1:, :] - flux_x[0][:-1, :]) + ratio * (flux_y[0][:, 1:] - flux_y[0][:, :-1]))
        momentum_x[1:-1, 1:-1] = momentum_x[1:-1, 1:-1] - (ratio * (flux_x[1][1:, :] - flux_x[1][:-1, :]) + ratio * (flux_y[2][:, 1:] - flux_y[2][:, :-1]))
        momentum_y[1:-1, 1:-1] = momentum_y[1:-1, 1:-1] - (ratio * (flux_x[2][1:, :] - flux_x[2][:-1, :]) + ratio * (flux_y[1][:, 1:] - flux_y[1][:, :-1]))
        height, momentum_x, momentum_y = (lib.settle(field, step) for field in (height, momentum_x, momentum_y))
    inner = (slice(1, -1), slice(1, -1))
    checksum = lib.value(xp.sum(height[inner])) + lib.value(xp.sum(xp.abs(momentum_x[inner]) + xp.abs(momentum_y[inner])))
    return _report(checksum, start)


VELOCITY_X = (0, 1, 0, -1, 0, 1, -1, -1, 1)
VELOCITY_Y = (0, 0, 1, 0, -1, 1, 1, -1, -1)
WEIGHTS = (4 / 9, 1 / 9, 1 / 9, 1 / 9, 1 / 9, 1 / 36, 1 / 36, 1 / 36, 1 / 36)
OPPOSITE = (0, 3, 4, 1, 2, 7, 8, 5, 6)


def _equilibrium(density: Any, ux: Any, uy: Any) -> list:
    speed_squared = ux**2 + uy**2
    populations = []
    for i in range(9):
        projected = VELOCITY_X[i] * ux + VELOCITY_Y[i] * uy
        populations.append(WEIGHTS[i] * density * (1.0 + 3.0 * projected + 4.5 * projected**2 - 1.5 * speed_squared))
    return populations


def _macroscopic(populations: list) -> tuple[Any, Any, Any]:
    density = sum(populations[1:], populations[0])
    ux = sum(VELOCITY_X[i] * populations[i] for i in range(9)) / density
    uy = sum(VELOCITY_Y[i] * populations[i] for i in range(9)) / density
    return density, ux, uy


def lattice_boltzmann(lib: Any, args: list[str]) -> float:
    """The nine populations as nine 2-D arrays split by rows (Heat loses the split of a 3-D
    array indexed by population)."""
    nx, steps = int(args[0]), int(_option(args, "--steps", "100"))
    ny, tau = max(nx // 2, 8), 0.6
    xp = lib.xp
    x, y = np.meshgrid(np.arange(nx), np.arange(ny))
    obstacle = lib.array((x - nx / 4) ** 2 + (y - ny / 2) ** 2 < (ny / 8) ** 2)
    ux = lib.array(0.1 * (1.0 + 0.05 * np.sin(2.0 * np.pi * y / ny)))
    uy = lib.array(np.zeros((ny, nx)))
    populations = _equilibrium(lib.array(np.ones((ny, nx))), ux, uy)
    start = time.perf_counter()
    for step in range(steps):
        populations = [xp.roll(populations[i], (VELOCITY_Y[i], VELOCITY_X[i]), axis=(0, 1)) for i in range(9)]
        density, ux, uy = _macroscopic(populations)
        equilibrium = _equilibrium(density, ux, uy)
        collided = [populations[i] - (populations[i] - equilibrium[i]) / tau for i in range(9)]
        populations = [lib.settle(xp.where(obstacle, populations[OPPOSITE[i]], collided[i]), step) for i in range(9)]
    density, ux, uy = _macroscopic(populations)
    checksum = lib.value(xp.sum(density)) + lib.value(xp.sum(density * (ux**2 + uy**2)))
    return _report(checksum, start)


def _accelerations(lib: Any, positions: Any, masses: Any) -> Any:
    xp = lib.xp
    x, y, z = positions[:, 0:1], positions[:, 1:2], positions[:, 2:3]
    dx, dy, dz = lib.replicate(x.T) - x, lib.replicate(y.T) - y, lib.replicate(z.T) - z
    inverse_cube = (dx**2 + dy**2 + dz**2 + 0.1**2) ** -1.5
    return xp.stack(((dx * inverse_cube) @ masses, (dy * inverse_cube) @ masses, (dz * inverse_cube) @ masses), axis=1)


def nbody(lib: Any, args: list[str]) -> float:
    size, steps = int(args[0]), int(_option(args, "--steps", "20"))
    xp = lib.xp
    rng = np.random.default_rng(42)
    masses_np = rng.uniform(0.5, 1.5, size) / size
    positions_np = rng.standard_normal((size, 3))
    velocities_np = 0.1 * rng.standard_normal((size, 3))
    velocities_np -= np.mean(masses_np[:, np.newaxis] * velocities_np, axis=0) / np.mean(masses_np)
    masses, positions, velocities = lib.array(masses_np), lib.array(positions_np), lib.array(velocities_np)
    start = time.perf_counter()
    acceleration = _accelerations(lib, positions, masses)
    for step in range(steps):
        velocities = velocities + 0.5 * 0.01 * acceleration
        positions = positions + 0.01 * velocities
        acceleration = _accelerations(lib, positions, masses)
        velocities = lib.settle(velocities + 0.5 * 0.01 * acceleration, step)
        positions, acceleration = lib.settle(positions, step), lib.settle(acceleration, step)
    kinetic = lib.value(0.5 * xp.sum(masses[:, None] * velocities**2))
    x, y, z = positions[:, 0:1], positions[:, 1:2], positions[:, 2:3]
    distance = xp.sqrt((lib.replicate(x.T) - x) ** 2 + (lib.replicate(y.T) - y) ** 2 + (lib.replicate(z.T) - z) ** 2 + 0.1**2)
    pair = -(masses[:, None] * lib.replicate(masses[None, :])) / distance
    potential = lib.value(xp.sum(xp.triu(pair, 1)))
    checksum = lib.value(xp.sum(xp.abs(positions))) + kinetic + potential
    return _report(checksum, start)


def _cumulative_normal(xp: Any, x: Any) -> Any:
    a1, a2, a3, a4, a5 = 0.319381530, -0.356563782, 1.781477937, -1.821255978, 1.330274429
    k = 1.0 / (1.0 + 0.2316419 * xp.abs(x))
    polynomial = k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5))))
    upper = 1.0 - xp.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi) * polynomial
    return xp.where(x < 0.0, 1.0 - upper, upper)


def black_scholes(lib: Any, args: list[str]) -> float:
    size, days = int(args[0]), int(_option(args, "--days", "10"))
    xp = lib.xp
    rng = np.random.default_rng(42)
    spot, strike, years = (lib.array(rng.uniform(low, high, size)) for low, high in ((10.0, 100.0), (10.0, 100.0), (0.5, 2.0)))
    rate, volatility = 0.02, 0.30
    start = time.perf_counter()
    total = 0.0
    for day in range(days):
        remaining = years - day / 365.0
        sqrt_years = xp.sqrt(remaining)
        d1 = (xp.log(spot / strike) + (rate + 0.5 * volatility**2) * remaining) / (volatility * sqrt_years)
        d2 = d1 - volatility * sqrt_years
        discounted = strike * xp.exp(-rate * remaining)
        call = spot * _cumulative_normal(xp, d1) - discounted * _cumulative_normal(xp, d2)
        put = discounted * _cumulative_normal(xp, -d2) - spot * _cumulative_normal(xp, -d1)
        total += lib.value(xp.mean(call)) + lib.value(xp.mean(put))
    return _report(total, start)


PROGRAMS: dict[str, Callable[[Any, list[str]], float]] = {
    "jacobi_stencil.py": jacobi,
    "heat_equation.py": heat_equation,
    "shallow_water.py": shallow_water,
    "lattice_boltzmann.py": lattice_boltzmann,
    "nbody.py": nbody,
    "black_scholes.py": black_scholes,
}


def _option(args: list[str], name: str, default: str) -> str:
    return args[args.index(name) + 1] if name in args else default


def _report(checksum: float, start: float) -> float:
    elapsed = time.perf_counter() - start
    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}", flush=True)
    return elapsed


def main(argv: list[str]) -> int:
    tool, address, app, *args = argv
    lib: Dask | Heat = Dask(address) if tool == "dask" else Heat()
    try:
        if tool == "heat" and lib.xp.MPI_WORLD.rank != 0:
            sys.stdout = open(os.devnull, "w")  # rank 0 alone reports
        PROGRAMS[app](lib, args)
    finally:
        lib.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
