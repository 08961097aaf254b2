"""The dependency system: access lists per base-block, a reference count per block operation.

Paper 003 §5.7.2 replaces a full DAG with one list of access nodes per base-block. Here each
base-block keeps the operations that last wrote it and those that read it since; a new operation
counts the unfinished ones it conflicts with (read-after-write, write-after-read,
write-after-write) as its reference count and registers itself with them. When an operation
finishes, its dependents' counts drop; an operation whose count reaches zero is ready.

The block operations of one fused group are inserted together: by construction they touch
disjoint elements, so they never wait for one another even where they share a base-block.

Operations may be inserted while earlier ones run (the engine builds a batch's later groups
while the pool runs its first ones): a predecessor that has already finished is recorded as an
edge, so a replay of the plan waits for it, but not counted in the live reference count.

An operation that needs a base's memory (``bases``) but touches none of its bytes (an empty
view: a boolean mask that selects nothing) still reads the base's first block, so the release
of that base, which writes every block, waits for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True, eq=False)
class BlockOp:
    """One schedulable unit: a fused kernel over one view-block, or a whole-view operation.

    ``reads`` and ``writes`` are ``(base, base_block)`` pairs; ``bases`` the bases it needs
    allocated before it runs, ``written`` those of them it writes; ``frees`` the base a release
    frees; ``inline`` (cheap) operations run on the scheduling thread as soon
    as they are ready; ``exclusive`` ones run there too, but alone. ``origin`` says what the
    operation computes as positions of instructions in its batch, so that a failure can name them.
    """

    seq: int
    run: Callable[[], Any]
    reads: tuple[tuple[int, int], ...]
    writes: tuple[tuple[int, int], ...]
    bases: tuple[int, ...] = ()
    written: tuple[int, ...] = ()
    inline: bool = False
    exclusive: bool = False
    frees: int | None = None  # the base a release operation frees
    label: str = ""
    origin: tuple[int, ...] = ()
    refcount: int = 0  # unfinished predecessors
    waits: int = 0  # all predecessors: the reference count a replay of the plan starts from
    done: bool = False
    dependents: list[BlockOp] = field(default_factory=list)
    result: Any = None

    def __lt__(self, other: BlockOp) -> bool:
        return self.seq < other.seq


@dataclass(slots=True)
class _BlockState:
    writers: list[BlockOp] = field(default_factory=list)
    readers: list[BlockOp] = field(default_factory=list)


class DependencyLists:
    """Per base-block access lists for one batch; ``insert_group`` computes reference counts."""

    def __init__(self) -> None:
        self._blocks: dict[tuple[int, int], _BlockState] = {}
        self.ops: list[BlockOp] = []
        self.edges = 0

    def insert(self, op: BlockOp) -> None:
        self.insert_group([op])

    def insert_group(self, ops: Iterable[BlockOp], after: Iterable[BlockOp] = ()) -> None:
        """Insert operations that do not depend on one another; each also waits for ``after``."""
        ops = list(ops)
        after = list(after)
        for op in ops:
            _read_untouched_bases(op)
            predecessors: set[int] = set()
            for key in op.reads:
                state = self._blocks.get(key)
                if state is not None:
                    self._depend(op, state.writers, predecessors)
            for key in op.writes:
                state = self._blocks.get(key)
                if state is not None:
                    self._depend(op, state.writers, predecessors)
                    self._depend(op, state.readers, predecessors)
            self._depend(op, after, predecessors)
        blocks = self._blocks
        written: dict[tuple[int, int], list[BlockOp]] = {}
        for op in ops:
            for key in op.writes:
                written.setdefault(key, []).append(op)
        for key, writers in written.items():
            blocks[key] = _BlockState(writers, [])
        for op in ops:
            for key in op.reads:
                state = blocks.get(key)
                if state is None:
                    blocks[key] = _BlockState([], [op])
                elif op not in state.writers:
                    state.readers.append(op)
        self.ops.extend(ops)

    def _depend(self, op: BlockOp, on: list[BlockOp], seen: set[int]) -> None:
        for other in on:
            if id(other) not in seen:
                seen.add(id(other))
                other.dependents.append(op)
                op.waits += 1
                if not other.done:
                    op.refcount += 1
                self.edges += 1


def _read_untouched_bases(op: BlockOp) -> None:
    """Give ``op`` a read of block 0 of every base it needs but accesses no block of."""
    if not op.bases:
        return
    touched = {base for base, _ in op.reads} | {base for base, _ in op.writes}
    missing = tuple((base, 0) for base in op.bases if base not in touched)
    if missing:
        op.reads = op.reads + missing
