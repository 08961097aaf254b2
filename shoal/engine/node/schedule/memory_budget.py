"""How much base memory a batch may hold while its block operations run out of program order.

Run one at a time in program order, a batch's operations hold at most some number of bytes of
base memory: every release runs before the next operation takes memory. On the pool, an
operation that is ready may start while earlier ones still run, and if it takes memory before
their releases free some, the batch holds more than program order would. Letting such
operations run whenever the bytes held stayed below the most ever held (the old rule) ratcheted
that mark up batch after batch: Black-Scholes at 10^6 options, 30 days held 145 MiB of bases on
two threads against 114 MiB in program order, and its peak RSS rose above NumPy's. Making every
operation that takes memory wait for those in flight costs 5-12% of the time (shallow water
1022², 10 steps: 0.27 s against 0.31 s).

So the batch gets a *limit*: the most bytes that program order holds, simulated as operations
are built (in program order; while later ones are still being built, the most over those built
so far). While others are in flight, an operation that would take memory beyond the limit waits
for them. A limit per operation (the most held up to its own turn) kept the same peak but held
operations back far more often: lattice Boltzmann 1024, 5 steps 178 times against 12, shallow
water 83 against 3.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from shoal.bytecode import BaseDecl
from shoal.engine.blocks.dependencies import BlockOp


class BaseMemory(Protocol):
    """What the budget reads of the storage (a plan's bound storage or the engine's own)."""

    def decl(self, base: int) -> BaseDecl: ...

    def has_memory(self, base: int) -> bool: ...


class MemoryBudget:
    """The program-order memory limit for the block operations of one run of a batch."""

    def __init__(self, storage: BaseMemory, held: int) -> None:
        self._storage = storage
        self._held = held  # bytes that program order holds after the operations added so far
        self._peak = held
        self._holding: set[int] = set()  # bases program order has given memory (or that had it)
        self._seen: set[int] = set()

    def add(self, ops: Iterable[BlockOp]) -> None:
        """Follow ``ops`` (in program order, after the ones added before) through memory."""
        for op in ops:
            for base in op.bases:
                self._see(base)
                if base not in self._holding:
                    self._holding.add(base)
                    self._held += self._storage.decl(base).nbytes
            if op.frees is not None:
                self._see(op.frees)
                if op.frees in self._holding:
                    self._holding.discard(op.frees)
                    self._held -= self._storage.decl(op.frees).nbytes
            self._peak = max(self._peak, self._held)

    def _see(self, base: int) -> None:
        if base not in self._seen:
            self._seen.add(base)
            if self._storage.has_memory(base):
                self._holding.add(base)

    def allows(self, op: BlockOp, held: int) -> bool:
        """True if ``op`` may start now, with ``held`` bytes of bases held: it takes no memory, or
        not beyond the most that program order holds."""
        taking = sum(self._storage.decl(base).nbytes for base in set(op.bases) if not self._storage.has_memory(base))
        return taking == 0 or held + taking <= self._peak

    @property
    def peak(self) -> int:
        """The most bytes program order holds over the operations added so far."""
        return self._peak
