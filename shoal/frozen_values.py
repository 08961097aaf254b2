"""Bytecode values built without their frozen dataclass's ``__init__``.

A frozen dataclass sets each field through ``object.__setattr__`` (``View``: 0.41 µs, against
0.24 µs through the slots' descriptors); recording an operation builds several. These build the
same classes, equal and hashing as the dataclass's own would, for values the caller knows to be
well formed (the recording path of a remembered ufunc call, ``release`` instructions).
"""

from __future__ import annotations

import numpy as np

from shoal.bytecode import BaseDecl, Instruction, View

_new = object.__new__
_set_view = (View.base.__set__, View.dtype.__set__, View.offset.__set__, View.shape.__set__, View.strides.__set__)
_set_decl = (BaseDecl.id.__set__, BaseDecl.dtype.__set__, BaseDecl.size.__set__)
_set_instruction = (Instruction.op.__set__, Instruction.outputs.__set__, Instruction.inputs.__set__, Instruction.attrs.__set__)


def new_view(base: int, dtype: np.dtype, offset: int, shape: tuple[int, ...], strides: tuple[int, ...]) -> View:
    """``View(base, dtype, offset, shape, strides)``."""
    view = _new(View)
    set_base, set_dtype, set_offset, set_shape, set_strides = _set_view
    set_base(view, base)
    set_dtype(view, dtype)
    set_offset(view, offset)
    set_shape(view, shape)
    set_strides(view, strides)
    return view


def new_instruction(op: str, outputs: tuple[View, ...], inputs: tuple, attrs: tuple = ()) -> Instruction:
    """``Instruction(op, outputs, inputs, attrs)``."""
    instruction = _new(Instruction)
    set_op, set_outputs, set_inputs, set_attrs = _set_instruction
    set_op(instruction, op)
    set_outputs(instruction, outputs)
    set_inputs(instruction, inputs)
    set_attrs(instruction, attrs)
    return instruction


def new_decl(base: int, dtype: np.dtype, size: int) -> BaseDecl:
    """``BaseDecl(base, dtype, size)``."""
    decl = _new(BaseDecl)
    set_id, set_dtype, set_size = _set_decl
    set_id(decl, base)
    set_dtype(decl, dtype)
    set_size(decl, size)
    return decl
