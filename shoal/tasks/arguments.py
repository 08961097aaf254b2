"""Binding a task call's arguments to its parameters, and checks done at call time."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import numpy as np

from shoal.tasks.directions import Direction, ParameterSpec
from shoal.tasks.future import Future

if TYPE_CHECKING:
    from shoal.tasks.decorator import TaskFunction
    from shoal.tasks.graph import Datum


def task_slots(
    function: TaskFunction, args: tuple[object, ...], kwargs: dict[str, object]
) -> list[tuple[int | str, ParameterSpec, object]]:
    """(slot, spec, value) for each argument of a call: slot is a position or a keyword."""
    plain = function.plain_specs
    if plain is not None and not kwargs and len(args) == len(plain):
        return list(zip(range(len(args)), plain, args))
    bound = function.signature.bind(*args, **kwargs)
    positional = function.positional_names
    slots: list[tuple[int | str, ParameterSpec, object]] = []
    for position, value in enumerate(bound.args):
        name = positional[position] if position < len(positional) else None
        spec = function.specs[name] if name is not None else ParameterSpec(f"*{position}")
        slots.append((position, spec, value))
    for name, value in bound.kwargs.items():
        slots.append((name, function.specs.get(name, ParameterSpec(name)), value))
    return slots


def plain_value(value: object) -> object:
    """``value``, or for a lazy array of ``shoal.numpy`` (a program run with ``python -m shoal``)
    the NumPy array that stands for it (``shoal.numpy._task_values``): the same object each time."""
    lazy = sys.modules.get("shoal.numpy._lazy")
    if lazy is None or type(value) is not lazy.ndarray:
        return value
    from shoal.numpy._task_values import task_value

    return task_value(value)


def check_argument(qualname: str, slot: int | str, spec: ParameterSpec, value: object, datum: Datum | None) -> None:
    """Reject, at call time, arguments their parameter's direction or RRO flag cannot take."""
    if spec.recurrent_read_only and not isinstance(value, np.ndarray | Future):
        raise TypeError(
            f"{qualname}(): parameter {spec.name!r} is marked recurrent read-only, which needs a "
            f"NumPy array, got {type(value).__name__}"
        )
    if spec.recurrent_read_only and isinstance(value, np.ndarray) and value.dtype.hasobject:
        raise TypeError(
            f"{qualname}(): parameter {spec.name!r} is marked recurrent read-only, but arrays of "
            f"dtype object cannot live in shared memory"
        )
    if spec.direction is Direction.OUT and (isinstance(value, Future) or (datum is not None and datum.owner() is None)):
        raise TypeError(f"{qualname}(): OUT parameter {spec.name!r} needs an object to write into, not a future")
