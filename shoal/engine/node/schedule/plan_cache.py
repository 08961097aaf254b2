"""Reusing the block operations of a batch whose structure the engine has planned before.

A loop records structurally identical batches: the same opcodes over views of the same geometry,
only the base ids (fresh arrays every iteration) and the data differ. Planning, lowering and
building block operations cost 30-40 µs per instruction, so the engine keeps what it built for a
batch *structure* and runs it again with the new base ids.

The key (:func:`batch_shape`) describes everything planning reads and nothing it does not:

* every instruction's opcode and attributes (bit-exact: ``-0.0`` is not ``0.0``) and each view's
  dtype, byte offset, shape and strides, with base ids renamed by first appearance;
* every constant's *kind* (:func:`constant_kind`: NumPy dtype, or weak Python type and, for an
  integer, which integer dtypes hold it), and which constants are equal to each other (numbered
  by first appearance of a bit-exact value, as bases are: identical sweeps fuse only when their
  constants are equal), but not the values: a loop whose scalar changes every iteration
  (``(days - day) / 365.0``) replays;
* every declared base's dtype and size, and whether the batch carries (or donates) its data;
* for every base the batch uses but does not declare, its live dtype and size (or that it is not
  live);
* the values of the small index arrays that gathers along the first axis read (planning fuses
  such a gather row by row, see ``shoal.engine.node.plan.row_gather``).

No other data. Block operations reach memory through a :class:`BoundStorage`, which translates
the base ids the plan was built with into the ids of the batch being run, and read constants
through it too (:meth:`BoundStorage.constant`: the planned ``Const`` object -> the value at the
same position of the batch being run), so a cached plan runs unchanged: the engine resets each
operation's reference count and hands it to the pool again.

Binding a plan to a batch (:meth:`CachedPlan.rearm`) checks what a replay relies on, so that a
key that misses something fails there with a message instead of deep in a kernel
(:func:`check_binding`): base identity (distinct planned bases are distinct bases of the
batch), liveness (every base is live with the dtype and size it was planned with) and aliasing
(no base the plan reads or writes, nor the region base of one, is an alias that the plan does
not release before touching it: ``storage.settle_aliases`` gave the others memory of their own).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from shoal.bytecode import BaseDecl, Batch, Const, View
from shoal.engine.blocks.dependencies import BlockOp
from shoal.engine.component import EngineError
from shoal.engine.node.keys import exact_key
from shoal.engine.node.plan.row_gather import index_values
from shoal.engine.node.run.storage import Storage
from shoal.engine.node.schedule.compiled_checks import CHECKS

PLAN_CACHE_ENTRIES = 64


class StructureKey(tuple):
    """A structure key whose hash is computed once: the plan cache and the verified structures
    look a batch's key up several times, and hashing it walks every instruction's step."""

    def __init__(self, parts: tuple) -> None:
        self.hash = tuple.__hash__(self)  # TypeError for a part that is not a value

    def __hash__(self) -> int:
        return self.hash


@dataclass(frozen=True)
class BatchShape:
    """A batch's structure (``key``) and its base ids in the order the key numbers them."""

    key: tuple
    ids: tuple[int, ...]
    constants: tuple[Const, ...] = ()  # every constant operand, in program order
    declared: int = 0  # ids[:declared] are the bases the batch declares
    released_first: frozenset[int] = frozenset()  # positions in ids first touched by a release
    written: frozenset[int] = frozenset()  # positions in ids the batch writes or releases


def batch_shape(batch: Batch, live: dict[int, BaseDecl]) -> BatchShape | None:
    """The structure of ``batch`` given the ``live`` bases; None if it cannot be keyed."""
    number: dict[int, int] = {}
    rename = number.setdefault  # a base's number: the count of bases seen before its first use
    equal: dict[Any, int] = {}
    constants: list[Const] = []
    touched: set[int] = set()
    released_first: set[int] = set()
    written: set[int] = set()

    declared = tuple(
        (rename(decl.id, len(number)), decl.dtype, decl.dtype.char, decl.size, decl.id in batch.data, decl.id in batch.donated)
        for decl in batch.bases
    )
    steps = []
    append = steps.append
    for instruction in batch.instructions:
        op = instruction.op
        if op == "release":
            base = instruction.attr("base")
            if not isinstance(base, int):
                return None
            index = rename(base, len(number))
            if index not in touched:
                released_first.add(index)
            touched.add(index)
            written.add(index)
            append(("release", index))
            continue
        outputs = []
        for view in instruction.outputs:
            dtype = view.dtype
            index = rename(view.base, len(number))
            written.add(index)
            outputs.append((index, dtype, dtype.char, view.offset, view.shape, view.strides))
        inputs = []
        for value in instruction.inputs:
            if type(value) is View:
                dtype = value.dtype
                index = rename(value.base, len(number))
                touched.add(index)
                inputs.append((index, dtype, dtype.char, value.offset, value.shape, value.strides))
            else:
                constants.append(value)
                inputs.append(("const", constant_kind(value.value), equal.setdefault(exact_key(value.value), len(equal))))
        touched.update(output[0] for output in outputs)
        attrs = instruction.attrs
        rows = index_values(batch, instruction) if op == "gather" else None
        append((op, tuple(outputs), tuple(inputs), exact_key(attrs) if attrs else _NO_ATTRIBUTES, None if rows is None else (rows.dtype.str, rows.tobytes())))
    ids = tuple(number)
    outside = []
    for base in ids[len(declared) :]:
        decl = live.get(base)
        outside.append(None if decl is None else (decl.dtype, decl.dtype.char, decl.size))
    try:
        key = StructureKey((declared, tuple(steps), tuple(outside)))
    except TypeError:  # an attribute that is not a value (never produced by the frontend)
        return None
    return BatchShape(key, ids, tuple(constants), len(declared), frozenset(released_first), frozenset(written))


