"""The runtime's bookkeeping for a remembered element-wise call, in C where ``_record_calls.c``
was built.

Recording a call whose signature ``shoal.numpy._fast_ufunc`` remembered ends in
:meth:`~shoal.runtime.Runtime.record_new` or :meth:`~shoal.runtime.Runtime.record_call`: about
2 µs of Python an operation (the lock, the result's declaration, base and view, the releases of
the bases that died since, what the batch reads and writes). :data:`RECORDING` is the compiled
module, told here which makers and classes it builds with, or None where it was not built (no C
compiler at install). Callers call :func:`record_new` and :func:`record_call` with the runtime
first: the compiled functions, which do the same work on the runtime's attributes when nothing
unusual is going on and call the runtime's method of the same name otherwise (so both give the
same batch), or else those methods themselves. A base's
``__del__`` (its release, once per temporary) is made compiled here too where
``_base_release.c`` was built; it calls :meth:`~shoal.runtime.Runtime.release` for a base the
runtime holds back or holds memory for.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

from shoal.base_lives import DROPPED_COUNTED, LazyBase, make_base
from shoal.bytecode import View
from shoal.frozen_values import new_decl, new_instruction, new_view
from shoal.runtime import Runtime
from shoal.settled_memory import PRODUCT_READ_FACTOR

#: The Python ``LazyBase.__del__``, kept for the tests, which run both.
python_finalizer = LazyBase.__del__

RECORDING: ModuleType | None
try:
    import shoal._record_calls as RECORDING
except ImportError:  # built at install where a C compiler is found
    RECORDING = None
else:
    RECORDING.configure(make_base, new_view, new_decl, new_instruction, View, PRODUCT_READ_FACTOR)

#: ``record_new(runtime, ...)`` and ``record_call(runtime, ...)``: the compiled bookkeeping, or the
#: runtime's own methods where it was not built.
record_new: Callable[..., tuple[LazyBase, View]] = Runtime.record_new if RECORDING is None else RECORDING.record_new
record_call: Callable[..., None] = Runtime.record_call if RECORDING is None else RECORDING.record_call

try:
    from shoal._base_release import finalizer
except ImportError:
    pass
else:
    LazyBase.__del__ = finalizer(LazyBase, DROPPED_COUNTED)  # type: ignore[method-assign]
