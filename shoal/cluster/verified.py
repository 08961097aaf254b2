"""Verifying rank 0's batches on the other ranks, once per structure.

Every batch a rank receives is verified before it is planned or touches memory. A loop sends
batches of one structure again and again, and full verification costs about 5 µs per
instruction on the critical path of every sweep (the other ranks send their halos only after
it). The plan cache's key (:func:`~shoal.cluster.plan_cache.batch_key`) holds every fact of a
batch that verification reads except the base ids themselves: every instruction with its views
(bases numbered by first use, dtype, offset, shape, strides), constants by type (verification
checks a constant's type, not its value), attributes by ``repr``, releases, and every declaration (dtype, size, whether it carries data).
Together with the dtype and size of each base the batch uses from earlier batches, a key that
passed full verification here vouches for any batch with the same key whose ids are well formed:
its declared ids are non-negative ``int``\\ s not live on this rank (distinct, as the key's
numbering shows), and every other base it uses is live. Those are checked for each batch.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping

from shoal.bytecode import BaseDecl, Batch, verify
from shoal.cluster.layout import Layout
from shoal.cluster.plan_cache import batch_key

VERIFIED_KEPT = 64


class VerifiedBatches:
    """The keys of the last batches that passed full verification on this rank."""

    def __init__(self, kept: int = VERIFIED_KEPT) -> None:
        self.kept = kept
        self._keys: OrderedDict[tuple, None] = OrderedDict()
        self.skipped = 0  # batches admitted by their key (for tests and stats)

    def check(
        self, batch: Batch, known: Mapping[int, BaseDecl], layouts: dict[int, Layout], keyed: tuple[tuple, list[int]] | None = None, alike: list[int] | None = None
    ) -> None:
        """Verify ``batch`` against the ``known`` live bases (whose ``layouts`` this rank keeps):
        in full unless a batch of its key passed before; raises
        :class:`~shoal.bytecode.BytecodeError` if it is malformed. ``keyed``: its plan-cache key
        (:meth:`~shoal.cluster.plan.Planner.keyed`), if known: it holds all the key here needs.
        ``alike``: per instruction, the earlier one it was rebuilt from (:mod:`shoal.cluster.alike`)."""
        key = _key(batch, known, batch_key(batch, layouts) if keyed is None else keyed)
        if key is not None and key in self._keys and _ids_well_formed(batch, known):
            self._keys.move_to_end(key)
            self.skipped += 1
            return
        verify(batch, known, alike=alike)
        if key is not None:
            self._keys[key] = None
            while len(self._keys) > self.kept:
                self._keys.popitem(last=False)


def _key(batch: Batch, known: Mapping[int, BaseDecl], keyed: tuple[tuple, list[int]] | None) -> tuple | None:
    if keyed is None:
        return None
    key, order = keyed
    declared = {decl.id for decl in batch.bases}
    used = [known.get(base) if type(base) is int else None for base in order if base not in declared]
    if None in used:
        return None
    return key, tuple((decl.dtype, decl.size) for decl in used if decl is not None)


def _ids_well_formed(batch: Batch, known: Mapping[int, BaseDecl]) -> bool:
    return all(type(decl.id) is int and decl.id >= 0 and decl.id not in known for decl in batch.bases)
