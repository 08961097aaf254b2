"""A readable listing of a batch: ``disassemble(batch)``; ``SHOAL_DUMP=1`` prints it per flush.

Notation::

    batch: 2 bases (1 with data, 128 B), 3 instructions
      base b3  f8[16]  data
      base b7  f8[16]
       0  add        b7:f8(4,4) <- b3:f8(4,4), 2.0
       1  sum        b7:f4@64(4) <- b3:f8(4,4)/(8,32)  {axis=0, dtype=f4}
       2  release     {base=3}

- ``base bID  DTYPE[SIZE]`` declares a base of SIZE elements; ``data`` marks a base whose
  initial contents travel with the batch.
- An instruction line is its index, the opcode, the outputs, ``<-``, the inputs (left out when
  there are none), then the attributes in braces.
- A view is ``bBASE:DTYPE[@OFFSET](SHAPE)[/(STRIDES)]``: ``@OFFSET`` (bytes) only when it is
  not 0, ``/(STRIDES)`` (bytes) only when the view is not C-contiguous; one dimension of 4
  elements is ``(4)``, a 0-d view ``()``.
- Dtypes are short: ``b1`` bool, ``i8`` int64, ``u1`` uint8, ``f4`` float32, ``c16``
  complex128; a ``>`` prefix marks non-native byte order.
- A constant is its Python ``repr`` when weak (``2.0``, ``3``, ``True``), and ``DTYPE(value)``
  when it is a NumPy scalar (``f4(2.0)``).
- Attribute values are ``repr`` except dtypes, which are short names.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

import numpy as np

from shoal.bytecode.dtypes import short_name
from shoal.bytecode.ir import BaseDecl, Batch, Const, Instruction, Operand, View
from shoal.settings import DUMP

DUMP_VARIABLE = "SHOAL_DUMP"
_OPCODE_WIDTH = 10


def disassemble(batch: Batch) -> str:
    """The listing of ``batch``, one line per base declaration and per instruction."""
    data_bytes = sum(int(getattr(array, "nbytes", 0)) for array in batch.data.values())
    lines = [
        f"batch: {_count(len(batch.bases), 'base')} ({len(batch.data)} with data, "
        f"{_bytes(data_bytes)}), {_count(len(batch.instructions), 'instruction')}"
    ]
    lines.extend(_base_line(decl, decl.id in batch.data) for decl in batch.bases)
    undeclared = [base for base in batch.data if base not in {d.id for d in batch.bases}]
    lines.extend(f"  data b{base} (not declared)" for base in undeclared)
    lines.extend(_instruction_line(index, ins) for index, ins in enumerate(batch.instructions))
    return "\n".join(lines)


def dump_requested() -> bool:
    """True when the environment asks for every batch to be printed (``SHOAL_DUMP=1``)."""
    return bool(DUMP.value())


def dump(batch: Batch, stream: TextIO | None = None) -> None:
    """Write the listing of ``batch`` to ``stream`` (standard error by default)."""
    print(disassemble(batch), file=stream or sys.stderr, flush=True)


def format_view(view: View) -> str:
    """One view in the listing's notation, e.g. ``b7:f8@64(4,4)/(8,32)``."""
    text = f"b{view.base}:{_dtype(view.dtype)}"
    if view.offset:
        text += f"@{view.offset}"
    text += _tuple(view.shape)
    if not _is_contiguous(view):
        text += "/" + _tuple(view.strides)
    return text


def format_operand(operand: Operand) -> str:
    """A view or a constant in the listing's notation."""
    if isinstance(operand, View):
        return format_view(operand)
    if isinstance(operand, Const):
        value = operand.value
        if isinstance(value, np.generic):
            return f"{_dtype(value.dtype)}({value.item()!r})"
        return repr(value)
    return f"?{operand!r}"


def _instruction_line(index: int, instruction: Instruction) -> str:
    parts = [f"{index:>4}  {instruction.op:<{_OPCODE_WIDTH}}"]
    outputs = ", ".join(format_operand(view) for view in instruction.outputs)
    inputs = ", ".join(format_operand(operand) for operand in instruction.inputs)
    if outputs or inputs:
        parts.append(f" {outputs} <- {inputs}" if inputs else f" {outputs}")
    if instruction.attrs:
        attrs = ", ".join(f"{key}={_attr(value)}" for key, value in instruction.attrs)
        parts.append(f"  {{{attrs}}}")
    return "".join(parts).rstrip()


def _base_line(decl: BaseDecl, has_data: bool) -> str:
    line = f"  base b{decl.id}  {_dtype(decl.dtype)}[{decl.size}]"
    return f"{line}  data" if has_data else line


def _attr(value: Any) -> str:
    if isinstance(value, np.dtype):
        return _dtype(value)
    if isinstance(value, tuple):
        items = [_attr(item) for item in value]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
    if isinstance(value, np.generic):
        return format_operand(Const(value))
    return repr(value)


def _dtype(dtype: Any) -> str:
    return short_name(dtype) if isinstance(dtype, np.dtype) else f"?{dtype!r}"


def _tuple(values: tuple[int, ...]) -> str:
    return "(" + ",".join(str(value) for value in values) + ")"


def _is_contiguous(view: View) -> bool:
    try:
        return view.is_contiguous()
    except (AttributeError, TypeError):
        return False


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _bytes(nbytes: int) -> str:
    if nbytes < 1024:
        return f"{nbytes} B"
    scaled, unit = nbytes / 1024, "KiB"
    for larger in ("MiB", "GiB"):
        if scaled < 1024:
            break
        scaled, unit = scaled / 1024, larger
    return f"{scaled:.1f} {unit}"
