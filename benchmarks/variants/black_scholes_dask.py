"""Black-Scholes pricing (examples/black_scholes.py) as Dask arrays: the example's own formulas,
every day's prices one graph, all days computed together on the threaded scheduler.

Usage: python black_scholes_dask.py [SIZE] [--days N] [--seed S] [--chunk C]
"""

import argparse
import time

import dask
import dask.array as da
import numpy as np
from _example import load_example

example = load_example("black_scholes")  # its formulas run on Dask arrays through NumPy's dispatch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=2_000_000, help="number of options")
    parser.add_argument("--days", type=int, default=10)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--chunk", type=int, default=1 << 20, help="options per chunk")
    args = parser.parse_args()
    dask.config.set(scheduler="threads")

    rng = np.random.default_rng(args.seed)
    spot = rng.uniform(10.0, 100.0, args.size)
    strike = rng.uniform(10.0, 100.0, args.size)
    years = rng.uniform(0.5, 2.0, args.size)

    start = time.perf_counter()
    spot, strike, years = (da.from_array(a, chunks=args.chunk) for a in (spot, strike, years))
    daily = []
    for day in range(args.days):
        call, put = example.price(spot, strike, years - day / 365.0, example.RISK_FREE_RATE, example.VOLATILITY)
        daily.append((call.mean(), put.mean()))
    total = 0.0
    for call_mean, put_mean in dask.compute(*daily):
        total += call_mean + put_mean
    checksum = float(total)
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()
