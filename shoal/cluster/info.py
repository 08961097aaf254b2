"""The cluster's lines of ``python -m shoal info``: ranks, hosts and the MPI library."""

from __future__ import annotations

import importlib.util

from shoal.cluster import session as sessions


def lines() -> list[str]:
    """Under ``mpiexec``: every rank's host and the library (a collective call: every rank must
    make it; only rank 0's lines are meant to be printed). Else: the library that would be used."""
    if importlib.util.find_spec("mpi4py") is None:
        return ["cluster: not available (pip install shoal[mpi] brings mpi4py and MPICH)"]
    if not sessions.launched():
        try:
            library = sessions.library_version()
        except Exception as error:  # a broken MPI installation: say so, do not fail `info`
            library = f"unusable ({type(error).__name__}: {error})"
        return [f"cluster: not under mpiexec (one process); MPI library: {library}"]
    from mpi4py import MPI

    session = sessions.start()
    hosts = session.gather_text(session.host) or []
    session.finished = True  # no rank serves batches after `info`: nothing to shut down at exit
    by_host: dict[str, list[int]] = {}
    for rank, host in enumerate(hosts):
        by_host.setdefault(host or "?", []).append(rank)
    library = " ".join(MPI.Get_library_version().splitlines()[0].split())
    result = [f"cluster: {session.ranks} ranks on {len(by_host)} host(s); MPI library: {library}"]
    result += [f"  {host}: ranks {', '.join(map(str, ranks))}" for host, ranks in by_host.items()]
    return result
