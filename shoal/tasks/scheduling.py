"""Scheduling: which worker runs a ready task, and the message that tells it to."""

from __future__ import annotations

import itertools

import numpy as np

from shoal.tasks import wire
from shoal.tasks.directions import Direction
from shoal.tasks.graph import Binding, TaskNode, TaskState
from shoal.tasks.pool import WorkerHandle
from shoal.tasks.state import RuntimeState

#: Tasks queued on one worker at a time: one running, one waiting behind it.
WORKER_CAPACITY = 2
#: A task whose function ran shorter than this (moving average) counts as short.
SHORT_TASK_SECONDS = 0.001
#: Capacity is counted in units: a task costs LONG_TASK_UNITS, a short one 1, so a worker
#: queues up to WORKER_CAPACITY long tasks or WORKER_CAPACITY * LONG_TASK_UNITS short ones.
LONG_TASK_UNITS = 16
CAPACITY_UNITS = WORKER_CAPACITY * LONG_TASK_UNITS


class Scheduling(RuntimeState):
    """Places ready tasks on workers by data locality and load; callers hold the lock."""

    def _schedule(self, nodes: list[TaskNode]) -> None:
        for node in nodes:
            handle = self._pick_worker(node)
            if handle is None:
                self._ready.append(node)
            else:
                self._dispatch(node, handle)

    @staticmethod
    def _locality(node: TaskNode, handle: WorkerHandle) -> int:
        reads = node.read_versions()
        if not reads:
            return 0
        return sum(v.nbytes for v in reads if handle.index in v.holders)

    def _pick_worker(self, node: TaskNode) -> WorkerHandle | None:
        best: WorkerHandle | None = None
        best_key = (-1, 0)
        for handle in self._workers.values():
            if handle.load >= CAPACITY_UNITS:
                continue
            key = (self._locality(node, handle), -handle.load)
            if key > best_key:
                best, best_key = handle, key
        return best

    def _fill(self, handle: WorkerHandle) -> None:
        while self._ready and handle.alive and handle.load < CAPACITY_UNITS:
            window = list(itertools.islice(self._ready, 16))
            scores = [self._locality(node, handle) for node in window]
            position = scores.index(max(scores))
            node = window[position]
            del self._ready[position]
            self._dispatch(node, handle)

    def _dispatch(self, node: TaskNode, handle: WorkerHandle) -> None:
        try:
            args: list[wire.Arg] = []
            kwargs: dict[str, wire.Arg] = {}
            for binding in node.bindings:
                arg = self._arg_for(node, binding, handle)
                if isinstance(binding.slot, int):
                    args.append(arg)
                else:
                    kwargs[binding.slot] = arg
        except Exception as error:
            self._fail([node], error)
            return
        drops, segments = handle.take_drops()
        estimate = self._seconds.get((node.module, node.qualname))
        short = estimate is not None and estimate < SHORT_TASK_SECONDS
        code_id = code = None
        if node.code is not None:
            code_id = node.code[0]
            if code_id not in handle.codes:
                handle.codes.add(code_id)
                code = node.code[1]
        message = wire.TaskMessage(
            node.task_id,
            node.module,
            node.qualname,
            args,
            kwargs,
            [b.slot for b in node.written_bindings()],
            [v.key for v in node.output_versions()],
            node.returns,
            drops,
            segments,
            short,
            node.timeout is not None,
            code_id,
            code,
        )
        node.state = TaskState.RUNNING
        node.worker = handle.index
        handle.add(node, 1 if short else LONG_TASK_UNITS)
        handle.outbox.put(message)

    def _arg_for(self, node: TaskNode, binding: Binding, handle: WorkerHandle) -> wire.Arg:
        version = binding.reads
        if version is None:
            return wire.ValueArg(binding.value)
        value = binding.value if version.number == 0 else version.value
        if binding.spec.recurrent_read_only and not isinstance(value, np.ndarray):
            raise TypeError(
                f"task {node.name}: parameter {binding.slot!r} is marked recurrent read-only, "
                f"which needs a NumPy array, got {type(value).__name__}"
            )
        if binding.spec.direction is Direction.IN and isinstance(value, np.ndarray):
            shared = self._shared_arg(binding, version, value, handle)
            if shared is not None:
                return shared
        if handle.index in version.holders:
            take = binding.spec.direction is Direction.INOUT
            if take:
                version.holders.discard(handle.index)
            return wire.CachedArg(version.key, take)
        return wire.ValueArg(value)
