"""What every builder of block operations shares: the batch's dependency lists and counts,
sequence numbers, and the base-block size of each base."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from shoal.bytecode import Instruction, View
from shoal.engine.blocks.dependencies import DependencyLists
from shoal.engine.blocks.geometry import base_blocks, view_extent
from shoal.engine.node.run.storage import Storage

MIN_VIEW_BLOCK_ELEMENTS = 16384  # below this a block operation costs more than it saves
BLOCK_ITEMSIZE = 8  # the block size counts elements of this many bytes; narrower ones get more


@dataclass
class BuildCounts:
    """What a batch was turned into: fields of ``BatchStats`` (``NodeEngine.last_stats``)."""

    kernels: int = 0  # fusion groups
    fused_instructions: int = 0
    compilable_kernels: int = 0
    whole_ops: int = 0
    product_panels: int = 0
    axis_panels: int = 0
    copy_chains: int = 0
    releases: int = 0
    deferred_writes: int = 0
    sweep_passes: int = 0


class BuildContext:
    """The dependency lists being filled, what was built so far, and how bases are blocked."""

    def __init__(self, storage: Storage, block_elements: int, threads: int, positions: Mapping[int, int] | None = None) -> None:
        self.storage = storage
        self._positions = positions or {}  # id of an instruction -> its position in the batch
        self.block_elements = block_elements
        self.threads = threads
        self.deps = DependencyLists()
        self.counts = BuildCounts()
        self._seq = 0

    def next_seq(self) -> int:
        """The next operation's program position."""
        self._seq += 1
        return self._seq

    def origin(self, instructions: Iterable[Instruction]) -> tuple[int, ...]:
        """The batch positions of ``instructions`` (a block operation's ``origin``)."""
        positions = self._positions
        return tuple(sorted({positions[id(i)] for i in instructions if id(i) in positions}))

    def block_bytes(self, base: int) -> int:
        """The size of ``base``'s base-blocks in bytes."""
        return self.block_elements * self.storage.decl(base).dtype.itemsize

    def view_blocks(self, view: View) -> list[tuple[int, int]]:
        """The ``(base, base_block)`` pairs that ``view`` touches."""
        low, high = view_extent(view)
        return [(view.base, k) for k in base_blocks(low, high, self.block_bytes(view.base))]
