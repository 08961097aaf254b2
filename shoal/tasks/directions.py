"""Data directions of task parameters and their per-parameter options (paper 001 §III-A2)."""

from __future__ import annotations

import enum
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass


class Direction(enum.Enum):
    """How a task uses a parameter: reads it, writes it, or both."""

    IN = "in"
    OUT = "out"
    INOUT = "inout"

    @property
    def writes(self) -> bool:
        """True when the task produces a new version of the argument."""
        return self is not Direction.IN


IN = Direction.IN
OUT = Direction.OUT
INOUT = Direction.INOUT

_DIRECTION_KEYS = ("direction", "type")
_RRO_KEYS = ("rro", "recurrent_read_only")


@dataclass(frozen=True)
class ParameterSpec:
    """What the decorator says about one parameter."""

    name: str
    direction: Direction = Direction.IN
    recurrent_read_only: bool = False


def _parse_direction(function_name: str, name: str, value: object) -> Direction:
    if isinstance(value, Direction):
        return value
    raise TypeError(
        f"@task on {function_name}(): direction of parameter {name!r} must be IN, OUT or INOUT "
        f"from shoal.tasks, got {value!r}"
    )


def _parse_options(function_name: str, name: str, options: Mapping[str, object]) -> ParameterSpec:
    direction = Direction.IN
    rro = False
    for key, value in options.items():
        if key in _DIRECTION_KEYS:
            direction = _parse_direction(function_name, name, value)
        elif key in _RRO_KEYS:
            if not isinstance(value, bool):
                raise TypeError(
                    f"@task on {function_name}(): {key!r} of parameter {name!r} must be True or "
                    f"False, got {value!r}"
                )
            rro = value
        else:
            raise TypeError(
                f"@task on {function_name}(): unknown option {key!r} for parameter {name!r}; "
                f"known options are 'direction', 'rro' and 'recurrent_read_only'"
            )
    if rro and direction is not Direction.IN:
        raise ValueError(
            f"@task on {function_name}(): parameter {name!r} is marked recurrent read-only, "
            f"so its direction must be IN, not {direction.name}"
        )
    return ParameterSpec(name, direction, rro)


def parse_parameter_specs(
    function: Callable[..., object], options: Mapping[str, object]
) -> dict[str, ParameterSpec]:
    """Check the decorator's keyword options against ``function``'s signature.

    Each option is a direction (``c=INOUT``) or a dict with ``direction`` and ``rro`` keys.
    Parameters the decorator does not name default to IN.
    """
    name = getattr(function, "__qualname__", repr(function))
    parameters = inspect.signature(function).parameters
    specs: dict[str, ParameterSpec] = {}
    for parameter in parameters.values():
        specs[parameter.name] = ParameterSpec(parameter.name)
    for key, value in options.items():
        if key not in parameters:
            raise TypeError(
                f"@task on {name}(): {key!r} is not a parameter of the function "
                f"(parameters: {', '.join(parameters) or 'none'})"
            )
        if parameters[key].kind in (
            inspect.Parameter.VAR_POSITIONAL,
            inspect.Parameter.VAR_KEYWORD,
        ):
            raise TypeError(f"@task on {name}(): *{key} parameters are always IN")
        if isinstance(value, Mapping):
            specs[key] = _parse_options(name, key, value)
        else:
            specs[key] = ParameterSpec(key, _parse_direction(name, key, value))
    return specs
