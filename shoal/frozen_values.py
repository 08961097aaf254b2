"""Bytecode values and recording's objects built without their classes' ``__init__``.

A frozen dataclass sets each field through ``object.__setattr__`` (``View``: 0.41 µs, against
0.24 µs through the slots' descriptors); recording an operation builds several, and a base and a
lazy array besides. Where the install compiled ``shoal/_slot_makers.c``, each is built by one
call into C that fills the slots (0.04 µs a ``View``); elsewhere by ``object.__new__`` and the
slots' descriptors. Either way they are the same classes, equal and hashing as the dataclass's own
would, for values the caller knows to be well formed (the recording path of a remembered ufunc
call, ``release`` instructions).

Views, instructions, declarations and constants hold only numbers, strings, dtypes and tuples of
them, so they cannot be part of a reference cycle; their compiled makers leave them (and the
tuples they are given) out of the garbage collector's lists (``untracked``). A pending batch of
thousands of instructions then costs the collector nothing: with them tracked, recording a
remembered call took 0.3-0.5 µs more, most of it in collections walking the batch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from shoal.bytecode import BaseDecl, Const, Instruction, View

try:
    from shoal import _slot_makers
except ImportError:  # built at install where a C compiler is found
    _slot_makers = None  # type: ignore[assignment]

COMPILED = _slot_makers is not None


def slot_maker(cls: type, names: tuple[str, ...], defaults: tuple = (), untracked: bool = False) -> Callable[..., Any]:
    """A callable building an instance of the slotted class ``cls`` from the values of its slots
    ``names`` in order (the last ones may be left to ``defaults``), without ``cls``'s
    ``__init__``: in C where built, else a function written for ``cls`` (one slot descriptor's
    ``__set__`` per slot, no loop: 0.28 µs a ``View``, a loop over the slots took 0.58). With
    ``untracked``, the C maker leaves each instance and the tuples among its values out of the
    garbage collector's lists: only for classes whose instances can never be part of a cycle."""
    if _slot_makers is not None:
        return _slot_makers.maker(cls, names, defaults, untracked)
    count, required = len(names), len(names) - len(defaults)
    sets = "".join(f"    set{position}(made, values[{position}])\n" for position in range(count))
    source = (
        "def make(*values):\n"
        f"    if len(values) != {count}:\n"
        f"        if not {required} <= len(values) <= {count}:\n"
        f"            raise TypeError(f'a maker of {{name}} takes {required} to {count} arguments ({{len(values)}} given)')\n"
        f"        values += defaults[len(values) - {required} :]\n"
        f"    made = new(cls)\n{sets}    return made\n"
    )
    namespace: dict[str, Any] = {"new": object.__new__, "cls": cls, "name": cls.__name__, "defaults": defaults}
    namespace.update({f"set{position}": getattr(cls, name).__set__ for position, name in enumerate(names)})
    exec(compile(source, f"<maker of {cls.__qualname__}>", "exec"), namespace)
    return namespace["make"]


new_view: Callable[[int, np.dtype, int, tuple[int, ...], tuple[int, ...]], View] = slot_maker(View, ("base", "dtype", "offset", "shape", "strides"), (), True)
new_instruction: Callable[..., Instruction] = slot_maker(Instruction, ("op", "outputs", "inputs", "attrs"), ((),), True)
new_decl: Callable[[int, np.dtype, int], BaseDecl] = slot_maker(BaseDecl, ("id", "dtype", "size"), (), True)
new_const: Callable[[Any], Const] = slot_maker(Const, ("value",), (), True)
