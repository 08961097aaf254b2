"""The layouts of the bases a batch declares: every rank computes the same from the same batch.

A base under ``min_bytes`` (or smaller than the ranks) stays whole on rank 0, or, if the batch
brings its data, it is at most ``replicate_bytes`` and no instruction of the batch writes it (a
NumPy constant such as lattice Boltzmann's nine velocities), is kept whole on every rank
(:func:`shoal.cluster.layout.on_every_rank`): every piece reads it where it runs, instead of
receiving it from rank 0 (a message each, sent only when rank 0 reached that step). A larger one is,
under the row layout, split by the rows of the first C-ordered view of it in the batch
(:func:`shoal.cluster.layout.block`), keeping its components together when it leads with a
few of them (:func:`shoal.cluster.layout.components_first`), and a temporary takes the rows of
the view it is first combined with (:mod:`shoal.cluster.row_alignment`). Under the block-cyclic
layout it is dealt in blocks (:mod:`shoal.cluster.cyclic`), a base of automatic blocks aligned
with the first view of its shape whose base has blocks of whole rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from shoal.bytecode import BaseDecl, Batch, View
from shoal.cluster.cyclic import CyclicLayout, aligned, cyclic, grid_shape
from shoal.cluster.layout import (
    AnyLayout,
    block,
    by_components,
    components_first,
    on_every_rank,
    row_length,
    whole_on,
)
from shoal.cluster.row_alignment import align

if TYPE_CHECKING:
    from shoal.cluster.plan import PlanConfig


def declared_layouts(batch: Batch, config: PlanConfig, ranks: int, known: Mapping[int, AnyLayout]) -> dict[int, AnyLayout]:
    """The layouts of the bases ``batch`` declares; ``known``: the layouts of earlier bases."""
    rows: dict[int, int] = {}
    grids: dict[int, tuple[int, ...]] = {}
    decl_sizes = {decl.id: decl.size for decl in batch.bases}
    cyclic_mode = config.layout == "block-cyclic"
    without_grid: set[int] = set()  # declared bases whose first view gave no grid yet
    for instruction in batch.instructions:
        for view in (*instruction.outputs, *instruction.inputs):
            if not isinstance(view, View) or view.base not in decl_sizes:
                continue
            base = view.base
            if base not in rows:
                rows[base] = row_length(view, decl_sizes[base])
                without_grid.add(base)
            if base in without_grid:
                grid = grid_shape(view, decl_sizes[base])
                if grid is not None:
                    grids[base] = grid
                    without_grid.discard(base)
    layouts: dict[int, AnyLayout] = {}
    replicating = ranks > 1 and config.replicate_bytes > 0
    written = _written(batch) if replicating else set()
    for decl in batch.bases:
        if replicating and decl.id in batch.data and decl.nbytes <= config.replicate_bytes and decl.nbytes < config.min_bytes and decl.id not in written:
            layouts[decl.id] = on_every_rank(ranks, decl.size, decl.dtype.itemsize)
            continue
        if decl.nbytes >= config.min_bytes and ranks > 1 and decl.size >= ranks:
            grid = grids.get(decl.id)
            if cyclic_mode:
                # automatic blocks for a grid that is unknown (data from Python, flat) or has
                # fewer axes than the block shape names
                block_shape = config.block if grid is not None and len(grid) >= len(config.block) else ()
                found = _cyclic_aligned(batch, decl, grid, layouts, known) if grid is not None and not block_shape else None
                layouts[decl.id] = found or cyclic(ranks, grid or (decl.size,), decl.dtype.itemsize, block_shape)
                continue
            if grid is not None and components_first(grid, ranks):
                layouts[decl.id] = by_components(ranks, grid, decl.dtype.itemsize)
                continue
            layouts[decl.id] = block(ranks, decl.size, decl.dtype.itemsize, rows.get(decl.id, 1), config.halo_rows)
        else:
            layouts[decl.id] = whole_on(0, ranks, decl.size, decl.dtype.itemsize)
    align(batch, layouts, known, ranks)  # temporaries in rows where their operands are (rows mode)
    return layouts


def _written(batch: Batch) -> set[int]:
    """The bases an instruction of ``batch`` writes."""
    return {view.base for instruction in batch.instructions if instruction.op != "release" for view in instruction.outputs}


def _cyclic_aligned(batch: Batch, decl: BaseDecl, grid: tuple[int, ...], layouts: dict[int, AnyLayout], known: Mapping[int, AnyLayout]) -> CyclicLayout | None:
    """A block-cyclic base of automatic blocks aligned with the first view of the same shape
    it meets in ``batch`` whose base has blocks of whole rows (:func:`aligned`)."""
    for instruction in batch.instructions:
        views = [view for view in (*instruction.outputs, *instruction.inputs) if isinstance(view, View)]
        if not any(view.base == decl.id and view.shape == grid for view in views):
            continue
        for view in views:
            other = layouts.get(view.base, known.get(view.base))
            if view.base != decl.id and isinstance(other, CyclicLayout) and view.shape == grid:
                found = aligned(other, view, grid, decl.dtype.itemsize)
                if found is not None:
                    return found
    return None