_NO_ATTRIBUTES = exact_key(())


_INTEGER_DTYPES = tuple(np.iinfo(np.dtype(c)) for c in "bBhHiIqQ")


def constant_kind(value: Any) -> Any:
    """What planning reads of a constant: its dtype, or its weak Python type; for a Python
    integer also which integer dtypes hold it (the dtype ``lower`` gives it, and NumPy's error for
    a weak integer out of an array's range). Anything else, and an integer no 64-bit dtype holds,
    is keyed by its exact value."""
    if isinstance(value, np.generic):
        return ("scalar", value.dtype.str)
    kind = type(value)
    if kind is bool or kind is float or kind is complex:
        return (kind,)
    if kind is int and -(2**63) <= value < 2**64:
        return (int, tuple(int(info.min) <= value <= int(info.max) for info in _INTEGER_DTYPES))
    return ("value", exact_key(value))


class _BoundDecls:
    """``Storage.decls`` seen through a binding; remembers the bases that planning dropped."""

    def __init__(self, bound: BoundStorage) -> None:
        self._bound = bound

    def __contains__(self, base: object) -> bool:
        return isinstance(base, int) and self._bound.ids[base] in self._bound.storage.decls

    def get(self, base: int, default: BaseDecl | None = None) -> BaseDecl | None:
        return self._bound.storage.decls.get(self._bound.ids[base], default)

    def __getitem__(self, base: int) -> BaseDecl:
        return self._bound.storage.decls[self._bound.ids[base]]

    def pop(self, base: int, default: BaseDecl | None = None) -> BaseDecl | None:
        self._bound.dropped.append(base)
        return self._bound.storage.decls.pop(self._bound.ids[base], default)


class BoundStorage:
    """The engine's storage addressed with the base ids a plan was built with.

    ``ids`` maps each planned id to the id of the batch being run; :meth:`bind` switches to
    another batch of the same structure. ``dropped`` lists the planned ids whose declarations
    building the plan removed (temporaries), so a replay removes the same ones.
    """

    def __init__(self, storage: Storage, ids: dict[int, int], constants: tuple[Const, ...] = ()) -> None:
        self.storage = storage
        self.ids = ids
        self.decls = _BoundDecls(self)
        self.dropped: list[int] = []
        self.planned = constants  # the plan's Const objects (kept alive: ``values`` is keyed by id)
        self.values = {id(const): const.value for const in constants}

    def bind(self, ids: dict[int, int], constants: tuple[Const, ...] = ()) -> None:
        """Run as the batch with base ``ids`` and ``constants`` (in the order of ``planned``)."""
        self.ids = ids
        self.values = {id(planned): const.value for planned, const in zip(self.planned, constants, strict=True)}

    def constant(self, const: Const) -> Any:
        """The value ``const``, a constant of the planned batch, has in the batch being run."""
        return self.values.get(id(const), const.value)

    def decl(self, base: int) -> BaseDecl:
        return self.storage.decl(self.ids[base])

    def ensure(self, base: int) -> None:
        self.storage.ensure(self.ids[base])

    def make_writable(self, base: int) -> None:
        self.storage.make_writable(self.ids[base])

    def has_memory(self, base: int) -> bool:
        return self.storage.has_memory(self.ids[base])

    def raw(self, base: int) -> np.ndarray:
        return self.storage.raw(self.ids[base])

    def typed(self, base: int, dtype: np.dtype) -> np.ndarray:
        return self.storage.typed(self.ids[base], dtype)

    def array(self, view: View) -> np.ndarray:
        return self.storage.array(View(self.ids[view.base], view.dtype, view.offset, view.shape, view.strides))

    def release(self, base: int) -> None:
        self.storage.release(self.ids[base])


