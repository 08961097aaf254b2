"""One tracer for every component: Chrome trace-event JSON that opens in Perfetto.

``SHOAL_TRACE=out.json`` starts the tracer (:func:`from_settings`, called by ``python -m
shoal``, the frontend's runtime and the task runtime); at exit it writes every recorded event
to ``out.json``. The hooks in the component stack and the task runtime read the module-level
:data:`TRACER` once and do nothing more when it is ``None``, so tracing off costs one global
lookup per hook.

Events are complete events (``"ph": "X"``) with ``ts`` and ``dur`` in microseconds since the
tracer started, on the track of the process and thread that did the work; ``"M"`` metadata
events name every process and thread, so each engine thread, each task worker process and the
main thread get a named track. Times come from :func:`time.perf_counter`, the system-wide
monotonic clock, so a task worker's times (sent back with its results) fall on the same axis.

Categories (``cat``): ``compute`` (block operations, direct runs), ``scheduling`` (batches,
planning, building block operations, submitting tasks), ``compile`` (kernels), ``task`` (task
functions in worker processes), ``communication`` (fetching data, proxy requests) and ``wait``
(the scheduling thread waiting for workers, the program waiting for tasks or for the proxy).
``python -m shoal trace-summary out.json`` prints their totals (:mod:`shoal.trace_summary`).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import multiprocessing
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from shoal import settings

CATEGORIES = ("compute", "scheduling", "compile", "task", "communication", "wait")


class Tracer:
    """Collects trace events in memory; :meth:`write` saves them as Chrome trace-event JSON."""

    def __init__(self, path: str | None = None) -> None:
        self.path = None if path is None else os.path.abspath(path)  # the program may change directory
        self.origin = time.perf_counter()
        self.pid = os.getpid()
        self.metadata: list[dict[str, Any]] = []
        # Complete events as tuples (a third of a dict's memory): name, category, start, end,
        # pid, tid, args.
        self.spans: list[tuple[str, str, float, float, int, int, dict[str, Any] | None]] = []
        self._named: set[tuple[int, int]] = set()
        self._lock = threading.Lock()
        self._name_process(self.pid, "shoal main process")

    def _name_process(self, pid: int, name: str) -> None:
        self.metadata.append({"ph": "M", "name": "process_name", "pid": pid, "tid": pid, "args": {"name": name}})

    def name_track(self, pid: int, tid: int, name: str, process: str | None = None) -> None:
        """Name thread ``tid`` of process ``pid`` (and the process, if ``process`` is given) once."""
        with self._lock:
            if (pid, tid) in self._named:
                return
            self._named.add((pid, tid))
            if process is not None:
                self._name_process(pid, process)
            self.metadata.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})

    def complete(
        self,
        name: str,
        category: str,
        start: float,
        end: float,
        args: dict[str, Any] | None = None,
        track: tuple[int, int] | None = None,
    ) -> None:
        """Record that ``name`` ran from ``start`` to ``end`` (``perf_counter`` seconds) on
        ``track`` (pid, tid), by default the calling thread's."""
        if track is None:
            tid = threading.get_native_id()
            if (self.pid, tid) not in self._named:
                thread = threading.current_thread()
                self.name_track(self.pid, tid, "main" if thread is threading.main_thread() else thread.name)
            track = (self.pid, tid)
        self.spans.append((name, category, start, end, track[0], track[1], args))  # atomic: no lock needed

    @contextlib.contextmanager
    def span(self, name: str, category: str, args: dict[str, Any] | None = None) -> Iterator[None]:
        """Record the time the ``with`` block takes (also when it raises)."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.complete(name, category, start, time.perf_counter(), args)

    def timed(self, function: Callable[[], Any], name: str, category: str) -> Any:
        """``function()``, recorded as one event (only when it returns)."""
        start = time.perf_counter()
        result = function()
        self.complete(name, category, start, time.perf_counter())
        return result

    def events(self) -> list[dict[str, Any]]:
        """Every event recorded so far, as trace-event dicts (``ts`` and ``dur`` in microseconds
        since the tracer started)."""
        events = list(self.metadata)
        origin = self.origin
        for name, category, start, end, pid, tid, args in list(self.spans):
            event = {
                "ph": "X",
                "name": name,
                "cat": category,
                "ts": round((start - origin) * 1e6, 3),
                "dur": round(max(0.0, end - start) * 1e6, 3),
                "pid": pid,
                "tid": tid,
            }
            if args:
                event["args"] = args
            events.append(event)
        return events

    def document(self) -> dict[str, Any]:
        """The trace as Chrome's JSON object format."""
        return {"traceEvents": self.events(), "displayTimeUnit": "ms"}

    def write(self, path: str | None = None) -> None:
        """Save the trace to ``path`` (default: the tracer's), replacing it whole: a reader never
        sees half a file, and no temporary file is left behind if writing fails."""
        target = path or self.path
        if target is None:
            return
        directory = os.path.dirname(os.path.abspath(target))
        descriptor, temporary = tempfile.mkstemp(prefix=".shoal-trace-", suffix=".json", dir=directory)
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                json.dump(self.document(), file, separators=(",", ":"))
            os.chmod(temporary, 0o644 & ~_umask())
            os.replace(temporary, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


#: The active tracer, or None when tracing is off (the hooks test only this).
TRACER: Tracer | None = None
_settings_read = False


def start(path: str | None = None) -> Tracer:
    """Start tracing (replacing an active tracer); with ``path`` the trace is written there at exit."""
    global TRACER
    tracer = Tracer(path)
    TRACER = tracer
    if path is not None:
        atexit.register(finish)
    return tracer


def stop() -> Tracer | None:
    """Stop tracing without writing; returns the tracer that was active."""
    global TRACER
    tracer, TRACER = TRACER, None
    return tracer


def finish() -> None:
    """Write the active tracer's file now (again: a later call writes the events recorded since too)."""
    tracer = TRACER
    if tracer is not None and os.getpid() == tracer.pid:
        tracer.write()


def from_settings() -> Tracer | None:
    """Start the tracer ``SHOAL_TRACE`` asks for, once per process, in the main process only
    (a task worker's events travel back with its results)."""
    global _settings_read
    if _settings_read or TRACER is not None:
        return TRACER
    _settings_read = True
    path = settings.TRACE.value()
    if not path or multiprocessing.parent_process() is not None:
        return None
    return start(path)
