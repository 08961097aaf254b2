"""Base memory for the node engine: raw bytes per base, allocated on first use.

A base declared by a batch gets memory only when the first block operation that touches it is
about to run, and loses it when its release operation runs, so a batch that creates and drops
many arrays holds no more of them at once than the program itself would.

A base that arrives with data *borrows* the batch's array (read-only) and is copied only when
the first operation that writes it is about to run: arrays that a program only reads are never
copied, and the batch itself is never modified.

Released memory is kept for reuse by a later base of the same byte size: touching fresh pages
costs about four times an add over them, and programs that create arrays in a loop ask for the
same sizes again and again. Before a fresh allocation, spares of at least its size are freed, so
held plus spare memory never exceeds what live bases alone reached. Between batches only spares
up to 32 MiB each and 64 MiB in all stay (``trim``), about what the C allocator keeps for NumPy:
a kept buffer is resident at once, where fresh memory becomes resident as it is written, and
keeping large ones across batches raised Jacobi's peak RSS at 4096² by a whole grid.

A base may be an *alias* of a view of another base (``shoal.engine.node.plan.aliases``): it has no
memory, and the view holds its contents. It gets memory of its own, copied from the view, when
something needs it (``ensure``) or before the other base is released.

A base may also be *deferred* (``chunked_pairs``): computed a chunk at a time for the one
instruction that read it, it has no memory, only the means to compute it again from copies of
its (small) operands. It gets memory, so computed, when something needs it or a batch touches it
other than by releasing it first (``settle_deferred``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from shoal.bytecode import BaseDecl, Batch, Const, Instruction, View
from shoal.engine.component import EngineError

KEEP_SPARE_BYTES = 64 << 20
KEEP_SPARE_LARGEST = 32 << 20
DEFER_READ_SHARE = 8  # deferring stops once more than one deferred base in this many was read


class Storage:
    """Live bases by id: their declarations and (once allocated) their bytes."""

    def __init__(self) -> None:
        self.decls: dict[int, BaseDecl] = {}
        self._bytes: dict[int, np.ndarray] = {}
        self._typed: dict[int, dict[str, np.ndarray]] = {}
        self._borrowed: set[int] = set()
        self.bytes_held = 0
        self.peak_bytes = 0
        self.high_water = 0  # most bytes bases ever held at once: held + spare stays below it
        self._spare: dict[int, list[np.ndarray]] = {}
        self._spare_bytes = 0
        self._aliases: dict[int, View] = {}  # base -> the view of another base holding its contents
        self._zeroed: set[int] = set()  # bases without memory whose contents are zero (``zero_fills``)
        self._deferred: dict[int, tuple[View, Callable[[np.ndarray], None]]] = {}  # base -> its view, its filling
        self._deferred_computed = 0  # deferred bases something read, computed a second time
        self._deferred_dropped = 0  # deferred bases released unread

    def _hold(self, base: int, array: np.ndarray) -> None:
        self._bytes[base] = array
        self.bytes_held += array.nbytes
        self.peak_bytes = max(self.peak_bytes, self.bytes_held)
        self.high_water = max(self.high_water, self.bytes_held)

    def declare(self, decl: BaseDecl, data: np.ndarray | None, donated: bool = False) -> None:
        if decl.id in self.decls:
            raise EngineError(f"base {decl.id} declared twice")
        if data is not None:
            if data.size != decl.size:
                raise EngineError(f"data for base {decl.id} has {data.size} elements, declared {decl.size}")
            if donated and data.dtype == decl.dtype and data.flags.c_contiguous and data.flags.writeable:
                self._hold(decl.id, data.reshape(decl.size).view(np.uint8))  # handed over: no copy
            elif data.dtype == decl.dtype and data.flags.c_contiguous:
                borrowed = data.reshape(decl.size).view(np.uint8)
                borrowed.flags.writeable = False
                self._hold(decl.id, borrowed)
                self._borrowed.add(decl.id)
            else:
                self._hold(decl.id, np.array(data, dtype=decl.dtype, copy=True).reshape(decl.size).view(np.uint8))
        self.decls[decl.id] = decl

    def decl(self, base: int) -> BaseDecl:
        try:
            return self.decls[base]
        except KeyError:
            raise EngineError(f"base {base} is not live") from None

    def ensure(self, base: int) -> None:
        """Allocate ``base`` if it has no memory yet (an alias gets a copy of its view)."""
        if base not in self._bytes:
            if base in self._aliases:
                self.materialize(base)
            elif base in self._deferred:
                self.compute(base)
            else:
                zeroed = base in self._zeroed
                self._hold(base, self._allocate(self.decl(base).nbytes, zeroed))
                self._zeroed.discard(base)

    def zero_on_allocation(self, base: int) -> None:
        """Let ``base`` (declared by the batch about to run, without data) hold zeros from its
        allocation on."""
        if base in self._bytes or base in self._aliases or base in self._deferred:
            raise EngineError(f"base {base} has contents already")
        self._zeroed.add(base)

    def alias(self, base: int, region: View) -> None:
        """Let ``region`` (a view of another base, of ``base``'s dtype and size) hold ``base``'s
        contents from now on; ``base`` must have no memory."""
        decl = self.decl(base)
        self.decl(region.base)
        if base in self._bytes or base in self._deferred or region.base == base or region.dtype != decl.dtype or region.size != decl.size:
            raise EngineError(f"base {base} cannot be an alias of a view of base {region.base}")
        self._aliases[base] = region
        self._zeroed.discard(base)  # the view holds all of its contents

    def aliases(self) -> dict[int, View]:
        """The bases that are aliases, with the views holding their contents."""
        return dict(self._aliases)

    def materialize(self, base: int) -> None:
        """Give the alias ``base`` memory of its own, holding its view's contents."""
        region = self._aliases.pop(base)
        decl = self.decl(base)
        self._hold(base, self._allocate(decl.nbytes))
        np.copyto(self.typed(base, decl.dtype).reshape(region.shape), self.array(region))

    def defer(self, whole: View, fill: Callable[[np.ndarray], None]) -> None:
        """Let ``whole`` (a view of all of a base without memory) be computed by ``fill(array)``
        when something needs its contents; ``fill`` must not read the engine's memory."""
        if whole.base in self._bytes or whole.base in self._aliases:
            raise EngineError(f"base {whole.base} has contents already")
        self.decl(whole.base)
        self._deferred[whole.base] = (whole, fill)

    def deferred(self) -> list[int]:
        """The deferred bases."""
        return list(self._deferred)

    def deferring_pays(self) -> bool:
        """True unless more than about one deferred base in :data:`DEFER_READ_SHARE` was read
        (each read computes it a second time; the first few reads are allowed)."""
        return self._deferred_computed * DEFER_READ_SHARE <= self._deferred_dropped + 2 * DEFER_READ_SHARE

    def compute(self, base: int) -> None:
        """Give the deferred ``base`` memory holding its contents."""
        whole, fill = self._deferred.pop(base)
        self._deferred_computed += 1
        self._hold(base, self._allocate(self.decl(base).nbytes))
        fill(self.array(whole))

    def contents(self, view: View) -> np.ndarray:
        """A new ndarray holding what ``view`` shows, read through an alias without giving it memory."""
        region = self._aliases.get(view.base)
        if region is None:
            return self.array(view).copy()
        flat = np.ascontiguousarray(self.array(region)).reshape(-1).view(np.uint8)
        return np.ndarray(view.shape, view.dtype, buffer=flat, offset=view.offset, strides=view.strides).copy()

    def _allocate(self, nbytes: int, zeroed: bool = False) -> np.ndarray:
        """A spare buffer of ``nbytes`` if there is one, else fresh memory; all zero if ``zeroed``
        (fresh memory from ``calloc``, whose untouched pages need no writing; a spare is filled)."""
        spare = self._spare.get(nbytes)
        if spare:
            buffer = spare.pop()
            if not spare:
                del self._spare[nbytes]
            self._spare_bytes -= nbytes
            if zeroed:
                buffer.fill(0)
            return buffer
        self._free_spares(self.bytes_held + self._spare_bytes + nbytes - self.high_water)
        return np.zeros(nbytes, np.uint8) if zeroed else np.empty(nbytes, np.uint8)

    def make_writable(self, base: int) -> None:
        """Give a borrowed base its own copy before anything writes it."""
        if base in self._borrowed:
            borrowed = self._bytes[base]
            own = self._allocate(borrowed.nbytes)
            np.copyto(own, borrowed)
            self._bytes[base] = own
            self._typed.pop(base, None)
            self._borrowed.discard(base)

    def has_memory(self, base: int) -> bool:
        return base in self._bytes

    def owns(self, base: int) -> bool:
        """True if ``base`` has memory of the engine's own (not borrowed from a batch)."""
        return base in self._bytes and base not in self._borrowed

    def hand_over(self, source: int, target: int) -> None:
        """Give ``source``'s memory to ``target``, a base without memory; ``source`` keeps none (its
        release then frees nothing)."""
        if target in self._bytes or target in self._deferred or not self.owns(source):
            raise EngineError(f"cannot hand base {source}'s memory to base {target}")
        self._zeroed.discard(target)  # its first instruction writes all of it
        self._bytes[target] = self._bytes.pop(source)
        self._typed.pop(source, None)
        self._typed.pop(target, None)

    def raw(self, base: int) -> np.ndarray:
        if base in self._deferred:
            self.compute(base)
        try:
            return self._bytes[base]
        except KeyError:
            raise EngineError(f"base {base} is not live or has no memory") from None

    def typed(self, base: int, dtype: np.dtype) -> np.ndarray:
        """The base's bytes as a 1-D array of ``dtype`` (trailing bytes that do not fit dropped)."""
        per_base = self._typed.get(base)
        if per_base is None:
            per_base = self._typed[base] = {}
        array = per_base.get(dtype.str)
        if array is None:
            raw = self.raw(base)
            array = per_base[dtype.str] = raw[: raw.size - raw.size % dtype.itemsize].view(dtype)
        return array

    def array(self, view: View) -> np.ndarray:
        """The ndarray that ``view`` describes (allocating its base if needed)."""
        self.ensure(view.base)
        return np.ndarray(view.shape, view.dtype, buffer=self._bytes[view.base], offset=view.offset, strides=view.strides)

    def constant(self, const: Const) -> object:
        """The value of ``const`` (a plan bound to a later batch reads that batch's, see
        ``plan_cache.BoundStorage``)."""
        return const.value

    def release(self, base: int) -> None:
        self._aliases.pop(base, None)
        if self._deferred.pop(base, None) is not None:
            self._deferred_dropped += 1
        for alias in [alias for alias, region in self._aliases.items() if region.base == base]:
            self.materialize(alias)
        self.decls.pop(base, None)
        self._zeroed.discard(base)
        borrowed = base in self._borrowed
        self._borrowed.discard(base)
        held = self._bytes.pop(base, None)
        self._typed.pop(base, None)
        if held is None:
            return
        self.bytes_held -= held.nbytes
        if not borrowed and held.nbytes > 0 and held.base is None:
            self._spare.setdefault(held.nbytes, []).append(held)
            self._spare_bytes += held.nbytes

    def _free_spares(self, nbytes: int) -> None:
        """Free spare buffers holding at least ``nbytes`` (all of them if they hold less; none if
        ``nbytes`` is not positive)."""
        freed = 0
        while freed < nbytes and self._spare:
            size, buffers = next(iter(self._spare.items()))
            buffers.pop()
            freed += size
            self._spare_bytes -= size
            if not buffers:
                del self._spare[size]

    def trim(self, keep_bytes: int = KEEP_SPARE_BYTES, largest: int = KEEP_SPARE_LARGEST) -> None:
        """Between batches keep only what the C allocator would keep for NumPy: spares up to
        ``largest`` bytes each and ``keep_bytes`` in all (memory outside the engine, such as
        fetched results, may need the rest)."""
        for size in [size for size in self._spare if size > largest]:
            self._spare_bytes -= size * len(self._spare.pop(size))
        while self._spare_bytes > keep_bytes:
            self._free_spares(self._spare_bytes - keep_bytes)

    @property
    def spare_bytes(self) -> int:
        """Released memory kept for reuse."""
        return self._spare_bytes

    def allocated(self) -> int:
        return len(self._bytes)

    def clear(self) -> None:
        self._aliases.clear()
        self._deferred.clear()
        self._deferred_computed = self._deferred_dropped = 0
        self._zeroed.clear()
        self.decls.clear()
        self._bytes.clear()
        self._typed.clear()
        self._borrowed.clear()
        self._spare.clear()
        self._spare_bytes = 0
        self.bytes_held = 0
        self.high_water = 0


def settle_aliases(storage: Storage, batch: Batch) -> None:
    """Give every alias that ``batch`` touches, or whose region's base it writes or releases,
    before releasing the alias, memory of its own holding its contents."""
    for base, region in storage.aliases().items():
        if not _released_first(batch.instructions, base, region.base):
            storage.materialize(base)


def settle_deferred(storage: Storage, batch: Batch) -> None:
    """Compute every deferred base that ``batch`` touches before releasing it."""
    for base in storage.deferred():
        if not _released_first(batch.instructions, base, base):
            storage.compute(base)


def _released_first(instructions: list[Instruction], base: int, region_base: int) -> bool:
    """True if ``instructions`` release ``base`` before they touch it or change ``region_base``
    (or do neither)."""
    for instruction in instructions:
        if instruction.op == "release":
            released = instruction.attr("base")
            if released == base:
                return True
            if released == region_base:
                return False
            continue
        if any(out.base in (base, region_base) for out in instruction.outputs):
            return False
        if any(isinstance(operand, View) and operand.base == base for operand in instruction.inputs):
            return False
    return True
