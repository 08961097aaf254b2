"""Lazy arrays passed to tasks (``shoal.tasks``): the NumPy array a task receives.

A program run with ``python -m shoal`` hands its arrays to ``@task`` functions as it would NumPy
arrays, and the task runtime follows data by the identity of those objects (a task that writes
``c`` makes a new version of ``c``; the next call that reads ``c`` waits for it). A lazy array
stands for its base's memory held in NumPy (``shoal.held``): the same ndarray object for as
long as anything keeps it, so successive calls with one array chain their versions, and the
program's writes through the lazy array reach the memory the tasks were given, as with NumPy.
"""

from __future__ import annotations

from typing import Any

from shoal.numpy._held_indexing import held_memory
from shoal.numpy._lazy import ndarray


def task_value(value: Any) -> Any:
    """``value`` as a task argument: a lazy array's NumPy view of its held base (a lazy scalar's
    NumPy scalar); anything else as it is."""
    if type(value) is not ndarray:
        return value
    if value._scalar:
        return value._value()[()]
    memory = held_memory(value)
    if memory is None:
        value._base.runtime.hold_for_tasks(value._view.base)
        memory = held_memory(value)
    if memory is None:
        raise TypeError(
            f"a task argument must live in this process's memory, and the {value._base.runtime.engine.name!r} "
            "component keeps this array elsewhere: pass numpy.array(x), a copy, instead"
        )
    return memory
