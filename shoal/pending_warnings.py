"""When the runtime gives the floating-point warnings of recorded work (a mixin of
:class:`~shoal.runtime.Runtime`): once their batches have run, and earlier where the program
would see them missing (a ``catch_warnings`` block's start, end or list, a warning given at once).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from shoal import fp_warnings
from shoal.engine import fp_signals

if TYPE_CHECKING:
    from shoal.runtime import Runtime


class PendingWarnings:
    """:meth:`give_pending_warnings`, :meth:`give_warnings_before_another` and ``_warn`` of
    :class:`~shoal.runtime.Runtime`."""

    def give_pending_warnings(self: Runtime) -> None:
        """Run the recorded work that may warn and give its warnings now, under the warnings
        state in force (a ``warnings.catch_warnings`` block begins or ends:
        :mod:`shoal.warning_contexts`)."""
        if self._sites:
            self.flush(wait=True)
        elif self._watches:
            self._warn(settled=False)  # batches that ran: nothing asked of the component

    def give_warnings_before_another(self: Runtime) -> None:
        """Before a warning given at once (NumPy's own, for an array in NumPy memory, or the
        program's ``warnings.warn``), give those pending from earlier lines, in NumPy's order.
        Only on the main thread, and never inside the runtime's own work (its lock is free)."""
        if not (self._sites or self._watches) or threading.current_thread() is not threading.main_thread():
            return
        if self._lock._is_owned() or not self._lock.acquire(blocking=False):  # type: ignore[attr-defined]
            return
        try:
            self.give_pending_warnings()
        finally:
            self._lock.release()

    def _warn(self: Runtime, settled: bool) -> None:
        """Warn for the floating-point conditions of the batches that have run, in order
        (``settled``: every batch handed over has run; one whose engine took no notes is done;
        one run in another process is done once its notes are back)."""
        watches = self._watches
        while watches:
            record, sites = watches[0]
            if not (record.done or (settled and not record.remote)):
                return
            watches.popleft()
            fp_signals.forget(record)
            fp_warnings.emit(fp_signals.take(record), sites)
