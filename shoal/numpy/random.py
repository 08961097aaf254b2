"""``numpy.random`` for Shoal: NumPy's own generators (so the same seed gives the same numbers),
with large results handed to the runtime as lazy arrays."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import numpy.random as _random

from shoal.numpy._lazy import is_lazy, materialize, wrap_numpy

_IN_PLACE = {"shuffle"}


def _wrap_function(function: Any, name: str) -> Any:
    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        if name in _IN_PLACE and args and is_lazy(args[0]):
            target = args[0]
            value = target._value()
            function(value, *materialize(args[1:]), **materialize(kwargs))
            target[...] = value
            return None
        return wrap_numpy(function(*materialize(args), **materialize(kwargs)))

    return call


class Generator:
    """A NumPy ``Generator`` whose large outputs are lazy Shoal arrays."""

    def __init__(self, generator: np.random.Generator) -> None:
        self._generator = generator

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._generator, name)
        if callable(attribute) and not name.startswith("_"):
            return _wrap_function(attribute, name)
        return attribute

    def __repr__(self) -> str:
        return repr(self._generator)


def default_rng(seed: Any = None) -> Generator:
    """``np.random.default_rng``."""
    if isinstance(seed, Generator):
        return seed
    return Generator(_random.default_rng(seed))


class RandomState:
    """A NumPy ``RandomState`` whose large outputs are lazy Shoal arrays."""

    def __init__(self, seed: Any = None) -> None:
        self._state = _random.RandomState(seed)

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._state, name)
        if callable(attribute) and not name.startswith("_"):
            return _wrap_function(attribute, name)
        return attribute


def __getattr__(name: str) -> Any:
    attribute = getattr(_random, name)
    if callable(attribute) and not isinstance(attribute, type):
        return _wrap_function(attribute, name)
    return attribute


seed = _random.seed
get_state = _random.get_state
set_state = _random.set_state
random = _wrap_function(_random.random, "random")
rand = _wrap_function(_random.rand, "rand")
randn = _wrap_function(_random.randn, "randn")
uniform = _wrap_function(_random.uniform, "uniform")
normal = _wrap_function(_random.normal, "normal")
randint = _wrap_function(_random.randint, "randint")
shuffle = _wrap_function(_random.shuffle, "shuffle")
permutation = _wrap_function(_random.permutation, "permutation")
choice = _wrap_function(_random.choice, "choice")
