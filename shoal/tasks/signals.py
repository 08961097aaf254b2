"""Ending the task runtime with the main program: SIGTERM and SIGHUP stop every worker and
remove every segment before the program dies of the signal, as it would have without us.

Workers hold the forkserver's and the resource tracker's pipes open; once the workers are
gone those two processes see end-of-file and exit on their own. Handlers are installed only
where the program left a signal's default action in place, and only from the main thread.
SIGINT needs none: its ``KeyboardInterrupt`` ends the program through ``atexit``, where the
runtime stops its workers at once (see ``Runtime._shutdown_at_exit``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import weakref
from types import FrameType
from typing import Protocol


class Stoppable(Protocol):
    def stop_now(self) -> None:
        """Kill the workers and unlink the segments at once, from a signal handler."""


#: Signals whose default action ends the program without running ``atexit``.
SIGNALS = (signal.SIGTERM, signal.SIGHUP)
_runtimes: weakref.WeakSet[Stoppable] = weakref.WeakSet()


def _on_signal(signum: int, frame: FrameType | None) -> None:
    for runtime in list(_runtimes):
        with contextlib.suppress(Exception):
            runtime.stop_now()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)  # dies of the signal, with the status it would have had


def watch(runtime: Stoppable) -> None:
    """Stop ``runtime`` when the program is ended by SIGTERM or SIGHUP."""
    _runtimes.add(runtime)
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in SIGNALS:
        if signal.getsignal(signum) is signal.SIG_DFL:
            signal.signal(signum, _on_signal)


def unwatch(runtime: Stoppable) -> None:
    """Forget ``runtime``; with none left, give the signals their default action back."""
    _runtimes.discard(runtime)
    if _runtimes or threading.current_thread() is not threading.main_thread():
        return
    for signum in SIGNALS:
        if signal.getsignal(signum) is _on_signal:
            signal.signal(signum, signal.SIG_DFL)
