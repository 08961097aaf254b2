"""A chunked pair of arithmetic calls on floats run by the C loop built at install.

:mod:`~shoal.engine.node.run.chunked_pairs` makes a pair's temporary a chunk of rows at a time
with two NumPy calls per chunk. For ``out = x OP2 (a OP1 b)`` with ``OP1``/``OP2`` among add,
subtract, multiply and divide on two-dimensional float64 or float32 operands of one type,
``shoal/engine/node/run/_pair_rows.c`` does the same rows in one pass, the temporary a few rows
in L1: ``a -= np.outer(x, y)`` at 1000 x 1000 took 0.56 ms on one thread against 2.0-2.6 ms for
NumPy's two calls (whose broadcast multiply alone takes 1.3 ms), bit for bit the same values.
It reports the floating-point conditions each operation met, which are noted as NumPy words them.
Where the extension was not built, or the pair is of another kind, :func:`rows_runner` answers
None and the NumPy chunks run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from shoal.bytecode import Const, Instruction, View
from shoal.engine import fp_signals
from shoal.engine.fp_signals import CATEGORY_TEXT, DIVIDE, INVALID, OVER, UNDER, named, numpy_name

try:
    from shoal.engine.node.run._pair_rows import pair_rows
except ImportError:  # built without a C compiler
    pair_rows = None

_OPERATIONS = {"add": 0, "subtract": 1, "multiply": 2, "divide": 3}
_FLOATS = (np.dtype(np.float64), np.dtype(np.float32))
_ORDER = (DIVIDE, OVER, UNDER, INVALID)  # the order of NumPy's messages for one call

Flags = tuple[int, int]


def rows_runner(first: Instruction, second: Instruction, first_ins: Sequence[Any], second_ins: Sequence[Any], target: np.ndarray) -> Callable[[int, int], Flags] | None:
    """What runs rows ``[begin, end)`` of the pair into ``target`` and returns the conditions
    each call met (NumPy's bits), or None if the C loop does not take this pair. ``second_ins``
    has None for the temporary."""
    temporary = first.outputs[0]
    if not covers(first, second, temporary) or target.ndim != 2 or target.dtype != temporary.dtype:
        return None
    if (second_ins[0] is None) == (second_ins[1] is None):
        return None
    op1, op2 = _OPERATIONS[first.op], _OPERATIONS[second.op]
    temporary_first = second_ins[0] is None
    operands = [_operand(value, target) for value in (*first_ins, second_ins[1] if temporary_first else second_ins[0])]
    if any(operand is None for operand in operands):
        return None
    a, b, x = operands

    def run(begin: int, end: int) -> Flags:
        return pair_rows(op1, op2, temporary_first, target, a, b, x, begin, end)

    return run


def covers(first: Instruction, second: Instruction, temporary: View) -> bool:
    """True if the C loop takes the pair ``first`` -> ``temporary`` -> ``second``, as far as the
    instructions tell (their operands' memory is checked when it runs): add, subtract, multiply
    or divide, two operands each of the temporary's type (a Python float for float64), no
    options, two axes, the loop built."""
    if pair_rows is None or first.op not in _OPERATIONS or second.op not in _OPERATIONS:
        return False
    if temporary.dtype not in _FLOATS or len(temporary.shape) != 2 or second.outputs[0].dtype != temporary.dtype:
        return False
    return _plain(first, temporary) and _plain(second, temporary)


def _plain(instruction: Instruction, like: View) -> bool:
    """True if ``instruction`` has two operands of ``like``'s type (a Python float for float64)."""
    if len(instruction.inputs) != 2 or instruction.attrs:
        return False
    for operand in instruction.inputs:
        if isinstance(operand, View):
            if operand.dtype != like.dtype or len(operand.shape) > 2:
                return False
        elif not (isinstance(operand, Const) and isinstance(operand.value, float) and like.dtype == np.float64):
            return False
    return True


def note(first: Instruction, second: Instruction, flags: list[Flags], watched: int) -> None:
    """Note the conditions the shares met, once per instruction and condition."""
    for instruction, met in ((first, _union(flags, 0)), (second, _union(flags, 1))):
        for bit in _ORDER:
            if met & bit & watched:
                fp_signals.note(instruction, named(instruction, f"{CATEGORY_TEXT[bit]} encountered in {numpy_name(instruction)}"))


def _union(flags: list[Flags], which: int) -> int:
    met = 0
    for pair in flags:
        met |= pair[which]
    return met


def _operand(value: Any, target: np.ndarray) -> np.ndarray | None:
    """``value`` as a view of ``target``'s shape, or None if not of its type (no casts here)."""
    if isinstance(value, np.ndarray):
        if value.dtype != target.dtype or value.ndim > 2:
            return None
    elif isinstance(value, float) and target.dtype == np.float64:
        value = np.array(value)
    else:
        return None
    try:
        return np.broadcast_to(value, target.shape)
    except ValueError:
        return None
