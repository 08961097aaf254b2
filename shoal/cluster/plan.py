"""Turning a batch into each rank's operations: computations, sends and receives (paper 003 §5).

Every rank plans the whole batch with the same code and the same layouts, so all ranks agree on
every message (its sender, receiver, tag and shape) without exchanging any; each keeps only its
own operations. An operation lists the local memory it reads and writes (base, byte range); the
flush (:mod:`shoal.cluster.flush`) orders operations by those accesses, the per-base dependency
lists of paper 003 §5.7.

Three schemes cover every instruction:

- *owner computes* (element-wise operations, ``copy``, ``fill``, ``where``): the instruction is
  cut into pieces in which every operand lies on one rank (:func:`shoal.cluster.layout.split`);
  the rank holding a piece's output runs it, after receiving each input piece that lives
  elsewhere (one message per piece: a sub-view-block; :mod:`shoal.cluster.owner_computes`);
- *reductions and matrix products* combine partial results or replicate one operand
  (:mod:`shoal.cluster.collectives`);
- *gathered*: rank 0 assembles every operand in temporary bases, runs the instruction there, and
  sends each output piece back to its owner (:mod:`shoal.cluster.gathered`). Creation and every
  other instruction run this way; an operation that is neither a creation nor an operand of rank 0's own small bases warns once
  with :class:`shoal.errors.ShoalFallbackWarning` (rank 0's component gives the warnings in
  :attr:`Planner.warnings` once the batch has run everywhere).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal

import numpy as np

from shoal.bytecode import BaseDecl, Batch, Instruction, Kind, View, spec
from shoal.cluster import interior_first
from shoal.cluster.collectives import plan_reduction
from shoal.cluster.cyclic import CyclicLayout
from shoal.cluster.declared_layouts import declared_layouts
from shoal.cluster.gathered import GatheredPlanning
from shoal.cluster.halo import Operands, Valid, initial_valid, invalidate, plan_with_halos
from shoal.cluster.interior_first import Region
from shoal.cluster.layout import (
    AnyLayout,
    TooFragmented,
    everywhere,
    local_part,
    sub_view,
    whole_on,
)
from shoal.cluster.leading_gather import plan_leading_gather
from shoal.cluster.link import repeats_a_sweep
from shoal.cluster.matmul import plan_matmul
from shoal.cluster.ops import Access, Op, access, contiguous, release_of, released_bases
from shoal.cluster.owner_computes import OwnerComputesPlanning
from shoal.cluster.plan_cache import (
    PlanCache,
    Template,
    Uncacheable,
    batch_key,
    make_template,
    replay,
)
from shoal.cluster.reader_rows import RowPlan, plan_rows

OWNER_COMPUTES = frozenset({"copy", "fill", "where"})
BLOCKS_PER_BASE = 64  # a local base's bytes are tracked in about this many dependency blocks
HALO_BLOCKS_PER_BASE = 8  # fewer for a base with halos: each instruction is one piece per rank
MIN_BLOCK_BYTES = 4096


@dataclass
class PlanConfig:
    """``min_bytes``: bases of at least this many bytes are distributed. ``replicate_bytes``:
    smaller bases that come with data and that their batch does not write are kept on every rank
    (:mod:`shoal.cluster.declared_layouts`). ``max_pieces``: more
    pieces than this for one instruction and it runs gathered instead. ``cache_size``: distinct
    batches whose plans are kept (:mod:`shoal.cluster.plan_cache`). ``halo_rows``: rows of its
    neighbours each rank keeps of a base split by rows (:mod:`shoal.cluster.halo`). ``layout``:
    ``rows`` (one range of whole rows per rank) or ``block-cyclic``
    (:mod:`shoal.cluster.cyclic`, blocks of ``block``, or chosen when it is empty; no halos)."""

    min_bytes: int = 1 << 16
    max_pieces: int = 4096
    replicate_bytes: int = 1 << 12  # smaller bases that come with data and are not written: on every rank
    cache_size: int = 64  # batches whose plans are kept for replay (0: none)
    halo_rows: int = 0  # rows of its neighbours each rank keeps of a row-split base
    layout: str = "rows"
    block: tuple[int, ...] = ()
    redundant_rows: bool = True  # compute current halo rows too (fewer exchanges), else own rows only
    redundant_for_sweeps: bool = False  # own rows, but redundant ones in a batch that repeats a sweep (``link``)
    interior_first: bool = False  # own rows: a sweep's rows that need no halo run while it travels (:mod:`shoal.cluster.interior_first`)


class Planner(GatheredPlanning, OwnerComputesPlanning):
    """One rank's view of the global bases: their layouts and its local bases."""

    def __init__(self, rank: int, ranks: int, config: PlanConfig, tag_limit: int) -> None:
        self.rank = rank
        self.ranks = ranks
        self.config = config
        self.redundant_rows = config.redundant_rows  # for the batch being planned (:meth:`choose_rows`)
        self.tag_limit = tag_limit
        self.layouts: dict[int, AnyLayout] = {}
        self.decls: dict[int, BaseDecl] = {}
        self.local: dict[int, int] = {}
        self.block_bytes: dict[int, int] = {}  # local base -> bytes per dependency block
        self._retired: list[int] = []
        self._next_local = 1
        self._tag = 0
        self.warned: set[str] = set()
        self.warnings: list[str] = []  # fallback warnings to give once the batch has run
        self.ops: list[Op] = []
        self.declared: dict[int, int] = {}  # bases the batch being planned declared: their local base here
        self.declared_layouts: dict[int, AnyLayout] = {}
        self._undeclared: dict[int, BaseDecl] = {}  # new local bases not yet given to an operation
        self._first: Op | None = None  # the batch's first operation: it declares the bases with data
        self.valid: dict[int, Valid] = {}  # bases with halos: each rank's current bytes
        self.demand: dict[int, Valid] = {}  # bases with halos: the bytes each rank's own rows have read
        self.cache = PlanCache(config.cache_size)
        self.template: Template | None = None  # the cached plan the last batch's operations follow
        self.key: tuple | None = None  # the last batch's plan-cache key
        self.local_data = False  # the batch's data is already this rank's part (not rank 0's whole arrays)
        self.later: list[Instruction] = []  # the instructions of the batch being planned
        self.position = 0  # the one being planned among them
        self.temporaries: set[int] = set()  # the bases the batch being planned releases
        self.row_plan = RowPlan()  # own-rows mode: the batch's temporaries' rows and halo reads (shoal.cluster.reader_rows)
        self.region: Region | None = None  # own rows: the instructions since an exchange (shoal.cluster.interior_first)
        self.pending: Region | None = None  # a region that ended: split if a new exchange or the batch's end follows
        self.unused: set[int] = set()  # temporaries whose computation interior first replaced: nothing to release
        self.stamped = 0  # the operations before this one know the instructions they compute
        self.uncacheable = False  # the batch being planned wrote a base on every rank
        self.operands: dict[int, Operands | None] = {}  # the batch being planned: per instruction (id), its halo operands (shoal.cluster.halo)

    # ------------------------------------------------------------------ bases

    def _new_local(self) -> int:
        number = self._next_local
        self._next_local += 1
        return number

    def new_layouts(self, batch: Batch) -> dict[int, AnyLayout]:
        """The layouts of the bases ``batch`` declares (every rank computes the same)."""
        return declared_layouts(batch, self.config, self.ranks, self.layouts)

    def _by_components(self, layout: AnyLayout) -> bool:
        """Whether ``layout`` keeps components together (rows mode only): like a base with halos,
        its instructions are about one piece per rank, so fewer dependency blocks do."""
        return isinstance(layout, CyclicLayout) and self.config.layout != "block-cyclic"

    def _declare(self, batch: Batch) -> None:
        layouts = self.new_layouts(batch)
        first = Op("compute")
        for decl in batch.bases:
            layout = layouts[decl.id]
            self.layouts[decl.id] = layout
            self.decls[decl.id] = decl
            self.declared_layouts[decl.id] = layout
            if layout.halo:
                self.valid[decl.id] = initial_valid(layout, self.ranks, decl.id in batch.data)
            count = layout.local_count(self.rank)
            if count == 0 and layout.size != 0:
                continue
            if layout.size == 0 and self.rank != 0:
                continue
            local = self._new_local()
            self.local[decl.id] = local
            self.declared[decl.id] = local
            blocks = HALO_BLOCKS_PER_BASE if layout.halo or self._by_components(layout) else BLOCKS_PER_BASE
            self.block_bytes[local] = max(MIN_BLOCK_BYTES, count * decl.dtype.itemsize // blocks)
            data = batch.data.get(decl.id)
            if data is None:
                self._undeclared[local] = BaseDecl(local, decl.dtype, count)
                continue
            first.declares.append(BaseDecl(local, decl.dtype, count))
            first.writes.append((local, 0, count * decl.dtype.itemsize))
            first.data[local] = local_part(data, layout, self.rank, self.local_data)
        if first.declares or self._undeclared:
            self.ops.append(first)
            self._first = first

    def _place_declarations(self, ops: list[Op]) -> None:
        """Declare each new base without data in the first computation that touches it, so that
        it reaches the node engine in the node-engine batch that uses it (a temporary declared,
        written, read and released in one node-engine batch is never allocated there); one that
        a message touches first, or nothing, is declared by the batch's first operation."""
        pending = self._undeclared
        for op in ops:
            if not pending:
                break
            for base, _, _ in (*op.writes, *op.reads):
                decl = pending.pop(base, None)
                if decl is None:
                    continue
                holder = op if op.kind == "compute" else self._first
                assert holder is not None
                holder.declares.append(decl)
                holder.writes.append((base, 0, decl.nbytes))
        first = self._first
        for decl in pending.values():
            assert first is not None
            first.declares.append(decl)
            first.writes.append((decl.id, 0, decl.nbytes))
        if first is not None and not first.declares:  # every base went to its first computation
            assert ops[0] is first
            del ops[0]
        self._undeclared = {}
        self._first = None

    def _release(self, base: int) -> None:
        layout = self.layouts.pop(base, None)
        self.decls.pop(base, None)
        self.valid.pop(base, None)
        self.demand.pop(base, None)
        local = self.local.pop(base, None)
        if layout is None or local is None:
            return
        nbytes = layout.local_count(self.rank) * layout.itemsize
        self._retired.append(local)
        if base in self.unused:
            self.unused.discard(base)
            return
        self.ops.append(Op("compute", writes=[(local, 0, max(nbytes, 1))], instructions=[release_of(local)]))

    def _before_writes(self, instruction: Instruction) -> None:
        """A base on every rank that ``instruction`` writes is from now on rank 0's alone, as a
        small base is: the other ranks' copies stay unused until its release, and the batch's
        plan is not kept (a replay would not bring its layout back)."""
        for view in instruction.outputs:
            layout = self.layouts.get(view.base)
            if layout is not None and everywhere(layout):
                self.layouts[view.base] = whole_on(0, self.ranks, layout.size, layout.itemsize)
                self.uncacheable = True

    def local_view(self, view: View, box: tuple | None = None) -> View:
        """``view`` (or its part in ``box``) as a view of this rank's local base."""
        part = view if box is None else sub_view(view, box)
        return self.layouts[view.base].local_view(part, self.rank, self.local[view.base])

    def compute(
        self,
        instructions: list[Instruction],
        reads: list[Access] | None = None,
        writes: list[Access] | None = None,
        declares: list[BaseDecl] | None = None,
        needs: list[Op] | None = None,
    ) -> Op:
        """A computation of this rank."""
        return Op("compute", reads=reads or [], writes=writes or [], instructions=instructions, declares=declares or [], needs=needs or [])

    def send(self, view: View, peer: int, tag: int, late: bool = False) -> Op:
        """A send of local ``view`` to ``peer`` (``late``: see :class:`~shoal.cluster.ops.Op`)."""
        return Op("send", reads=[access(view)], peer=peer, tag=tag, view=view, late=late)

    def _next_tag(self) -> int:
        self._tag = (self._tag + 1) % self.tag_limit
        return self._tag

    # ------------------------------------------------------------------ planning

    def keyed(self, batch: Batch, carried: Collection[int] | None = None) -> tuple[tuple, list[int]] | None:
        """``batch``'s plan-cache key and its bases in the key's order (None: not cached);
        ``carried``: the bases that come with data, if not yet in ``batch.data``."""
        if not self.cache.capacity:
            return None
        return batch_key(batch, self.layouts, self.halo_state(), carried)

    def halo_state(self) -> dict[int, tuple]:
        """Per base with halos: its current bytes per rank and the bytes its own rows read (the
        plan-cache key's halo state)."""
        return {base: (valid, self.demand.get(base)) for base, valid in self.valid.items()}

    def choose_rows(self, batch: Batch) -> None:
        """Whether ``batch`` is planned with redundant halo rows: as configured, or, where the
        link chose own rows, redundant ones if it repeats a sweep (:func:`~shoal.cluster.link.repeats_a_sweep`)."""
        self.redundant_rows = self.config.redundant_rows or (self.config.redundant_for_sweeps and repeats_a_sweep(batch))

    def plan(self, batch: Batch, keyed: tuple[tuple, list[int]] | Literal[False] | None = False, kept: Template | None = None) -> list[Op]:
        """This rank's operations for ``batch``, in program order: replayed from the plan cache
        when the same batch (up to its base numbers) was planned before (``keyed``: its
        :meth:`keyed`, if known), or from ``kept``, its key's template kept elsewhere
        (:mod:`shoal.cluster.split_plans`). ``template`` is then the cached plan they came from
        or were kept as (None for a plan not kept), ``key`` the batch's key."""
        for local in self._retired:  # released by the previous batch, which has run
            self.block_bytes.pop(local, None)
        self._retired = []
        if keyed is False:
            keyed = self.keyed(batch)
        self.template = None
        self.key = None if keyed is None else keyed[0]
        if keyed is None:
            return self._plan(batch)
        key, order = keyed
        if kept is not None:
            self.cache.hits += 1
            self.template = kept
            return replay(self, kept, order, batch)
        template = self.cache.get(key)
        if template is not None:
            self.template = template
            return replay(self, template, order, batch)
        declared = {decl.id for decl in batch.bases}
        known = {base: self.local[base] for base in order if base not in declared and base in self.local}
        first_local, first_tag = self._next_local, self._tag
        ops = self._plan(batch)
        try:
            if self.uncacheable:
                raise Uncacheable("a base on every rank written")
            template = make_template(self, ops, order, first_local, first_tag, known, batch)
        except Uncacheable:
            template = None
        self.cache.put(key, template)
        self.template = template
        return ops

    def _plan(self, batch: Batch) -> list[Op]:
        self.ops = []
        self.uncacheable = False
        self.operands = {}
        self.declared = {}
        self.declared_layouts = {}
        self._declare(batch)
        self.later = batch.instructions
        self.temporaries = released_bases(batch.instructions)
        self.row_plan = RowPlan() if self.redundant_rows or not self.valid else plan_rows(self, batch.instructions, OWNER_COMPUTES)
        interior_first.start(self)
        for position, instruction in enumerate(batch.instructions):
            if position:
                interior_first.after(self, position - 1, batch.instructions[position - 1])
            self.position = position
            if instruction.op == "release":
                self._release(int(instruction.attr("base")))
                continue
            self._before_writes(instruction)
            entry = spec(instruction.op)
            elementwise = entry.kind is Kind.ELEMENTWISE or instruction.op in OWNER_COMPUTES
            if elementwise and plan_with_halos(self, instruction):
                continue
            invalidate(self, instruction)  # written below without keeping halos current
            if elementwise:
                try:
                    if self._owner_computes(instruction):
                        continue
                except TooFragmented:
                    pass
            if instruction.op == "gather" and plan_leading_gather(self, instruction):
                continue
            if entry.kind is Kind.REDUCTION and plan_reduction(self, instruction):
                continue
            if entry.kind is Kind.LINALG and plan_matmul(self, instruction):
                continue
            self._gathered(instruction, entry.kind)
        if batch.instructions:
            interior_first.after(self, len(batch.instructions) - 1, batch.instructions[-1])
        interior_first.finish(self)
        self._place_declarations(self.ops)
        ops, self.ops = self.ops, []
        self.operands = {}  # ids of this batch's instructions: a later batch's may reuse them
        return ops

    def _receive(self, peer: int, tag: int, dtype: np.dtype, shape: tuple[int, ...], late: bool = False) -> Op:
        temp = self._new_local()
        receive = Op("receive", writes=[(temp, 0, 1 << 62)], peer=peer, tag=tag, temp=temp, dtype=dtype, shape=tuple(shape), late=late)
        self.ops.append(receive)
        return receive

    def _receive_into(self, peer: int, tag: int, destination: View, late: bool = False) -> None:
        """Receive a message of ``destination``'s dtype and shape and copy it there."""
        receive = self._receive(peer, tag, destination.dtype, destination.shape, late)
        source = contiguous(receive.temp, destination.dtype, destination.shape)
        self.ops.append(
            Op(
                "compute",
                reads=[access(source)],
                writes=[access(destination)],
                instructions=[Instruction("copy", (destination,), (source,))],
                needs=[receive],
            )
        )
