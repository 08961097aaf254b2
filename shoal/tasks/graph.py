"""Task graph over versioned data (paper 001 §III-A1).

Every datum has an identifier and a version counter; a task that writes a datum makes a
new version, so readers of the old version never wait for the writer and the writer never
waits for them. Edges run only from the producer of a version to the tasks that read it.
"""

from __future__ import annotations

import enum
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from shoal.tasks.directions import Direction, ParameterSpec
from shoal.tasks.errors import TaskDependencyError
from shoal.tasks.shm import SegmentRef


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


MISSING = _Missing()


class TaskState(enum.Enum):
    WAITING = "waiting"
    READY = "ready"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


@dataclass(eq=False)
class Datum:
    """One piece of data known to the runtime: a caller object or a task's return value."""

    data_id: int
    owner: Callable[[], object]  # returns the caller object, or None once it is gone
    versions: dict[int, Version] = field(default_factory=dict)
    current: int = 0
    orphaned: bool = False

    @property
    def latest(self) -> Version:
        return self.versions[self.current]


@dataclass(eq=False)
class Version:
    """One version of a datum: produced once, then only read."""

    datum: Datum = field(repr=False)
    number: int
    producer: TaskNode | None = field(default=None, repr=False)
    value: object = MISSING  # held in the main process for versions produced by tasks
    error: BaseException | None = None
    done: bool = False
    pending_readers: int = 0
    reads_seen: int = 0
    nbytes: int = 0
    holders: set[int] = field(default_factory=set)  # workers caching the value
    segment: SegmentRef | None = None
    snapshot: SegmentRef | None = None  # first-sight copy, reused at promotion if unchanged
    retired: list[SegmentRef] = field(default_factory=list)  # snapshots tasks sent them may still map
    mapped_by: set[int] = field(default_factory=set)  # workers that mapped the segment
    share_refused: bool = False  # no room in shared memory: always sent by value
    locked_owner: bool = False  # the caller's array was made read-only on promotion
    released: bool = False

    @property
    def key(self) -> tuple[int, int]:
        return (self.datum.data_id, self.number)


@dataclass(eq=False)
class Binding:
    """One argument of one task: its slot, its direction, and the versions it touches."""

    slot: int | str
    spec: ParameterSpec
    value: object = MISSING  # the caller's object, for by-value arguments and version 0
    reads: Version | None = None
    writes: Version | None = None


@dataclass(eq=False)
class TaskNode:
    """One task call."""

    task_id: int
    module: str
    qualname: str
    returns: int
    bindings: list[Binding] = field(default_factory=list)
    return_versions: list[Version] = field(default_factory=list)
    waiting_on: int = 0
    dependents: list[TaskNode] = field(default_factory=list)
    state: TaskState = TaskState.WAITING
    attempts: int = 0
    worker: int | None = None
    timeout: float | None = None  # seconds the task may run before its worker is replaced
    code: tuple[str, bytes] | None = None  # (digest, pickle) of a function sent by value
    deadline: float | None = None  # monotonic time it becomes overdue, once it started
    _reads: list[Version] | None = field(default=None, repr=False)  # cached once bound

    @property
    def name(self) -> str:
        return f"{self.qualname}#{self.task_id}"

    def read_versions(self) -> list[Version]:
        """Versions this task reads (computed once its bindings are complete)."""
        if self._reads is None:
            self._reads = [b.reads for b in self.bindings if b.reads is not None]
        return self._reads

    def written_bindings(self) -> list[Binding]:
        return [b for b in self.bindings if b.writes is not None]

    def output_versions(self) -> list[Version]:
        """Written versions in argument order, then return values: the worker's output order."""
        written = [b.writes for b in self.written_bindings()]
        return [v for v in written if v is not None] + self.return_versions


def _no_owner() -> None:
    return None


def nbytes_of(value: object) -> int:
    """Size used to weigh locality: array bytes, else a nominal small size."""
    return int(value.nbytes) if isinstance(value, np.ndarray) else 64


