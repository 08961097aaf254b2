"""Temporaries split in rows where the views they are combined with are.

Under the row layout a base is split into ranges of whole rows of its own shape, as evenly as
rows allow. A stencil's temporaries are one row or two shorter than its grid
(``grid[1:-1, 1:-1] + grid[:-2, 1:-1]`` makes a temporary of the interior), so at three ranks
and more their even split falls a row off the grid's: Jacobi 2000² at 3 ranks split the grid
667 / 667 / 666 rows and its temporaries 666 / 666 / 666, the sweep's last copy into the grid
needed a row of a temporary from a neighbour, mid-sweep, and each sweep reached the node engine
as two batches (one of them run instruction by instruction).

:func:`align` gives a base the batch declares without data and splits over the ranks, whose
first use is its whole C-ordered view beside a view of the same shape of a base split in rows,
the rows of that view:
row ``i`` of the temporary lives where row ``i`` of the view does (its halo is as wide as
before). Every rank computes the same layouts from the same batch.
"""

from __future__ import annotations

from collections.abc import Mapping

from shoal.bytecode import Batch, View
from shoal.cluster.halo import owned_rows
from shoal.cluster.layout import AnyLayout, Layout, row_length


def align(batch: Batch, layouts: dict[int, AnyLayout], known: Mapping[int, AnyLayout], ranks: int) -> None:
    """Re-lay out in ``layouts`` (the batch's declared bases) each temporary of ``batch`` that
    :mod:`this module <shoal.cluster.row_alignment>` aligns; ``known``: earlier bases' layouts."""
    sizes = {decl.id: decl.size for decl in batch.bases if decl.id not in batch.data}
    seen: set[int] = set()
    for instruction in batch.instructions:
        views = [view for view in (*instruction.outputs, *instruction.inputs) if isinstance(view, View)]
        for view in views:
            if view.base not in sizes or view.base in seen:
                continue
            seen.add(view.base)
            layout = layouts.get(view.base)
            if not isinstance(layout, Layout):
                continue
            if layout.distributed and row_length(view, sizes[view.base]) <= 1:
                continue
            if not layout.distributed and (not view.shape or view.offset or view.size != sizes[view.base] or not view.is_contiguous()):
                continue  # a small base goes where its whole first view's operand is, if on one rank or in rows
            for other in views:
                found = _aligned(view, other, layout, layouts.get(other.base, known.get(other.base)), ranks)
                if found is not None:
                    layouts[view.base] = found
                    break


def _aligned(view: View, other: View, layout: Layout, beside: AnyLayout | None, ranks: int) -> Layout | None:
    """``view``'s base laid out in the rows of ``other`` (a view of another base, split in rows,
    of ``view``'s shape), or None if ``other`` is not such a view."""
    if other.base == view.base or other.shape != view.shape or not isinstance(beside, Layout) or not beside.distributed:
        return None
    if not view.shape or view.size == 0:  # no rows to align (``a[n:, :j]`` of a last column)
        return None
    owned = owned_rows(other, beside, ranks)
    if owned is None:
        return None
    row = view.size // view.shape[0]
    starts = [0]
    for begin, end in owned:
        starts.append(end * row if end > begin else starts[-1])
    if starts[-1] != view.size:
        return None
    return Layout(layout.itemsize, tuple(starts), layout.halo)
