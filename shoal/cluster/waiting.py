"""Waiting for MPI requests without keeping a core from a rank that shares it.

MPI waits in a busy loop. Where a host runs more ranks than it has cores, a rank waiting for a
message (or for rank 0's next command) then takes processor time from the rank it waits for.
With ``yielding`` a wait tests its requests and gives the processor up between tests:
``sched_yield`` for the first :data:`SPIN_SECONDS`, short sleeps after that (a rank idle while
rank 0 runs the program's Python). Without it, MPI's own wait runs.

A rank waiting for rank 0's next command yields also where it has a core of its own, once its
last such wait took :data:`LONG_IDLE_SECONDS` or more (:meth:`shoal.cluster.session.Session.receive`):
rank 0 is then running work alone, whose threads (and BLAS's) MPI's busy wait would slow.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any, TypeVar

SPIN_SECONDS = 0.001  # tests between yields before sleeping between them
SLEEP_SECONDS = 50e-6
LONG_IDLE_SECONDS = 0.002  # a rank that waited this long for a command gives the processor up in the next wait

T = TypeVar("T")


def _poll(test: Callable[[], T]) -> T:
    """``test()`` until it returns something true, giving the processor up between calls."""
    found = test()
    if found:
        return found
    began = time.perf_counter()
    while True:
        if time.perf_counter() - began < SPIN_SECONDS:
            os.sched_yield()
        else:
            time.sleep(SLEEP_SECONDS)
        found = test()
        if found:
            return found


def wait(request: Any, status: Any = None, yielding: bool = False) -> None:
    """Wait for one request (``status`` filled in if given)."""
    if not yielding:
        request.Wait(status)
        return
    _poll(lambda: request.Test(status))


def wait_all(requests: list, yielding: bool = False) -> None:
    """Wait for every request of ``requests``."""
    from mpi4py import MPI

    if not yielding:
        MPI.Request.Waitall(requests)
        return
    _poll(lambda: MPI.Request.Testall(requests))


def wait_some(requests: list, statuses: list, yielding: bool = False) -> list[int]:
    """Wait until some of ``requests`` finish; their indices (``statuses`` in that order)."""
    from mpi4py import MPI

    if not yielding:
        return MPI.Request.Waitsome(requests, statuses) or []

    def test() -> tuple[list[int]] | None:
        found = MPI.Request.Testsome(requests, statuses)  # None: no request is active
        return ([],) if found is None else ((found,) if found else None)

    return _poll(test)[0]
