"""NumPy and ``shoal.numpy`` run in one process, alternating: the order flips every repetition."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import numpy

import shoal.numpy


def alternating(repeats: int) -> Iterator[tuple[str, ModuleType]]:
    """``("numpy", numpy)`` and ``("shoal", shoal.numpy)`` ``repeats`` times each, the one going
    first alternating."""
    order = [("numpy", numpy), ("shoal", shoal.numpy)]
    for repeat in range(repeats):
        yield from order if repeat % 2 == 0 else order[::-1]


def measured(repeats: int, run: Callable[[ModuleType], Any]) -> dict[str, list[Any]]:
    """``run(np)``'s results per module, over :func:`alternating` repetitions."""
    results: dict[str, list[Any]] = {"numpy": [], "shoal": []}
    for label, np in alternating(repeats):
        results[label].append(run(np))
    return results
