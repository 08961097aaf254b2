"""The ``@task`` decorator."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

from shoal.tasks.directions import ParameterSpec, parse_parameter_specs
from shoal.tasks.interactive import by_value, defined_interactively


class TaskFunction:
    """A function whose calls run as tasks on worker processes and return futures."""

    def __init__(
        self,
        function: Callable[..., object],
        returns: int,
        options: dict[str, object],
        timeout: float | None = None,
    ) -> None:
        qualname = getattr(function, "__qualname__", "")
        if not callable(function) or not qualname or "<" in qualname:
            raise TypeError(
                f"@task needs a function defined at module level so workers can import it, "
                f"got {function!r}"
            )
        if isinstance(returns, bool) or not isinstance(returns, int) or returns < 0:
            raise TypeError(f"@task on {qualname}(): returns must be a non-negative integer, got {returns!r}")
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0
        ):
            raise TypeError(f"@task on {qualname}(): timeout must be a positive number of seconds, got {timeout!r}")
        #: Seconds a call may run on its worker before the worker is replaced and it fails.
        self.timeout: float | None = None if timeout is None else float(timeout)
        self.__shoal_task_function__ = function
        self._by_value = defined_interactively(function)
        self._code: tuple[str, bytes] | None = None
        self.module: str = function.__module__
        self.qualname: str = qualname
        self.returns = returns
        self.signature = inspect.signature(function)
        self.specs: dict[str, ParameterSpec] = parse_parameter_specs(function, options)
        self.positional_names = [
            p.name
            for p in self.signature.parameters.values()
            if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        ]
        parameters = list(self.signature.parameters.values())
        plain = all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in parameters)
        #: Specs in parameter order when every parameter can be passed positionally (else
        #: None): a call with exactly that many positional arguments needs no binding.
        self.plain_specs: list[ParameterSpec] | None = [self.specs[p.name] for p in parameters] if plain else None
        functools.update_wrapper(self, function)

    def __call__(self, *args: object, **kwargs: object) -> object:
        from shoal.tasks.api import get_runtime

        return get_runtime().submit(self, args, kwargs)

    def code(self) -> tuple[str, bytes] | None:
        """(digest, pickle) when the function travels by value, else None (by reference).

        Pickled at the first call, so that interactive helpers defined after the decorator
        ran are included."""
        if self._by_value and self._code is None:
            self._code = by_value(self.__shoal_task_function__)
        return self._code

    def __repr__(self) -> str:
        return f"<task {self.module}.{self.qualname}>"


def task(
    function: Callable[..., object] | None = None,
    /,
    *,
    returns: int = 1,
    timeout: float | None = None,
    **options: object,
) -> object:
    """Turn a function into a task; ``@task`` or ``@task(returns=2, c=INOUT, a={"rro": True})``.

    Keyword options name parameters: a direction (``IN``, ``OUT``, ``INOUT``) or a dict with
    ``"direction"`` and ``"rro"`` (also spelled ``"recurrent_read_only"``). Unnamed
    parameters are IN. A call returns a :class:`~shoal.tasks.future.Future` at once
    (a tuple of them when ``returns > 1``, None when ``returns=0``).

    ``timeout`` (seconds): a call that runs longer on its worker fails with
    :class:`~shoal.tasks.errors.TaskTimeoutError`, and the worker is replaced.
    """
    if function is not None:
        return TaskFunction(function, returns, options, timeout)

    def decorate(inner: Callable[..., object]) -> TaskFunction:
        return TaskFunction(inner, returns, options, timeout)

    return decorate
