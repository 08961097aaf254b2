"""A long batch's loop iterations planned once per structure, kept under the whole batch's key.

:mod:`shoal.cluster.segments` cuts a batch that reads nothing until its end into loop
iterations, and each iteration replays its plan from the plan cache. A loop that runs such a
batch again and again still found the period, cut the batch, keyed every part and, on the other
ranks, decoded and verified the whole batch's bytecode every time: shallow water 1022² x 100 at 2
ranks, 13 batches of about 2,100 instructions, rank 1 spent 0.24 s of its 2.1 s decoding and
verifying them.

A :class:`SplitTemplate` keeps what the cut found, under the whole batch's plan-cache key: where
each part begins and ends, its own key, its bases as positions in the whole batch's key order,
and its plan. A later batch of the same key is cut and planned from it without looking at its
instructions: the same key means the same instructions up to base numbers, so the same period,
cuts and parts. Once every rank kept one, the key gets a number like any batch's
(:meth:`~shoal.cluster.plan_cache.PlanCache.number`) and rank 0 sends later batches of it as
``REPLAY`` commands (:mod:`shoal.cluster.replayed`), which carry no bytecode.

Every rank takes the kept cut only for a key that has a number, which the ranks agree on, so all
of them touch their plan caches alike and keep the same keys and numbers. The parts' plans are
kept in the split template itself: a part's own cache entry may be dropped meanwhile without
leaving a rank unable to replay. Each part's bases must still have the layouts and halo state its
key was made with; a rank where they do not is out of step with rank 0 and stops.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from shoal.bytecode import BaseDecl, Batch
from shoal.cluster import segments
from shoal.cluster.plan_cache import used_bases

if TYPE_CHECKING:
    from shoal.cluster.layout import AnyLayout
    from shoal.cluster.plan import Op, Planner
    from shoal.cluster.plan_cache import Template

Keyed = tuple[tuple, list[int]]
Planned = tuple[int, list["Op"], "Template | None"]  # first instruction, ops, template
PlanOne = Callable[[Batch, "Keyed | None", "Template | None"], tuple[list["Op"], "Template | None"]]


@dataclass(frozen=True)
class SplitPart:
    """One loop iteration of a kept cut: instructions ``start:end`` of the whole batch."""

    start: int
    end: int
    key: tuple
    positions: tuple[int, ...]  # its key order's bases, as positions in the whole batch's key order
    template: Template


@dataclass(frozen=True)
class SplitTemplate:
    """A batch's cut into loop iterations with each one's plan (``bases`` and ``declared`` as a
    :class:`~shoal.cluster.plan_cache.Template` has them, for :mod:`shoal.cluster.replayed`)."""

    parts: tuple[SplitPart, ...]
    bases: int  # bases the whole batch names
    declared: tuple[tuple[int, AnyLayout, None, None], ...]  # (whole key number, layout, -, -) per declaration


def plan_parts(planner: Planner, batch: Batch, keyed: Keyed | None, plan_one: PlanOne, starts: list[int] | None = None) -> list[Planned] | None:
    """``batch`` cut into loop iterations and each one planned by ``plan_one`` (part, its key
    and order, its template if known), or None if it is not cut. ``keyed``: the whole batch's
    key and order; ``starts``: where rank 0 cut it (:mod:`shoal.cluster.alike`; empty: it
    found no cut), if it looked. Leaves ``planner.template`` the kept cut (None if a part's plan was not kept)
    and ``planner.key`` the whole batch's key, so that the batch's closing gather numbers it."""
    cache = planner.cache
    if keyed is not None and cache.number_of(keyed[0]) is not None:
        kept = cache.templates.get(keyed[0])
        if not isinstance(kept, SplitTemplate):
            return None  # planned whole on every rank when it was kept (a replay's instructions stand in for it)
        cache.get(keyed[0])
        planned = [_replayed_part(planner, batch, keyed[1], part, plan_one) for part in kept.parts]
        planner.template, planner.key = kept, keyed[0]  # type: ignore[assignment]
        return planned
    if starts == []:
        return None
    if starts is None:
        parts = segments.split(batch, planner.new_layouts)
        if parts is None:
            return None
    else:
        parts = segments.cut(batch, starts, planner.new_layouts)
        if parts is None:
            raise ValueError("rank 0 cut a batch where its parts would lay out data otherwise than the batch")
    planned = []
    found: list[SplitPart] | None = [] if keyed is not None else None
    where = {} if keyed is None else {base: position for position, base in enumerate(keyed[1])}  # a base's place in the whole batch's key order
    ends = [start for start, _ in parts[1:]] + [len(batch.instructions)]
    for (start, part), end in zip(parts, ends):
        part_keyed = planner.keyed(part)
        ops, template = plan_one(part, part_keyed, None)
        planned.append((start, ops, template))
        if found is not None and part_keyed is not None and template is not None:
            found.append(SplitPart(start, end, part_keyed[0], tuple(where[base] for base in part_keyed[1]), template))
        else:
            found = None
    planner.template = planner.key = None
    if keyed is not None:
        split = None if found is None else SplitTemplate(tuple(found), len(keyed[1]), _declared(found))
        cache.put(keyed[0], split)  # type: ignore[arg-type]
        planner.template, planner.key = split, keyed[0]  # type: ignore[assignment]
    return planned


def _declared(parts: list[SplitPart]) -> tuple[tuple[int, AnyLayout, None, None], ...]:
    """Each declaration of the whole batch with its layout, from the parts' plans (a cut keeps
    the layout of every base that carries data)."""
    declared = []
    for part in parts:
        for number, layout, _slot, _bytes in part.template.declared:
            declared.append((part.positions[number], layout, None, None))
    return tuple(declared)


def _replayed_part(planner: Planner, batch: Batch, order: list[int], part: SplitPart, plan_one: PlanOne) -> Planned:
    """Part ``part`` of ``batch`` (whose bases in key order are ``order``), planned from its kept plan."""
    part_order = [order[position] for position in part.positions]
    declarations, _instructions, used = part.key
    fresh = {part_order[number] for number, *_ in declarations}
    if used_bases(part_order, fresh, planner.layouts, planner.halo_state()) != used:
        raise ValueError(f"instructions {part.start} to {part.end} of a replayed batch meet bases whose layouts or halos are not those of their plan")
    bases = [BaseDecl(part_order[number], dtype, size) for number, dtype, size, _carried in declarations]
    data = {part_order[number]: batch.data[part_order[number]] for number, _dtype, _size, carried in declarations if carried}
    piece = Batch(bases=bases, instructions=batch.instructions[part.start : part.end], data=data)
    ops, template = plan_one(piece, (part.key, part_order), part.template)
    return part.start, ops, template