class Graph:
    """Data registry and dependency bookkeeping; callers hold the runtime lock."""

    def __init__(self) -> None:
        self._by_object: dict[int, Datum] = {}
        self._next_data_id = 1
        self._next_task_id = 1
        self.orphans: list[Datum] = []  # appended from weakref callbacks, drained under lock

    # data ------------------------------------------------------------------------------------
    def new_datum(self, owner: object | None) -> Datum:
        """Register data; ``owner`` is the caller object (None for a task's return value)."""
        datum_id = self._next_data_id
        self._next_data_id += 1
        if owner is None:
            datum = Datum(datum_id, _no_owner)
        else:
            try:
                reference = weakref.ref(owner)
            except TypeError:
                datum = Datum(datum_id, lambda: owner)
            else:
                datum = Datum(datum_id, reference)
                weakref.finalize(owner, self.orphans.append, datum)
            self._by_object[id(owner)] = datum
            datum.versions[0] = Version(datum, 0, done=True, nbytes=nbytes_of(owner))
        return datum

    def lookup(self, value: object) -> Datum | None:
        datum = self._by_object.get(id(value))
        if datum is not None and datum.owner() is value:
            return datum
        return None

    def forget(self, datum: Datum) -> None:
        """Stop mapping the caller object to ``datum``; its versions go once unneeded."""
        datum.orphaned = True
        owner = datum.owner()
        key = id(owner) if owner is not None else None
        if key is not None and self._by_object.get(key) is datum:
            del self._by_object[key]
        else:
            for object_id, known in list(self._by_object.items()):
                if known is datum:
                    del self._by_object[object_id]

    @staticmethod
    def unneeded(version: Version) -> bool:
        """A version may be released: done, unread by pending tasks, superseded or orphaned."""
        superseded = version.datum.current != version.number or version.datum.orphaned
        return (
            not version.released and version.done and version.pending_readers == 0 and superseded
        )

    # tasks -----------------------------------------------------------------------------------
    def new_task(self, module: str, qualname: str, returns: int) -> TaskNode:
        node = TaskNode(self._next_task_id, module, qualname, returns)
        self._next_task_id += 1
        return node

    def bind_read(self, node: TaskNode, binding: Binding, datum: Datum) -> None:
        version = datum.latest
        binding.reads = version
        version.pending_readers += 1
        if binding.spec.direction is Direction.IN:
            version.reads_seen += 1
        producer = version.producer
        if producer is not None and not version.done and producer is not node:
            if producer.state is TaskState.FAILED:
                return
            producer.dependents.append(node)
            node.waiting_on += 1

    def bind_write(self, node: TaskNode, binding: Binding, datum: Datum) -> Version:
        number = datum.current + 1
        version = Version(datum, number, producer=node)
        datum.versions[number] = version
        datum.current = number
        binding.writes = version
        return version

    def add_return(self, node: TaskNode) -> Datum:
        datum = self.new_datum(None)
        version = Version(datum, 1, producer=node)
        datum.versions[1] = version
        datum.current = 1
        node.return_versions.append(version)
        return datum

    def finish_reads(self, node: TaskNode) -> list[Version]:
        """The task no longer reads its inputs; returns the versions that became unneeded."""
        freed = []
        for version in node.read_versions():
            version.pending_readers -= 1
            if self.unneeded(version):
                freed.append(version)
        return freed

    def complete(self, node: TaskNode, outputs: list[object], worker: int) -> list[TaskNode]:
        """Record outputs; returns dependents that became ready."""
        node.state = TaskState.DONE
        for version, value in zip(node.output_versions(), outputs):
            version.value = value
            version.nbytes = nbytes_of(value)
            version.done = True
            version.holders.add(worker)
        return self._release_dependents(node)

    def fail(self, node: TaskNode, error: BaseException) -> list[TaskNode]:
        """Mark the task and, transitively, everything depending on it as failed."""
        failed = []
        stack = [(node, error)]
        while stack:
            current, cause = stack.pop()
            if current.state in (TaskState.DONE, TaskState.FAILED):
                continue
            current.state = TaskState.FAILED
            failed.append(current)
            for version in current.output_versions():
                version.error = cause
                version.done = True
            for dependent in current.dependents:
                dependency_error = TaskDependencyError(
                    f"task {dependent.name} did not run: its input from task {current.name} failed"
                )
                dependency_error.__cause__ = cause
                stack.append((dependent, dependency_error))
            current.dependents = []
        return failed

    @staticmethod
    def _release_dependents(node: TaskNode) -> list[TaskNode]:
        ready = []
        for dependent in node.dependents:
            dependent.waiting_on -= 1
            if dependent.waiting_on == 0 and dependent.state is TaskState.WAITING:
                dependent.state = TaskState.READY
                ready.append(dependent)
        node.dependents = []
        return ready
