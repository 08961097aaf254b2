"""Bytecode values and recording's objects built without their classes' ``__init__``.

A frozen dataclass sets each field through ``object.__setattr__`` (``View``: 0.41 µs, against
0.24 µs through the slots' descriptors); recording an operation builds several, and a base and a
lazy array besides. Where the install compiled ``shoal/_slot_makers.c``, each is built by one
call into C that fills the slots (0.04 µs a ``View``); elsewhere by ``object.__new__`` and the
slots' descriptors. Either way they are the same classes, equal and hashing as the dataclass's own
would, for values the caller knows to be well formed (the recording path of a remembered ufunc
call, ``release`` instructions).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from shoal.bytecode import BaseDecl, Instruction, View

try:
    from shoal import _slot_makers
except ImportError:  # built at install where a C compiler is found
    _slot_makers = None  # type: ignore[assignment]

COMPILED = _slot_makers is not None
_new = object.__new__
_set_view = (View.base.__set__, View.dtype.__set__, View.offset.__set__, View.shape.__set__, View.strides.__set__)
_set_decl = (BaseDecl.id.__set__, BaseDecl.dtype.__set__, BaseDecl.size.__set__)
_set_instruction = (Instruction.op.__set__, Instruction.outputs.__set__, Instruction.inputs.__set__, Instruction.attrs.__set__)


def python_view(base: int, dtype: np.dtype, offset: int, shape: tuple[int, ...], strides: tuple[int, ...]) -> View:
    """``View(base, dtype, offset, shape, strides)``."""
    view = _new(View)
    set_base, set_dtype, set_offset, set_shape, set_strides = _set_view
    set_base(view, base)
    set_dtype(view, dtype)
    set_offset(view, offset)
    set_shape(view, shape)
    set_strides(view, strides)
    return view


def python_instruction(op: str, outputs: tuple[View, ...], inputs: tuple, attrs: tuple = ()) -> Instruction:
    """``Instruction(op, outputs, inputs, attrs)``."""
    instruction = _new(Instruction)
    set_op, set_outputs, set_inputs, set_attrs = _set_instruction
    set_op(instruction, op)
    set_outputs(instruction, outputs)
    set_inputs(instruction, inputs)
    set_attrs(instruction, attrs)
    return instruction


def python_decl(base: int, dtype: np.dtype, size: int) -> BaseDecl:
    """``BaseDecl(base, dtype, size)``."""
    decl = _new(BaseDecl)
    set_id, set_dtype, set_size = _set_decl
    set_id(decl, base)
    set_dtype(decl, dtype)
    set_size(decl, size)
    return decl


def slot_maker(cls: type, names: tuple[str, ...], defaults: tuple = ()) -> Callable[..., Any]:
    """A callable building an instance of the slotted class ``cls`` from the values of its slots
    ``names`` in order (the last ones may be left to ``defaults``), without ``cls``'s
    ``__init__`` (in C where built)."""
    if _slot_makers is not None:
        return _slot_makers.maker(cls, names, defaults)
    setters = tuple(getattr(cls, name).__set__ for name in names)
    required = len(names) - len(defaults)

    def make(*values: Any) -> Any:
        if not required <= len(values) <= len(names):
            raise TypeError(f"a maker of {cls.__name__} takes {required} to {len(names)} arguments ({len(values)} given)")
        made = _new(cls)
        for setter, value in zip(setters, (*values, *defaults[len(values) - required :])):
            setter(made, value)
        return made

    return make


new_view: Callable[[int, np.dtype, int, tuple[int, ...], tuple[int, ...]], View] = python_view
new_instruction: Callable[..., Instruction] = python_instruction
new_decl: Callable[[int, np.dtype, int], BaseDecl] = python_decl
if _slot_makers is not None:
    new_view = _slot_makers.maker(View, ("base", "dtype", "offset", "shape", "strides"))
    new_instruction = _slot_makers.maker(Instruction, ("op", "outputs", "inputs", "attrs"), ((),))
    new_decl = _slot_makers.maker(BaseDecl, ("id", "dtype", "size"))
