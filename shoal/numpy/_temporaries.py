"""Large NumPy temporaries taken into a batch without a copy.

A NumPy array used as an operand of a lazy operation is copied into the batch: the program
could change it before the batch runs. An operator's operand that nothing else references (the
result of ``np.outer(x, y)`` in ``a -= np.outer(x, y)``, which NumPy frees after the statement)
cannot be changed by anyone, so the batch takes its memory as it is. Copying it cost 1 ms per
1000² update and, with the copies kept until the batch ran, 2.3 GB for 300 updates (NumPy: 16 MB).

Like NumPy's own elision of temporaries, this trusts a reference count only where the operator
was called by the interpreter's binary-operation instruction, which owns the reference: C code
may pass on a reference it borrowed from a container that the program still reaches.
"""

from __future__ import annotations

import dis
import sys
from typing import Any

import numpy as np

from shoal.numpy._numpy_data import from_numpy, stays_numpy

# References to an operator's temporary operand seen from :func:`adopted`: the interpreter's
# stack, the operator's parameter, this function's parameter and ``sys.getrefcount``'s argument.
_TEMPORARY_REFERENCES = 4
_BINARY_OP = dis.opmap["BINARY_OP"]
# From Python 3.14 the interpreter's stack may borrow a local's reference, so the count above
# would also match an array the program still names.
_COUNTS_HOLD = sys.version_info < (3, 14)


def adopted(value: np.ndarray) -> Any:
    """``value`` as a new lazy array holding its very memory if it is a large temporary that an
    operator of a lazy array received straight from the interpreter; else ``value`` itself.
    Called only by those operators, with their operand."""
    if not _COUNTS_HOLD or value.base is not None or sys.getrefcount(value) != _TEMPORARY_REFERENCES or stays_numpy(value):
        return value
    flags = value.flags
    if not (flags.c_contiguous and flags.writeable and flags.owndata):
        return value
    caller = sys._getframe(2)
    if caller.f_code.co_code[caller.f_lasti] != _BINARY_OP:
        return value
    return from_numpy(value, copy=False)
