"""``numpy.random`` for Shoal: NumPy's own generators (so the same seed gives the same numbers),
with large results handed to the runtime as lazy arrays.

:class:`Generator` and :class:`RandomState` subclass NumPy's, so libraries that check for NumPy's
types (SciPy's ``random_state=``, ``check_random_state``) accept them; they pickle as NumPy's.
"""

from __future__ import annotations

import functools
import math
import operator
import sys
from typing import Any

import numpy as np
import numpy.random as _random

from shoal import drawn, fp_warnings
from shoal import runtime as _runtime
from shoal.numpy._callers import library_file
from shoal.numpy._lazy import is_lazy, ndarray
from shoal.numpy._numpy_data import is_small, materialize, new_array, wrap_numpy

_IN_PLACE = {"shuffle"}
_WARNS = frozenset({"multivariate_normal", "random_integers", "tomaxint"})  # the draws NumPy warns from, naming their caller
# Methods whose results are not drawn arrays: they keep NumPy's behaviour untouched.
_PLAIN = {"bit_generator", "spawn", "get_state", "set_state", "seed", "bytes"}


def _wrap_function(function: Any, name: str) -> Any:
    """``function`` (a NumPy drawing function or method) with lazy inputs read and large
    results lazy; ``shuffle`` writes back into a lazy array."""

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        if name in _IN_PLACE and args and is_lazy(args[-1] if _is_method(function) else args[0]):
            return _shuffle_lazy(function, args, kwargs)
        out = kwargs.get("out")
        if is_lazy(out):  # NumPy draws into an array of out's geometry (and checks it), then out takes it
            buffer = _like(out)
            function(*materialize(args), **dict(materialize(kwargs), out=buffer))
            out[...] = buffer
            return out
        large = _large_draw(function, name, args, kwargs)
        from_library = large is not None and _called_from_library()
        if large is not None and not from_library:
            _expect(args, kwargs, name, *large)
        if not (_plain(args) and _plain(kwargs.values())):
            args, kwargs = materialize(args), materialize(kwargs)
        if name in _WARNS:  # NumPy's warning names the user's line, not this one
            result = fp_warnings.at_user_line(function, *args, **kwargs)
        else:  # through the trampoline a scalar draw cost twice as much (1.6 against 0.84 µs)
            result = function(*args, **kwargs)
        if type(result) is not np.ndarray or is_small(result.size, result.itemsize) or from_library or (large is None and _called_from_library()):
            return result  # what wrap_numpy gives a small result: the draw as NumPy made it
        if large is not None:
            return _remembered(args, kwargs, name, large[0], result)
        return wrap_numpy(result)

    return call


def _plain(values: Any) -> bool:
    """True if no value is a lazy array or a container that may hold one (a draw's usual
    arguments: the generator, numbers, a dtype)."""
    for value in values:
        kind = type(value)
        if kind is ndarray or kind is list or kind is tuple or kind is dict:
            return False
    return True


def _called_from_library() -> bool:
    """Whether the draw was asked for by an installed library (SciPy drawing with a generator it
    was given): such callers get NumPy arrays, as they would from NumPy, never lazy ones. A draw
    made inside another of the generator's methods is NumPy's too; the outer method decides."""
    filename = sys._getframe(2).f_code.co_filename
    if filename == __file__:  # a NumPy method that calls another one of ours (``choice``)
        return True
    return library_file(filename)


def _like(out: Any) -> np.ndarray:
    """A NumPy array with ``out``'s shape, dtype, writability and kind of layout (C-ordered,
    Fortran-ordered or neither), for NumPy's checks of an ``out`` and its draw."""
    shape, dtype = out.shape, out.dtype
    if out.flags.c_contiguous:
        buffer = np.empty(shape, dtype)
    elif out.flags.f_contiguous:
        buffer = np.empty(shape, dtype, order="F")
    else:
        buffer = np.empty((*shape, 2), dtype)[..., 0]
    buffer.flags.writeable = not out._readonly
    return buffer


