"""The block layer shared by the node engine and the cluster manager (paper 003 §5.2, §5.7).

Three parts, each usable on its own; nothing here knows about kernels, memory or processes:

* :mod:`~shoal.engine.blocks.geometry`: a base is split into *base-blocks* of a fixed byte
  size; an operation's iteration space into *view-blocks* (:func:`partition`); a view-block's
  pieces that each lie in one base-block are its *sub-view-blocks* (:func:`sub_view_blocks`).
  :func:`base_blocks` and :func:`extent` say which base-blocks a strided window touches.
* :mod:`~shoal.engine.blocks.dependencies`: a :class:`BlockOp` is one schedulable unit with the
  ``(base, base_block)`` pairs it reads and writes; :class:`DependencyLists` keeps one access
  list per base-block and gives each inserted operation its reference count.
* :mod:`~shoal.engine.blocks.scheduler`: :func:`run_ready`, the one loop that runs operations
  as their counts reach zero, parameterised by ``submit`` (how an operation is started) and a
  :class:`PollSource` (how its completion, or any outside event standing for it, is learnt).
  :class:`WorkerPool` (:mod:`~shoal.engine.blocks.thread_pool`) is the node engine's pair: a
  thread pool and its completion queue.

How a cluster manager plugs in: it builds its :class:`BlockOp` s with the same geometry and
inserts them into :class:`DependencyLists`, with ``(base, base_block)`` keys for the blocks its
rank owns and for those it receives. Communication is an operation too: a receive's ``run``
(or the ``submit`` that sees it) posts a non-blocking receive, a send's posts a non-blocking
send, and work handed to another rank is one operation whose completion arrives as a message.
It then calls::

    run_ready(ops, submit, poll, capacity=...)

where ``submit(op)`` posts the request (``Isend``/``Irecv``) or hands local work to a
:class:`WorkerPool`, and ``poll.poll(timeout)`` returns ``(op, error)`` for finished requests
(``Testsome`` when ``timeout`` is 0, ``Waitsome`` or a short sleep-and-test otherwise) merged
with the pool's own ``poll(0)``. Inline operations (cheap bookkeeping) run on the loop's
thread. The loop only waits on ``poll`` when no ready operation can run and nothing is left to
build, so a rank keeps computing while its transfers are in flight.

Nothing in this package may import from :mod:`shoal.engine.node` (tests/test_architecture.py).
"""

from shoal.engine.blocks.dependencies import BlockOp, DependencyLists
from shoal.engine.blocks.geometry import (
    Mapping,
    Partition,
    base_blocks,
    broadcast_strides,
    collapse,
    extent,
    partition,
    sub_view_blocks,
    view_extent,
)
from shoal.engine.blocks.scheduler import (
    Completion,
    PollSource,
    RunStats,
    release_dependents,
    run_ready,
)
from shoal.engine.blocks.thread_pool import WorkerPool

__all__ = [
    "BlockOp",
    "Completion",
    "DependencyLists",
    "Mapping",
    "Partition",
    "PollSource",
    "RunStats",
    "WorkerPool",
    "base_blocks",
    "broadcast_strides",
    "collapse",
    "extent",
    "partition",
    "release_dependents",
    "run_ready",
    "sub_view_blocks",
    "view_extent",
]
