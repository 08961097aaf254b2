"""Black-Scholes pricing (examples/black_scholes.py) with the pricing formulas in numexpr.

Usage: python black_scholes_numexpr.py [SIZE] [--days N] [--seed S]
"""

import argparse
import time

import numexpr as ne
import numpy as np

RISK_FREE_RATE = 0.02
VOLATILITY = 0.30

# Abramowitz and Stegun 26.2.17, as in the example; x is the argument.
CUMULATIVE_NORMAL = (
    "where(x < 0.0, 1.0 - upper, upper)",
    "1.0 - exp(-0.5 * x * x) / sqrt(2.0 * pi) * "
    "(k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5)))))",
)
COEFFICIENTS = {
    "a1": 0.319381530,
    "a2": -0.356563782,
    "a3": 1.781477937,
    "a4": -1.821255978,
    "a5": 1.330274429,
    "pi": np.pi,
}


def cumulative_normal(x: np.ndarray) -> np.ndarray:
    """Standard normal CDF of ``x``."""
    k = ne.evaluate("1.0 / (1.0 + 0.2316419 * abs(x))", local_dict={"x": x})
    upper = ne.evaluate(CUMULATIVE_NORMAL[1], local_dict={"x": x, "k": k, **COEFFICIENTS})
    return ne.evaluate(CUMULATIVE_NORMAL[0], local_dict={"x": x, "upper": upper})


def price(
    spot: np.ndarray, strike: np.ndarray, years: np.ndarray, rate: float, volatility: float
) -> tuple[np.ndarray, np.ndarray]:
    """Call and put prices of European options."""
    terms = {"spot": spot, "strike": strike, "years": years, "rate": rate, "volatility": volatility}
    terms["sqrt_years"] = ne.evaluate("sqrt(years)", local_dict=terms)
    terms["d1"] = ne.evaluate(
        "(log(spot / strike) + (rate + 0.5 * volatility**2) * years) / (volatility * sqrt_years)",
        local_dict=terms,
    )
    terms["d2"] = ne.evaluate("d1 - volatility * sqrt_years", local_dict=terms)
    terms["discounted_strike"] = ne.evaluate("strike * exp(-rate * years)", local_dict=terms)
    terms["nd1"] = cumulative_normal(terms["d1"])
    terms["nd2"] = cumulative_normal(terms["d2"])
    terms["minus_nd1"] = cumulative_normal(ne.evaluate("-d1", local_dict=terms))
    terms["minus_nd2"] = cumulative_normal(ne.evaluate("-d2", local_dict=terms))
    call = ne.evaluate("spot * nd1 - discounted_strike * nd2", local_dict=terms)
    put = ne.evaluate("discounted_strike * minus_nd2 - spot * minus_nd1", local_dict=terms)
    return call, put


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=2_000_000, help="number of options")
    parser.add_argument("--days", type=int, default=10)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    spot = rng.uniform(10.0, 100.0, args.size)
    strike = rng.uniform(10.0, 100.0, args.size)
    years = rng.uniform(0.5, 2.0, args.size)

    start = time.perf_counter()
    total = 0.0
    for day in range(args.days):
        remaining = ne.evaluate(
            "years - elapsed", local_dict={"years": years, "elapsed": day / 365.0}
        )
        call, put = price(spot, strike, remaining, RISK_FREE_RATE, VOLATILITY)
        total += np.mean(call) + np.mean(put)
    checksum = float(total)
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()
