"""Ctrl-C while Shoal works: held back until the work in hand is done, as NumPy's C loops do.

A ``KeyboardInterrupt`` raised in the middle of a batch would leave the batch's arrays half
computed, or its bases undeclared, which later batches then name; in the middle of a command to
MPI ranks it would leave the other ranks waiting forever. Under ``python -m shoal`` the handler
of SIGINT (where the program left Python's own) holds an interrupt that comes inside
:func:`interrupts_held` and raises it when the outermost such block ends, on the thread that
Python's signal handling runs on.
"""

from __future__ import annotations

import contextlib
import signal
import sys


def ignore_interrupts() -> None:
    """Ctrl-C does nothing in this process from now on (where Python allows setting it: the
    main thread)."""
    with contextlib.suppress(ValueError):
        signal.signal(signal.SIGINT, signal.SIG_IGN)


_held = 0  # how deep the program is in Shoal's work that must not stop halfway
_pending = False  # a Ctrl-C came meanwhile


def _abandonable() -> bool:
    """True if a second Ctrl-C may stop the work in hand halfway: the runtime's component is a
    node engine in this process (its arrays are then lost, and reading one raises
    ``shoal.errors.LostWork``). Not where other processes wait on this one (MPI ranks, which only
    the work's end keeps in step) or run it (a server)."""
    runtime = getattr(sys.modules.get("shoal.runtime"), "_current", None)
    engine = getattr(runtime, "_engine", None)
    return getattr(engine, "name", None) == "node"


def _interrupt(number: int, frame: object) -> None:
    """The SIGINT handler: Python's own, unless Shoal is in the middle of its work."""
    global _pending
    if _held:
        abandonable = _abandonable()
        if _pending and abandonable:
            from shoal.engine.blocks.scheduler import ABANDON

            ABANDON.set()
            return
        if not _pending:
            again = "; Ctrl-C again stops it (the arrays it computes are then lost)" if abandonable else ""
            sys.stderr.write(f"shoal: Ctrl-C: the work in hand finishes first{again}\n")
            sys.stderr.flush()
        _pending = True
        return
    signal.default_int_handler(number, frame)


def hold_interrupts() -> None:
    """Ctrl-C raises ``KeyboardInterrupt`` as in Python, except inside :func:`interrupts_held`,
    where it waits for the end (unless the program set a handler of its own)."""
    with contextlib.suppress(ValueError):
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _interrupt)


class interrupts_held:
    """Ctrl-C held back inside: a batch stopped halfway leaves its arrays half computed (and the
    component may not have declared its bases yet), and at MPI rank 0 a command stopped halfway
    (a batch's data sent, its plan not run; a shutdown half done) leaves the other ranks waiting
    for a message or a collective that never comes: the job hangs. It is raised at the end
    (``deliver``; as NumPy's, which checks for it only between its calls), or dropped (a shutdown
    at exit)."""

    __slots__ = ("deliver",)  # a class, not a generator: a flush enters it (0.2 µs, not 0.7)

    def __init__(self, deliver: bool = True) -> None:
        self.deliver = deliver

    def __enter__(self) -> None:
        global _held
        _held += 1

    def __exit__(self, kind: type[BaseException] | None, *exc_info: object) -> None:
        global _held, _pending
        _held -= 1
        if _held == 0 and _pending:
            _pending = False
            if self.deliver and not (kind is not None and issubclass(kind, KeyboardInterrupt)):  # not a second one
                raise KeyboardInterrupt
