"""Distributed arrays over MPI: ``mpiexec -n N python -m shoal app.py`` (paper 003, docs/cluster.md).

:mod:`~shoal.cluster.session` starts the MPI session, :mod:`~shoal.cluster.layout` places bases
on ranks, :mod:`~shoal.cluster.plan` turns batches into each rank's operations,
:mod:`~shoal.cluster.flush` runs them with latency hiding, :mod:`~shoal.cluster.manager` is the
component on rank 0 and :mod:`~shoal.cluster.worker` the loop of the other ranks.
"""
