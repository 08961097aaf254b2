"""A middle component that forwards every call to the component below it.

It proves that stacking changes nothing: the differential suites run through ``pass:node`` and
``pass:reference`` as they run on the engines themselves. By default it also runs each batch on a
thread of its own, so ``execute`` returns before the batch has run, as a proxy's does: a failure
surfaces at the next ``fetch``, ``flush`` or ``shutdown``, as the component contract says.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from shoal.bytecode import Batch, View
from shoal.engine.component import Component, EngineError, described


@dataclass(frozen=True)
class PassConfig:
    """``asynchronous``: run batches on a thread of the component's own (``execute`` returns at
    once); else inside ``execute``. ``local_loops``: what :meth:`PassThrough.prefers_local_loops`
    says (True stands in for the cluster manager in one process)."""

    asynchronous: bool = True
    local_loops: bool = False


class PassThrough(Component):
    """Forwards batches, fetches, flushes and shutdown to ``inner``."""

    name = "pass"
    layered = True

    def __init__(self, config: PassConfig | None, inner: Component) -> None:
        self.config = config or PassConfig()
        self.inner = inner
        self._batches: queue.SimpleQueue[tuple[int, Batch] | None] = queue.SimpleQueue()
        self._done = threading.Condition()
        self._queued = 0
        self._finished = 0
        self._failure: EngineError | None = None
        self._worker: threading.Thread | None = None

    @classmethod
    def configure(cls, environ: Mapping[str, str] | None = None) -> PassConfig:
        return PassConfig()

    def prefers_local_loops(self) -> bool:
        return self.config.local_loops

    def execute(self, batch: Batch) -> None:
        if not self.config.asynchronous:
            self.inner.execute(batch)
            return
        if self._worker is None:
            self._worker = threading.Thread(target=self._run_batches, name="shoal-pass", daemon=True)
            self._worker.start()
        with self._done:
            self._queued += 1
            number = self._queued
        self._batches.put((number, batch))

    def _run_batches(self) -> None:
        while True:
            item = self._batches.get()
            if item is None:
                return
            number, batch = item
            try:
                self.inner.execute(batch)
            except BaseException as error:  # kept for the next call from the program's thread
                if self._failure is None:  # the first one: later ones may follow from it
                    failure = EngineError(f"batch {number}, run after execute returned: {described(error)}")
                    failure.__cause__ = error
                    self._failure = failure
            with self._done:
                self._finished += 1
                self._done.notify_all()

    def _wait(self) -> None:
        """Wait until every batch executed so far has run; raise (once) a failure among them."""
        with self._done:
            self._done.wait_for(lambda: self._finished == self._queued)
            failure, self._failure = self._failure, None
        if failure is not None:
            raise failure

    def fetch(self, view: View) -> np.ndarray:
        self._wait()
        return self.inner.fetch(view)

    def flush(self) -> None:
        self._wait()
        self.inner.flush()

    def abandon(self) -> None:
        self.inner.abandon()

    def shutdown(self) -> None:
        try:
            self._wait()
        finally:
            worker, self._worker = self._worker, None
            if worker is not None:
                self._batches.put(None)
                worker.join()
            self.inner.shutdown()

    def live_bases(self) -> int:
        self._wait()
        return self.inner.live_bases()

    def __getattr__(self, name: str) -> Any:
        """Anything else the component below offers (its statistics, say), once every batch
        executed so far has run."""
        if name.startswith("_") or name in ("inner", "config"):
            raise AttributeError(name)
        self._wait()
        return getattr(self.inner, name)
