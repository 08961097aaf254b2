"""The frontend's runtime: records instructions into a batch and hands batches to a component.

A lazy array owns a :class:`~shoal.base_lives.LazyBase`; when the last array using a base is
garbage collected, a ``release`` instruction is recorded so the component frees it (a long
loop's memory stays flat; ``shoal.base_lives``).
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import math
import threading
import weakref
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from shoal import drawn, forks, fp_warnings, held, salvage, settings, trace
from shoal.array_sizes import below
from shoal.base_lives import BaseLives, LazyBase, make_base
from shoal.batch_boundary import BatchBoundary
from shoal.bytecode import BaseDecl, Batch, BytecodeError, Instruction, View, make_attrs
from shoal.engine import Component, create, fp_signals, stack_names
from shoal.errors import LostWork, WorkAbandoned
from shoal.frozen_values import new_decl, new_view
from shoal.handover import Handover
from shoal.interrupts import interrupts_held
from shoal.local_loops import LocalLoops
from shoal.mirrors import Mirrors
from shoal.pending_warnings import PendingWarnings
from shoal.reads import Reads
from shoal.recording_calls import CallRecording
from shoal.settled_memory import PRODUCT_READ_FACTOR, SettledMemory


def default_engine_name() -> str:
    """The stack the settings ask for, spelled ``top:...:bottom`` (``SHOAL_STACK``, ``SHOAL_ENGINE``)."""
    return ":".join(stack_names())


@dataclass
class Stats:
    """Counters a program or a test can read."""

    flushes: int = 0
    instructions: int = 0
    bases_created: int = 0
    bases_released: int = 0


_ref = weakref.ref


class Runtime(SettledMemory, Mirrors, LocalLoops, Reads, CallRecording, BaseLives, forks.Forks, PendingWarnings, Handover):
    """Records bytecode and runs it on a component at flush triggers."""

    def __init__(
        self,
        engine: str | Component | None = None,
        eager_threshold: int | None = None,
        flush_threshold: int | None = None,
        settled_threshold: int | None = None,
    ) -> None:
        # The default engine is created with the first lazy array: a program whose arrays all stay small
        # never loads it (its modules and thread pool cost start-up time and peak memory). An engine
        # chosen by name, here or in SHOAL_STACK or SHOAL_ENGINE, is created now, so a wrong name
        # fails at once.
        self._engine: Component | None = None
        self._work_lost = False  # a second Ctrl-C stopped a batch halfway (``_lose_work``)
        if isinstance(engine, Component):
            self._engine = engine
        elif engine is not None or settings.STACK.is_set() or settings.ENGINE.is_set():
            self._engine = create(engine)
        self.eager_threshold: int = settings.EAGER_THRESHOLD.value(eager_threshold)
        self.flush_threshold: int = max(1, settings.FLUSH_THRESHOLD.value(flush_threshold))
        self.flush_bytes: int = settings.FLUSH_BYTES.value()
        self._dead_bytes = 0  # bytes of NumPy data the pending batch carries for bases released since
        self.settled_threshold: int = settings.SETTLED_THRESHOLD.value(settled_threshold)
        self.dump: bool = settings.DUMP.value()
        self.verify: bool = settings.VERIFY.value()
        self.rolled_reads: bool = settings.ROLLED_READS.value() == "on"
        self.stats = Stats()
        self.closed = False
        self._abandoned = False  # interrupted: close without running what is pending
        trace.from_settings()
        self._lock = threading.RLock()
        self._pending = Batch()
        # Bases the pending batch declares, writes and reads: the others are settled.
        self._declared: set[int] = set()
        self._deferred: dict[int, tuple[np.dtype, int, np.ndarray]] = {}  # base -> (dtype, size, data) not yet in a batch
        self._written: set[int] = set()
        self._read: set[int] = set()
        self._small_run = 0  # small instructions in a row, up to the last (``settled_memory.SETTLING_RUN``)
        # Whole-base memory the component handed out since the last flush (a flush may move it),
        # to read, and to write (a component may refuse writes it allows reads of).
        self._settled: dict[int, np.ndarray] = {}
        self._writable: dict[int, np.ndarray] = {}
        self._mirrors: dict[int, np.ndarray] = {}  # read-only copies of bases a component does not offer (shoal.mirrors)
        self._mirror_reads: dict[int, int] = {}  # settled reads of such a base since a batch wrote it
        self._taken_back: dict[int, int] = {}  # small accesses to a base held back from such a component (shoal.local_loops)
        self._sites: dict[int, fp_warnings.Site] = {}  # instruction position -> where recorded
        self._watches: collections.deque[tuple[fp_signals.Watch, dict[int, fp_warnings.Site]]] = collections.deque()
        self._released: collections.deque[int] = collections.deque()
        self._dropped: collections.deque[int] = collections.deque()  # held-back bases released, to count
        self._boundary = BatchBoundary()
        self._next_id = 1
        # Bases whose memory NumPy holds (``shoal.held``), released ones NumPy views still keep,
        # the live bases by id, and the settled accesses since the last recorded instruction.
        self.held: dict[int, np.ndarray] = {}
        self.orphans: dict[int, np.ndarray] = {}
        self._bases: dict[int, weakref.ref[LazyBase]] = {}  # an entry goes with its base's release
        self.direct_run = 0
        self._known: dict[int, BaseDecl] = {}
        self._lost: set[int] = set()  # bases whose declaration verification refused
        self._carried: list[object] = []
        from shoal.numpy._uploads import UploadCache

        self.uploads = UploadCache()

    @property
    def engine(self) -> Component:
        """The component batches run on (the default one is created on first use)."""
        if self._work_lost:
            raise LostWork("Shoal's work was stopped halfway by a second Ctrl-C: the values of lazy arrays computed since the last finished batch are lost")
        engine = self._engine
        if engine is None:
            with self._lock:
                if self._engine is None:
                    self._engine = create()
                engine = self._engine
        return engine

    # recording -------------------------------------------------------------------------------
    def new_base(
        self, dtype: np.dtype, size: int, data: np.ndarray | None = None, donate: bool = True
    ) -> LazyBase:
        """Declare a new base of ``size`` elements filled from ``data`` (1-D). With ``donate`` the
        caller gives ``data`` away: the component may keep and write it instead of copying.

        A base given its data is held back here (``_deferred``) until an instruction names it:
        one that only NumPy reads and writes (a loop's small results computed at once, see
        ``shoal/numpy/_settled.py``) never costs the component a declaration and a release."""
        if self._engine is None:
            _ = self.engine  # the first large array loads the engine (not the first flush, mid-program)
        with self._lock:
            base_id = self._next_id
            self._next_id += 1
            self.stats.bases_created += 1
            if data is not None and donate:
                flags = data.flags
                if flags.c_contiguous and flags.writeable:
                    self._deferred[base_id] = (dtype, size, data)
                    base = make_base(self, base_id, dtype, size, [])
                    self._bases[base_id] = _ref(base)
                    return base
            self._pending.bases.append(BaseDecl(base_id, dtype, size))
            self._declared.add(base_id)
            if data is not None:
                self._pending.data[base_id] = data
            base = make_base(self, base_id, dtype, size, [])
            self._bases[base_id] = _ref(base)
            return base

    def lazy_base(self, base_id: int) -> LazyBase | None:
        """The live base ``base_id``, if any."""
        ref = self._bases.get(base_id)
        return None if ref is None else ref()

    def next_base_id(self) -> int:
        """A fresh base id (the lock is held)."""
        base_id = self._next_id
        self._next_id += 1
        return base_id

    @property
    def pending(self) -> Batch:
        """The batch being recorded (the lock is held)."""
        return self._pending

    def note_written(self, base_id: int) -> None:
        """Note that the pending batch writes ``base_id`` (the lock is held)."""
        self._written.add(base_id)

    def _declare_deferred(self, base_id: int) -> None:
        """Declare a base held back by :meth:`new_base` in the pending batch (the lock is held)."""
        dtype, size, data = self._deferred.pop(base_id)
        pending = self._pending
        pending.bases.append(BaseDecl(base_id, dtype, size))
        pending.data[base_id] = data
        pending.donated.add(base_id)
        self._declared.add(base_id)

    def record(self, op: str, outputs: tuple[View, ...], inputs: tuple = (), **attrs) -> None:
        """Append one instruction; flush once the batch reaches its size threshold, at the point
        of the program's loop where the previous batch began (``batch_boundary``), and before
        appending to a batch that carries ``flush_bytes`` of NumPy data for bases already released
        (temporaries NumPy would have freed)."""
        with self._lock:
            if self._released or self._dropped:
                self._record_releases()
            if self._dead_bytes >= self.flush_bytes:
                self.flush()
            self.direct_run = 0
            kept = self._unhold(outputs, inputs) if self.held else ()
            deferred = self._deferred
            if deferred:
                for value in (*outputs, *inputs):
                    if type(value) is View and value.base in deferred:
                        self._declare_deferred(value.base)
            instructions = self._pending.instructions
            instructions.append(Instruction(op, outputs, inputs, make_attrs(**attrs) if attrs else ()))
            limit = self.settled_threshold
            small = bool(outputs)
            written = self._written
            for view in outputs:
                written.add(view.base)
                if small and not below(math.prod(view.shape), view.dtype.itemsize, limit):
                    small = False
            read = self._read
            for value in inputs:
                if type(value) is View:
                    read.add(value.base)
                    if small and math.prod(value.shape) > PRODUCT_READ_FACTOR * limit:
                        small = False
            self._small_run = self._small_run + 1 if small else 0

            self._recorded(instructions, fp_warnings.site(op, outputs, inputs), kept)

    def record_new(
        self,
        op: str,
        dtype: np.dtype,
        shape: tuple[int, ...],
        strides: tuple[int, ...],
        size: int,
        inputs: tuple,
        largest_input: int,
        site: fp_warnings.Site | None,
    ) -> tuple[LazyBase, View]:
        """:meth:`record_call` into a new base of ``size`` elements (:meth:`new_base`), viewed
        whole with ``shape`` and ``strides``; returns the base and the view."""
        if self._engine is None:
            _ = self.engine
        with self._lock:
            base_id = self._next_id
            self._next_id = base_id + 1
            self.stats.bases_created += 1
            self._pending.bases.append(new_decl(base_id, dtype, size))
            self._declared.add(base_id)
            base = make_base(self, base_id, dtype, size, [])
            self._bases[base_id] = _ref(base)
            view = new_view(base_id, dtype, 0, shape, strides)
            self._record_call(op, view, inputs, size, largest_input, site)
            return base, view

    def _unhold(self, outputs: tuple[View, ...], inputs: tuple) -> list[int]:
        """Hand the held bases an instruction reads or writes back to the engine; those that stay
        held (NumPy views of their memory are alive) are returned."""
        touched = {view.base for view in outputs}.union(value.base for value in inputs if type(value) is View)
        return [base for base in touched if base in self.held and held.unhold(self, base)]

    def carry(self, array: object) -> None:
        """Keep ``array`` alive until the next instruction is recorded (its base is an operand)."""
        self._carried.append(array)

    def expect_draw(self, made: drawn.Recipe, shape: tuple[int, ...]) -> None:
        """Tell the component that a large draw ``made`` of ``shape`` is about to be made
        (:meth:`shoal.engine.component.Component.expect_draw`)."""
        if self._engine is not None:
            with self._lock:
                self._engine.expect_draw(made, shape)

    # running ---------------------------------------------------------------------------------
    def flush(self, wait: bool = False) -> None:
        """Hand everything recorded so far to the component; with ``wait``, return once it has
        run (an error in a batch the component ran asynchronously is raised here). Ctrl-C waits
        for the batch to end (:mod:`shoal.interrupts`)."""
        with interrupts_held(), self._lock:
            self._record_releases()
            batch = self._pending
            if batch.is_empty():
                if wait and self._engine is not None:
                    self._engine.flush()
                    self._warn(settled=True)
                return
            self._pending = Batch()
            self.fork_values = None  # values fetched for a fork (``shoal.forks``) may change now
            self._dead_bytes = 0
            self._declared = set()
            if self._engine is None or not self._engine.prefers_local_loops():
                self._small_run = 0  # else a loop of small work flushing on its own still counts (shoal.local_loops)
            if self._mirror_reads or self._taken_back:
                self._drop_mirrors(self._written)
            self._written = set()
            self._read = set()
            self._settled = {}
            self._writable = {}

            sites, self._sites = self._sites, {}
            if self._lost:
                batch = salvage.without_lost(batch, self._lost)
            self._boundary.flushed(batch.instructions)
            if self.rolled_reads:
                batch, sites = self._padded_rolls(batch, sites)
            self.stats.flushes += 1
            self.stats.instructions += len(batch.instructions)
            known = dict(self._known) if self.verify else None
            carried = list(batch.data.values()) if batch.data else None  # the component may take them out
            try:
                self._execute(batch, sites, wait)
            except WorkAbandoned:
                self._lose_work()
                raise KeyboardInterrupt from None  # the program's, at its line
            except BytecodeError as error:
                if not salvage.rejected(error):
                    raise
                if known is not None:
                    self._known = known
                first = salvage.salvage(batch, self._execute_part, self._lost)
                if first is None:
                    raise
                raise first from None
            finally:
                if carried:  # the component holds them now and may write them
                    drawn.spoil_all(carried)
            self._warn(settled=wait)

    def _lose_work(self) -> None:
        """A second Ctrl-C stopped a batch halfway: nothing runs or is read from the component any
        more (every read raises ``LostWork``), its settled memory included."""
        self._work_lost = True
        self.settled_threshold = 0
        self._settled = {}
        self._writable = {}

    def abandon(self) -> None:
        """Run nothing more at :meth:`close`: the program was interrupted (what the program's
        own exit handlers read still runs)."""
        self._abandoned = True

    def close(self) -> None:
        """Flush (unless :meth:`abandon` was called) and shut the component down."""
        with self._lock:
            if self.closed:
                return
            try:
                if not self._abandoned:
                    self.flush()
                elif self._engine is not None:
                    self._engine.abandon()
            finally:
                self.uploads.clear()
                self._deferred.clear()
                self.closed = True
                if self._engine is not None:
                    self._engine.shutdown()
                    self._warn(settled=False)


_current: Runtime | None = None
_current_lock = threading.Lock()


def current() -> Runtime:
    """The runtime in use, created on first use from the environment."""
    global _current
    runtime = _current
    if runtime is None:
        with _current_lock:
            if _current is None:
                _current = Runtime()
            runtime = _current
    return runtime


def install(runtime: Runtime) -> None:
    """Make ``runtime`` the one in use from now on; the previous one is flushed and closed."""
    global _current
    with _current_lock:
        previous, _current = _current, runtime
    if previous is not None:
        previous.close()


def give_pending_warnings() -> None:
    """Give the warnings of the recorded work that may warn now, if a runtime is open
    (:meth:`Runtime.give_pending_warnings`)."""
    if _current is not None and not _current.closed:
        _current.give_pending_warnings()


def abandon() -> None:
    """The program was interrupted: the runtime in use runs nothing more at exit (see
    :meth:`Runtime.abandon`)."""
    if _current is not None:
        _current.abandon()


def give_warnings_before_another() -> None:
    """:meth:`Runtime.give_warnings_before_another` of the open runtime, if any."""
    if _current is not None and not _current.closed:
        _current.give_warnings_before_another()


def flush() -> None:
    """Run everything recorded so far, and wait until it has run."""
    if _current is not None:
        _current.flush(wait=True)


@contextlib.contextmanager
def configure(
    engine: str | Component | None = None,
    eager_threshold: int | None = None,
    flush_threshold: int | None = None,
    settled_threshold: int | None = None,
) -> Iterator[Runtime]:
    """Use a fresh runtime with these settings inside the block; the previous one comes back after.

    Arrays created inside the block belong to its runtime and must not be used after it.
    """
    global _current
    previous = _current
    if previous is not None:
        previous.flush()
    runtime = Runtime(engine, eager_threshold, flush_threshold, settled_threshold)
    _current = runtime
    try:
        yield runtime
    finally:
        _current = previous
        runtime.close()


def _close_at_exit() -> None:
    if _current is not None:
        _current.close()
    trace.finish()  # after the last batch has run (this handler runs after the tracer's own)


atexit.register(_close_at_exit)
forks.register(lambda: _current)
