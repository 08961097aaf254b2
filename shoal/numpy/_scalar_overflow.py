"""Integer arithmetic on results that stand for NumPy scalars, computed as NumPy's scalars compute it.

NumPy's operators on integer scalars (``a.sum() * k``, ``-count``) run its scalar loops, which
check for overflow: ``overflow encountered in scalar multiply`` is warned, or raised under
``errstate(over="raise")``, where its array loops wrap in silence. A lazy 0-d result stands for
such a scalar, so an operator that adds, subtracts, multiplies, negates or takes the absolute
value of integers that all stand for scalars (lazy 0-d results, NumPy's integer and boolean
scalars, Python's ``int`` and ``bool``) applies the operator to NumPy's scalars at the program's
line: NumPy's result, type, warning and error. It does so where every lazy operand's value is
at hand (computed, in this process's memory): a value still to be computed keeps the operation
lazy, as it was, and an overflow in it wraps without the warning. Reading it would run the
pending work at every such operation: ``count += (a > t).sum()`` in a loop took 0.40-0.48 s
instead of 0.22-0.26 s (NumPy 0.34-0.38 s) when each count was read.

Everything else stays lazy: floating-point operations and the integer operators that cannot
overflow signal through the array loops what the scalar loops signal (under the array loop's
name, ``divide`` for ``scalar divide``), and ``np.multiply(s, t)`` is an array call in NumPy too.
"""

from __future__ import annotations

import dis
import operator
import sys
from typing import Any

import numpy as np

from shoal.fp_warnings import at_user_line
from shoal.numpy._lazy import ndarray

#: The ufuncs of the operators whose integer scalar loops check for overflow, with the operators.
CHECKED: dict[np.ufunc, Any] = {
    np.add: operator.add,
    np.subtract: operator.sub,
    np.multiply: operator.mul,
    np.negative: operator.neg,
    np.absolute: operator.abs,
}

_BINARY_OP = dis.opmap["BINARY_OP"]
_PYTHON_INTEGERS = (int, bool)
_INTEGER_KINDS = "iu"
_INTEGER_OR_BOOLEAN_KINDS = "iub"


def _integer_scalar(value: Any) -> bool:
    """True if ``value`` is an integer or boolean that NumPy's operators treat as a scalar."""
    kind = type(value)
    if kind is ndarray:
        return value._scalar and value._view.dtype.kind in _INTEGER_OR_BOOLEAN_KINDS
    return kind in _PYTHON_INTEGERS or isinstance(value, (np.integer, np.bool_))


def _applies(operands: tuple[Any, ...]) -> bool:
    """True if an operator on ``operands`` (a lazy array among them) is integer scalar arithmetic:
    every operand an integer scalar, a lazy one of an integer dtype."""
    lazy_integer = False
    for value in operands:
        if not _integer_scalar(value):
            return False
        lazy_integer = lazy_integer or (type(value) is ndarray and value._view.dtype.kind in _INTEGER_KINDS)
    return lazy_integer


def computed(function: Any, operands: tuple[Any, ...]) -> Any:
    """``function`` (an operator) of ``operands`` on NumPy's scalars, run at the program's line so
    that a warning names it, if it is integer scalar arithmetic (:func:`_applies`) and every lazy
    operand's value is at hand; else None (the operation is recorded as before)."""
    if not _applies(operands):
        return None
    values = []
    for value in operands:
        if type(value) is ndarray:
            runtime = value._base.runtime
            memory = runtime.memory(value._view) if runtime.offers_memory() else None
            if memory is None:
                return None
            value = memory[()]
        values.append(value)
    return at_user_line(function, *values)


def from_scalar_operator(ufunc: np.ufunc, inputs: tuple[Any, ...]) -> Any:
    """For ``__array_ufunc__``: ``ufunc(*inputs)`` as NumPy's scalar loop computes it where a NumPy
    integer scalar's operator called it (``np.int64(k) * s``: the scalar hands an operand it does
    not know to the ufunc, so NumPy's ``np.int64(k) * np.int64(j)`` runs its scalar loop where
    this call does not), as :func:`computed`; else None. The interpreter's binary
    operation in the calling frame tells the operator from an explicit ``np.multiply(k, s)``."""
    function = CHECKED.get(ufunc)
    if function is None or len(inputs) != 2 or not isinstance(inputs[0], np.generic):
        return None
    caller = sys._getframe(2)  # past ``__array_ufunc__``: the frame whose operator called NumPy
    if caller.f_code.co_code[caller.f_lasti] != _BINARY_OP:
        return None
    return computed(function, inputs)
