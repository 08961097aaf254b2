"""Futures returned by task calls."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shoal.tasks.graph import Datum
    from shoal.tasks.runtime import Runtime


class Future:
    """The value a task call will return. Pass it to other tasks or get it with ``wait_on``."""

    __slots__ = ("__weakref__", "_datum", "_orphans", "_runtime")

    def __init__(self, datum: Datum, runtime: Runtime, orphans: list[Datum] | None = None) -> None:
        self._datum = datum
        self._runtime = runtime
        self._orphans = orphans  # where to report the value unneeded once the future is gone

    def __del__(self) -> None:
        # Cheaper than weakref.finalize per future; list.append is atomic, so no lock needed.
        if self._orphans is not None:
            self._orphans.append(self._datum)

    def result(self, timeout: float | None = None) -> object:
        """Wait for the value (same as ``wait_on(future, timeout=timeout)``)."""
        return self._runtime.wait_on(self, timeout)

    def done(self) -> bool:
        """Whether the task producing this value has finished or failed."""
        return self._datum.latest.done

    def cancel(self) -> bool:
        """Cancel the task (stopping it if it runs); False if it had already finished."""
        return self._runtime.cancel(self)

    def cancelled(self) -> bool:
        """Whether the task producing this value was cancelled."""
        from shoal.tasks.errors import TaskCancelledError

        version = self._datum.versions.get(self._datum.current)
        return version is not None and isinstance(version.error, TaskCancelledError)

    def __repr__(self) -> str:
        state = "done" if self._datum.versions and self.done() else "pending"
        return f"<Future data {self._datum.data_id} v{self._datum.current} {state}>"