def _large_draw(function: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[dict[str, Any], tuple[int, ...]] | None:
    """The generator's state before a ``random`` or ``uniform`` method call that asks for a large
    array (:mod:`shoal.drawn`), and the array's shape; else None: reading the state costs about
    1 µs, more than a scalar draw."""
    if name not in drawn.KINDS or not args or not _is_method(function):
        return None
    position = 1 if name == "random" else 3  # random(size, ...), uniform(low, high, size)
    size = kwargs.get("size", args[position] if len(args) > position else None)
    if size is None:  # a scalar
        return None
    try:
        shape = tuple(operator.index(extent) for extent in size) if isinstance(size, tuple | list) else (operator.index(size),)
    except TypeError:  # a size NumPy itself will refuse
        return None
    if any(extent < 0 for extent in shape) or is_small(math.prod(shape)):
        return None
    before = drawn.state_before(args[0], name)
    return None if before is None else (before, shape)


def _bounds(args: tuple[Any, ...], kwargs: dict[str, Any], name: str) -> tuple[Any, Any]:
    """The bounds a draw asks for: ``Generator.uniform(low=0.0, high=1.0, size=None)``."""
    if name != "uniform":
        return 0.0, 1.0
    return kwargs.get("low", args[1] if len(args) > 1 else 0.0), kwargs.get("high", args[2] if len(args) > 2 else 1.0)


def _expect(args: tuple[Any, ...], kwargs: dict[str, Any], name: str, before: dict[str, Any], shape: tuple[int, ...]) -> None:
    """Announce a large float64 draw before NumPy makes it, so that a component may draw its
    parts elsewhere meanwhile (:meth:`shoal.runtime.Runtime.expect_draw`). Should the draw turn
    out otherwise (:func:`shoal.drawn.recipe` refuses it, or NumPy raises), no batch ever asks
    for that recipe and what was drawn ahead goes unused."""
    if name == "random":  # Generator.random(size=None, dtype=np.float64, out=None)
        try:
            dtype = np.dtype(kwargs.get("dtype", args[2] if len(args) > 2 else None))
        except TypeError:  # NumPy refuses it
            return
        if dtype != np.float64:
            return
    made = drawn.expected(before, name, *_bounds(args, kwargs, name))
    if made is not None:
        _runtime.current().expect_draw(made, shape)


def _remembered(args: tuple[Any, ...], kwargs: dict[str, Any], name: str, before: dict[str, Any], result: np.ndarray) -> Any:
    """``result`` as a lazy array whose data remembers how it was drawn, where it can be drawn
    again range by range (:mod:`shoal.drawn`)."""
    made = drawn.recipe(args[0], before, name, *_bounds(args, kwargs, name), result)
    if made is None:
        return wrap_numpy(result)
    flat = result.reshape(-1)
    drawn.note(flat, made)
    return new_array(result.dtype, result.shape, flat)


def _is_method(function: Any) -> bool:
    """Whether ``function`` is an unbound method (its first argument is the generator)."""
    return not hasattr(function, "__self__")


def _shuffle_lazy(function: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    position = 1 if _is_method(function) else 0
    target = args[position]
    value = target._value()
    function(*args[:position], value, *materialize(args[position + 1 :]), **materialize(kwargs))
    target[...] = value


def _lazy_methods(numpy_class: type) -> dict[str, Any]:
    return {
        name: _wrap_function(getattr(numpy_class, name), name)
        for name in dir(numpy_class)
        if not name.startswith("_") and name not in _PLAIN and callable(getattr(numpy_class, name))
    }


Generator = type(
    "Generator",
    (_random.Generator,),
    {
        "__module__": __name__,
        "__doc__": "NumPy's ``Generator``, whose large draws are lazy Shoal arrays.",
        **_lazy_methods(_random.Generator),
    },
)

RandomState = type(
    "RandomState",
    (_random.RandomState,),
    {
        "__module__": __name__,
        "__doc__": "NumPy's ``RandomState``, whose large draws are lazy Shoal arrays.",
        **_lazy_methods(_random.RandomState),
    },
)


def default_rng(seed: Any = None) -> Any:
    """``np.random.default_rng``: a :class:`Generator` (a NumPy generator given as the seed is
    returned unaltered, as NumPy does)."""
    if isinstance(seed, _random.Generator):
        return seed
    return Generator(_random.default_rng(materialize(seed)).bit_generator)  # a seed computed lazily: its value


@functools.cache
def _module_function(name: str) -> Any:
    """NumPy's module-level ``name``, wrapped, and named where pickle finds this same object
    (a pool's ``map(np.random.normal, ...)``): NumPy's own name would find NumPy's function."""
    call = _wrap_function(getattr(_random, name), name)
    call.__module__ = __name__
    call.__qualname__ = name
    return call


def __getattr__(name: str) -> Any:
    attribute = getattr(_random, name)
    if callable(attribute) and not isinstance(attribute, type):
        return _module_function(name)
    return attribute


seed = _random.seed
get_state = _random.get_state
set_state = _random.set_state
random = _module_function("random")
rand = _module_function("rand")
randn = _module_function("randn")
uniform = _module_function("uniform")
normal = _module_function("normal")
randint = _module_function("randint")
shuffle = _module_function("shuffle")
permutation = _module_function("permutation")
choice = _module_function("choice")

__all__ = ["Generator", "RandomState", "default_rng", *(n for n in _random.__all__ if n not in ("Generator", "RandomState", "default_rng"))]
