"""Welch's t-test and side-by-side timing tables for the task benchmarks (paper 001 Tables I, II)."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    tiny, eps = 1e-300, 1e-15
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        for numerator in (
            m * (b - m) * x / ((a + m2 - 1) * (a + m2)),
            -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < eps:
            break
    return h


def regularized_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularized incomplete beta function."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_continued_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_continued_fraction(b, a, 1.0 - x) / b


def t_two_sided_p(t: float, df: float) -> float:
    """Two-sided p-value of Student's t with ``df`` degrees of freedom."""
    return regularized_beta(df / 2.0, 0.5, df / (df + t * t))


def t_quantile(probability: float, df: float) -> float:
    """The t value with P(T <= t) = probability (for probability > 0.5), by bisection."""
    low, high = 0.0, 1e3
    target = 2.0 * (1.0 - probability)
    for _ in range(200):
        middle = (low + high) / 2.0
        if t_two_sided_p(middle, df) > target:
            low = middle
        else:
            high = middle
    return (low + high) / 2.0


@dataclass(frozen=True)
class Welch:
    """Difference of means (a - b) with its 95% interval and Welch's p-value."""

    mean_a: float
    mean_b: float
    low: float
    high: float
    p_value: float


def welch(a: list[float], b: list[float]) -> Welch:
    mean_a, mean_b = statistics.fmean(a), statistics.fmean(b)
    var_a, var_b = statistics.variance(a), statistics.variance(b)
    se2 = var_a / len(a) + var_b / len(b)
    diff = mean_a - mean_b
    if se2 == 0.0:
        return Welch(mean_a, mean_b, diff, diff, 0.0 if diff else 1.0)
    df = se2**2 / ((var_a / len(a)) ** 2 / (len(a) - 1) + (var_b / len(b)) ** 2 / (len(b) - 1))
    se = math.sqrt(se2)
    half = t_quantile(0.975, df) * se
    return Welch(mean_a, mean_b, diff - half, diff + half, t_two_sided_p(diff / se, df))


def table_row(label: str, a: list[float], b: list[float]) -> str:
    """One row: medians of a and b and their ratio, then Welch on the means (95% CI, p)."""
    w = welch(a, b)
    median_a, median_b = statistics.median(a), statistics.median(b)
    return (
        f"| {label} | {median_a:.3f} | {median_b:.3f} | {median_b / median_a:.2f}x | "
        f"{w.low:+.3f} .. {w.high:+.3f} | {100 * w.low / w.mean_b:+.1f}% .. {100 * w.high / w.mean_b:+.1f}% | "
        f"{w.p_value:.2g} |"
    )


TABLE_HEADER = (
    "| case | median A (s) | median B (s) | B/A (medians) | 95% CI of mean A-B (s) | 95% CI (% of mean B) | Welch p |\n"
    "|---|---|---|---|---|---|---|"
)