@dataclass
class CachedPlan:
    """Block operations built once, with what the engine reports about them."""

    planned_ids: tuple[int, ...]
    storage: BoundStorage | Storage  # Storage itself for a batch that cannot be keyed
    ops: list[BlockOp]
    stats: dict[str, Any]  # the BatchStats fields that planning determines
    runners: list[Any] = field(default_factory=list)
    awaiting: tuple[str, ...] = ()  # kernels it would use if compiled (sweep passes); replanned then
    aliases: dict[int, View] = field(default_factory=dict)  # planned ids (shoal.engine.node.plan.aliases)
    calls_libraries: bool = True  # an instruction may start a library's thread pool (node engine's calls_library_pools)

    def leave_aliases(self) -> None:
        """Register the plan's aliases, in the ids of the batch just run, with the storage."""
        storage = self.storage
        if not isinstance(storage, BoundStorage):
            for base, region in self.aliases.items():
                storage.alias(base, region)
            return
        ids = storage.ids
        for base, region in self.aliases.items():
            storage.storage.alias(ids[base], View(ids[region.base], region.dtype, region.offset, region.shape, region.strides))

    def rearm(self, shape: BatchShape) -> None:
        """Point the plan at ``shape``'s bases and make every operation runnable again."""
        assert isinstance(self.storage, BoundStorage)
        check_binding(self.planned_ids, shape, self.storage.storage)
        self.storage.bind(dict(zip(self.planned_ids, shape.ids)), shape.constants)
        for base in self.storage.dropped:
            self.storage.storage.decls.pop(self.storage.ids[base], None)
        for op in self.ops:
            op.refcount = op.waits
            op.done = False
            op.result = None

    def finished(self) -> None:
        """Drop results the operations hold (partial reductions) until the next run."""
        for op in self.ops:
            op.result = None


def check_binding(planned_ids: tuple[int, ...], shape: BatchShape, storage: Storage) -> None:
    """Raise ``EngineError`` if running the plan built for ``planned_ids`` on ``shape``'s bases
    would break what the plan relies on (see the module docstring)."""

    def fail(problem: str) -> None:
        raise EngineError(f"plan cache: a plan cannot run on this batch: {problem}")

    ids = shape.ids
    if len(ids) != len(planned_ids) or len(set(ids)) != len(ids):
        fail(f"planned bases {planned_ids} do not map one to one onto bases {ids}")
    live = storage.decls
    facts = planned_facts(shape)
    start = 0
    if CHECKS is not None and type(ids) is tuple and type(live) is dict:
        start = CHECKS.first_unfit(ids, facts, live)  # where the loop below must look (-1: nowhere)
        if start < 0:
            start = len(ids)
    for position, (base, planned) in enumerate(zip(ids[start:], facts[start:]), start):
        if planned is None:
            continue
        decl = live.get(base)
        if decl is None:
            fail(f"base {base} (planned as base {planned_ids[position]}) is not live")
        dtype, char, size = planned
        if not ((decl.dtype is dtype or decl.dtype == dtype) and decl.dtype.char == char and decl.size == size):
            fail(f"base {base} is {decl.dtype}[{decl.size}], planned as {dtype}[{size}]")
    aliases = storage.aliases()
    if not aliases:
        return
    position_of = {base: position for position, base in enumerate(ids)}
    for base, region in aliases.items():
        used = base in position_of or position_of.get(region.base) in shape.written
        if used and position_of.get(base) not in shape.released_first:
            fail(f"base {base} is an alias of a view of base {region.base} that the plan touches")


def planned_facts(shape: BatchShape) -> list[tuple | None]:
    """(dtype, dtype character, size) the plan expects of each of ``shape``'s bases (None: a
    base only released), computed once per key object (a repeated batch takes over its key)."""
    key = shape.key
    known = _facts.get(id(key))
    if known is not None and known[0] is key:
        return known[1]
    declared, outside = key[0], key[2]
    facts = [tuple(declared[position][1:4]) for position in range(shape.declared)]
    facts.extend(None if planned is None else tuple(planned) for planned in outside)
    if len(_facts) >= PLAN_CACHE_ENTRIES:
        _facts.clear()
    _facts[id(key)] = (key, facts)
    return facts


_facts: dict[int, tuple[tuple, list[tuple | None]]] = {}  # id(key) -> (key, its planned_facts)


class PlanCache:
    """The plans of the last few batch structures, most recently used last."""

    def __init__(self, entries: int = PLAN_CACHE_ENTRIES) -> None:
        self.entries = entries
        self._plans: OrderedDict[tuple, CachedPlan] = OrderedDict()

    def __len__(self) -> int:
        return len(self._plans)

    def take(self, shape: BatchShape) -> CachedPlan | None:
        """The plan for ``shape``, re-armed for its bases, or None."""
        plan = self._plans.get(shape.key)
        if plan is None:
            return None
        self._plans.move_to_end(shape.key)
        plan.rearm(shape)
        return plan

    def put(self, shape: BatchShape, plan: CachedPlan) -> None:
        self._plans[shape.key] = plan
        self._plans.move_to_end(shape.key)
        while len(self._plans) > self.entries:
            self._plans.popitem(last=False)

    def forget_if(self, shape: BatchShape, stale: Callable[[CachedPlan], bool]) -> None:
        """Drop the plan for ``shape`` if ``stale`` says it should be built again."""
        plan = self._plans.get(shape.key)
        if plan is not None and stale(plan):
            del self._plans[shape.key]

    def forget(self, shape: BatchShape) -> None:
        self._plans.pop(shape.key, None)

    def clear(self) -> None:
        self._plans.clear()
