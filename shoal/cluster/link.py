"""How halo sweeps are planned on this job's links: own rows only, or redundant halo rows.

With halo rows a rank may compute, besides its own rows, the rows of its halo that are still
current (``redundant``): a five-point sweep then needs an exchange only once per halo depth, but
the rows a rank computes shrink from sweep to sweep, so its sweeps differ and its node engine
fuses none of them. Computing its own rows only (``own``) keeps every sweep alike, so the node
engine fuses each sweep into one kernel whose temporaries never reach memory and replays its plan,
at the price of an exchange (one message each way per neighbour) before nearly every sweep.

Which pays depends on the link: :func:`round_trip` times round trips of a message larger than a
rate limiter's burst between neighbouring ranks when the job starts, and every rank takes the
slowest pair's time. On a slow link with latency hiding, own rows win once each rank computes the
rows of a sweep that need no halo while the halo travels (:mod:`shoal.cluster.interior_first`:
Jacobi 2000² x 50 at 2 ranks over 100 Mbit/s, 0.198 s against 0.250 s redundant, whose 8-row
exchanges were waited for whole); blocking, redundant rows wait less often. And on the batch: where one sweep repeats (:func:`repeats_a_sweep`), its shrinking sweeps fuse
into passes of several (``shoal.engine.node.lower.sweeps``), and redundant rows pay on a fast link
too (Jacobi 2000² x 50 at 2 ranks on one host: 0.156-0.168 s with own rows, 0.118-0.141 s
redundant; heat, which reads a value after every sweep, 0.92 s own, 1.23-1.37 s redundant).
"""

from __future__ import annotations

import time

import numpy as np

from shoal.bytecode import Batch
from shoal.cluster.ops import released_bases

PROBE_BYTES = 1 << 18  # each way: beyond a rate limiter's burst (a 64 KiB one passed at line rate on a 100 Mbit/s link: 0.75 ms)
ROUND_TRIPS = 3  # the fastest counts: a descheduled rank must not decide for a fast link
SLOW_ROUND_TRIP = 4e-3  # seconds: below about 1 Gbit/s each way; a sweep of a rank's rows takes a few milliseconds here


def round_trip(comm: object, probes: int = ROUND_TRIPS) -> float:
    """Seconds of the fastest of ``probes`` round trips of :data:`PROBE_BYTES` between each rank
    and the next, the slowest pair's, the same on every rank (a collective over ``comm``)."""
    from mpi4py import MPI

    rank: int = comm.Get_rank()  # type: ignore[attr-defined]
    ranks: int = comm.Get_size()  # type: ignore[attr-defined]
    buffer = np.zeros(PROBE_BYTES, dtype=np.uint8)
    best = 0.0
    for parity in (0, 1):  # pairs (0, 1), (2, 3), ... then (1, 2), (3, 4), ...
        fastest = float("inf")
        if rank % 2 == parity and rank + 1 < ranks:
            for _ in range(probes):
                began = time.perf_counter()
                comm.Send([buffer, MPI.BYTE], dest=rank + 1, tag=parity)  # type: ignore[attr-defined]
                comm.Recv([buffer, MPI.BYTE], source=rank + 1, tag=parity)  # type: ignore[attr-defined]
                fastest = min(fastest, time.perf_counter() - began)
            best = max(best, fastest)
        elif rank % 2 != parity and rank >= 1:
            for _ in range(probes):
                comm.Recv([buffer, MPI.BYTE], source=rank - 1, tag=parity)  # type: ignore[attr-defined]
                comm.Send([buffer, MPI.BYTE], dest=rank - 1, tag=parity)  # type: ignore[attr-defined]
    return float(comm.allreduce(best, op=MPI.MAX))  # type: ignore[attr-defined]


def repeats_a_sweep(batch: Batch) -> bool:
    """True if ``batch`` writes a view of a base it does not release twice, with nothing but its
    temporaries written in between: a loop of one in-place sweep, such as Jacobi's."""
    temporaries = released_bases(batch.instructions)
    last = None
    for instruction in batch.instructions:
        for view in instruction.outputs:
            if view.base in temporaries:
                continue
            if view == last:
                return True
            last = view
    return False
