"""Quick side-by-side timing of the node engine against NumPy (and numexpr where it applies).

Runs each workload alternately with NumPy, numexpr and Shoal (shoal.numpy on the node engine),
several repetitions, and prints medians and ratios. By default kernels are compiled before the
timed runs (``--compile sync``; they are cached on disk after that) and the first, compiling
run is reported separately; ``--compile background`` measures what a fresh program gets.

    python benchmarks/node_engine_quick.py [--size 4096] [--reps 5] [--compile sync]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy

import shoal
import shoal.numpy as snp
from shoal import runtime


def jacobi(np, grid, sweeps):
    new = grid.copy()
    for _ in range(sweeps):
        new[1:-1, 1:-1] = 0.2 * (grid[1:-1, 1:-1] + grid[:-2, 1:-1] + grid[2:, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:])
        grid, new = new, grid
    return float(np.sum(grid))


def jacobi_numexpr(grid, sweeps):
    import numexpr

    new = grid.copy()
    for _ in range(sweeps):
        neighbours = {
            "c": grid[1:-1, 1:-1], "n": grid[:-2, 1:-1], "s": grid[2:, 1:-1], "w": grid[1:-1, :-2], "e": grid[1:-1, 2:]
        }
        numexpr.evaluate("0.2 * (c + n + s + w + e)", local_dict=neighbours, out=new[1:-1, 1:-1])
        grid, new = new, grid
    return float(numpy.sum(grid))


def black_scholes(np, spot, strike, years, days):
    def cnd(x):
        k = 1.0 / (1.0 + 0.2316419 * np.abs(x))
        poly = k * (0.319381530 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429))))
        upper = 1.0 - np.exp(-0.5 * x * x) / np.sqrt(2.0 * np.pi) * poly
        return np.where(x < 0.0, 1.0 - upper, upper)

    total = 0.0
    for day in range(days):
        t = years - day / 365.0
        sqrt_t = np.sqrt(t)
        d1 = (np.log(spot / strike) + (0.02 + 0.5 * 0.3**2) * t) / (0.3 * sqrt_t)
        d2 = d1 - 0.3 * sqrt_t
        discounted = strike * np.exp(-0.02 * t)
        call = spot * cnd(d1) - discounted * cnd(d2)
        put = discounted * cnd(-d2) - spot * cnd(-d1)
        total += float(np.mean(call) + np.mean(put))
    return total


def triad(np, a, b, out, repeats):
    for _ in range(repeats):
        out[...] = a * 2.0 + b
        if np is snp:
            shoal.flush()  # one pass per repeat, as NumPy makes (else all ten fuse into one)
    return float(out[-1])


def triad_numpy_in_place(a, b, out, repeats):
    for _ in range(repeats):
        numpy.multiply(a, 2.0, out=out)
        numpy.add(out, b, out=out)
    return float(out[-1])


def stream_add(a, b, out, repeats):
    """STREAM's add kernel (two reads, one write per element): the bandwidth reference."""
    for _ in range(repeats):
        numpy.add(a, b, out=out)
    return float(out[-1])


def timed(function, *args):
    start = time.perf_counter()
    value = function(*args)
    return time.perf_counter() - start, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4096, help="grid side (Jacobi)")
    parser.add_argument("--options", type=int, default=4_000_000, help="options (Black-Scholes)")
    parser.add_argument("--sweeps", type=int, default=10)
    parser.add_argument("--days", type=int, default=4)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--compile", choices=["sync", "background", "off"], default="sync")
    args = parser.parse_args()
    os.environ["SHOAL_COMPILE"] = args.compile
    rng = numpy.random.default_rng(0)
    grid = rng.random((args.size, args.size))
    spot, strike, years = (rng.uniform(a, b, args.options) for a, b in ((10, 100), (10, 100), (0.5, 2)))

    a, b = rng.random(1 << 24), rng.random(1 << 24)
    out = numpy.zeros_like(a)
    with runtime.configure(engine="node") as rt:
        sa, sb, sout = snp.array(a), snp.array(b), snp.zeros(1 << 24)
        workloads = {
            "triad_16M_x10": {
                "numpy": lambda: triad(numpy, a, b, out, 10),
                "numpy_in_place": lambda: triad_numpy_in_place(a, b, out, 10),
                "stream_add": lambda: stream_add(a, b, out, 10),
                "shoal": lambda: triad(snp, sa, sb, sout, 10),
            },
            "jacobi": {
                "numpy": lambda: jacobi(numpy, grid.copy(), args.sweeps),
                "numexpr": lambda: jacobi_numexpr(grid.copy(), args.sweeps),
                "shoal": lambda: jacobi(snp, snp.array(grid), args.sweeps),
            },
            "black_scholes": {
                "numpy": lambda: black_scholes(numpy, spot, strike, years, args.days),
                "shoal": lambda: black_scholes(snp, snp.array(spot), snp.array(strike), snp.array(years), args.days),
            },
        }
        for name, runners in workloads.items():
            cold, _ = timed(runners["shoal"])
            rt.engine.wait_for_compiler()
            runners["shoal"]()
            times: dict[str, list[float]] = {peer: [] for peer in runners}
            values: dict[str, float] = {}
            for _ in range(args.reps):
                for peer, run in runners.items():
                    seconds, values[peer] = timed(run)
                    times[peer].append(seconds)
            medians = {peer: statistics.median(t) for peer, t in times.items()}
            stats = rt.engine.last_stats
            print(f"{name}: " + "  ".join(f"{peer} {m:.3f}s" for peer, m in medians.items()) + f"  shoal first run {cold:.3f}s")
            if name.startswith("triad"):
                bandwidth = {peer: 10 * 3 * 8 * a.size / m / 1e9 for peer, m in medians.items()}
                print("  GB/s (3 streams): " + "  ".join(f"{peer} {g:.1f}" for peer, g in bandwidth.items()))
            print("  speedup vs numpy: " + "  ".join(f"{peer} {medians['numpy'] / m:.2f}x" for peer, m in medians.items() if peer != "numpy"))
            print(f"  values agree: {max(abs(v - values['numpy']) / abs(values['numpy']) for peer, v in values.items() if peer != 'stream_add'):.1e} rel;"
                  f" last batch: {stats.kernels} kernels, {stats.block_ops} block ops,"
                  f" {stats.compiled_block_ops} compiled, {stats.scheduling_us_per_block_op:.1f} us scheduling per block op")


if __name__ == "__main__":
    main()
