"""What the runtime does when the program forks (``os.fork``, a ``multiprocessing`` pool or a
``ProcessPoolExecutor`` with the fork start method).

NumPy's child has a copy of its parent's arrays as they were at the fork, and so must Shoal's.
Before the fork the parent runs everything recorded so far and waits for it. If the component
keeps its bases in this process's memory (the node engine), the child's copy of that memory is
the child's arrays: in the child the component gets threads of its own
(:meth:`~shoal.engine.component.Component.forked`). Otherwise (a server, the ranks of an MPI
job) the parent fetches every live base into its own memory before the fork, and the child
drops the parent's connection or communicator without using it and runs on a node engine of
its own, holding those values as data no batch has declared yet (a forked process must not
call MPI, and a child writing to its parent's socket ends the parent's session).

The fetched values are kept until the runtime next hands a batch over: a pool forks its workers
one after another with nothing run in between, and they share one fetch.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, NoReturn

import numpy as np

from shoal.bytecode import Batch, View
from shoal.engine.component import Component, EngineError

if TYPE_CHECKING:
    from shoal.runtime import Runtime

# What the fork in progress holds: the runtime whose lock the parent took before it.
_forking = threading.local()
# Components a forked child stopped using: kept, so that nothing of theirs is finalised there.
_abandoned: list[object] = []


class Forks:
    """:meth:`before_fork`, :meth:`after_fork_in_parent` and :meth:`after_fork_in_child` of
    :class:`~shoal.runtime.Runtime`."""

    fork_values: dict[int, np.ndarray] | None = None  # base -> values, fetched before a fork
    fork_failure: str | None = None  # why the values could not be fetched before the fork

    def before_fork(self: Runtime) -> None:
        """In the parent, before a fork: take the lock (held until the fork is done), run what
        is recorded, and fetch the live bases if the component keeps them elsewhere."""
        self._lock.acquire()
        engine = self._engine
        if self.closed or engine is None:
            return
        try:
            self.flush(wait=True)
            if engine.in_process():
                self.fork_values = None
                return
            if self.fork_values is None:  # dropped when a batch is handed over (``Runtime.flush``)
                self.fork_values = self._fetch_live()
            import shoal.engine.node.engine  # noqa: F401 - imported once here, not in every child
            self.fork_failure = None
        except Exception as error:  # the fork goes on; the child raises it at its first array work
            self.fork_failure = f"{type(error).__name__}: {error}"

    def _fetch_live(self: Runtime) -> dict[int, np.ndarray]:
        """Every live base the component holds, whole, as one-dimensional writable arrays."""
        values: dict[int, np.ndarray] = {}
        for base_id, ref in list(self._bases.items()):
            base = ref()
            if base is None or base_id in self._deferred or base.size == 0:
                continue
            values[base_id] = self._fetch_whole(base)
        return values

    def after_fork_in_parent(self: Runtime) -> None:
        """In the parent, after a fork: let the program go on."""
        self._lock.release()

    def after_fork_in_child(self: Runtime) -> None:
        """In the child: switch to a component of the child's own, holding the values the child
        saw at the fork, then let the program go on."""
        try:
            engine = self._engine
            if self.closed or engine is None:
                return
            child = engine.forked()
            if child is None:
                _abandoned.append(engine)
                failure = self.fork_failure or self._hand_over()
                # Where the values are missing, the arrays stay where the child cannot reach
                # them: its first array work raises.
                child = _child_engine() if failure is None else Unreachable(failure)
                self._settled = {}
                self._writable = {}
                self._mirrors, self._mirror_reads, self._taken_back = {}, {}, {}  # every base is held back here now
                self._watches.clear()  # the parent's batches: the parent gives their warnings
            self._engine = child
        finally:
            self._lock.release()

    def _hand_over(self: Runtime) -> str | None:
        """Make the values fetched before the fork the data of the live bases (held back until an
        instruction names them, as a new array's data is), for the child's engine to receive;
        if a base's values are missing, hand nothing over and say which."""
        values = self.fork_values or {}
        self.fork_values = None
        live = [(base_id, ref()) for base_id, ref in list(self._bases.items()) if base_id not in self._deferred]
        bases = [base for _, base in live if base is not None]
        missing = [base.id for base in bases if base.size and base.id not in values]
        if missing:
            return f"bases {missing} were not fetched"
        for base in bases:
            data = values.get(base.id)
            self._deferred[base.id] = (base.dtype, base.size, np.empty(0, base.dtype) if data is None else data)
        self._known = {}
        return None


class Unreachable(Component):
    """The component of a forked child whose parent could not fetch its arrays before the fork
    (the server or the ranks had failed): every use raises, naming why."""

    name = "unreachable"

    def __init__(self, why: str) -> None:
        self.why = why

    @classmethod
    def configure(cls, environ: Mapping[str, str] | None = None) -> None:
        return None

    def _refuse(self) -> NoReturn:
        raise EngineError(f"this process was forked while its arrays could not be fetched: {self.why}")

    def execute(self, batch: Batch) -> None:
        self._refuse()

    def fetch(self, view: View) -> np.ndarray:
        self._refuse()

    def shutdown(self) -> None:
        return None


def _child_engine() -> Component:
    """The node engine a forked child runs on, configured from the settings, that never
    compiles (see :meth:`shoal.engine.node.engine.NodeEngine.forked`)."""
    from shoal.engine.node.compile.kernel_cache import CompileMode
    from shoal.engine.node.engine import NodeEngine

    return NodeEngine(replace(NodeEngine.configure(), compile=CompileMode.OFF))


def register(current: Callable[[], Runtime | None]) -> None:
    """Run the hooks of this module around every ``os.fork`` for the runtime ``current`` gives."""

    def before() -> None:
        runtime = current()
        _forking.runtime = runtime
        if runtime is not None:
            runtime.before_fork()

    def in_parent() -> None:
        runtime = getattr(_forking, "runtime", None)
        _forking.runtime = None
        if runtime is not None:
            runtime.after_fork_in_parent()

    def in_child() -> None:
        runtime = getattr(_forking, "runtime", None)
        _forking.runtime = None
        if runtime is not None:
            runtime.after_fork_in_child()

    os.register_at_fork(before=before, after_in_parent=in_parent, after_in_child=in_child)
