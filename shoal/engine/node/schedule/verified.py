"""Verifying a batch whose structure passed verification before: only what the structure leaves out.

Full verification (:func:`shoal.bytecode.verify`) costs about 5 µs per instruction, as much as
recording one; a loop sends batches of one structure over and over. The structure key of the
plan cache (:func:`~shoal.engine.node.schedule.plan_cache.batch_shape`) holds every fact the
verifier reads of a batch except four: the base ids themselves (renamed by first use), the
values of constants (their kinds are in the key, and kinds are all the verifier checks), the
contents of carried data arrays, and whether a base the batch declares is already live. A batch
whose key equals that of a batch that passed full verification here is therefore checked on
those four alone (:meth:`VerifiedShapes.admits`): its declared ids are fresh non-negative
``int``\\ s, every other id an ``int``, its data arrays match their declarations. Distinct ids,
liveness and dtype and size of the bases used from earlier batches, shapes, strides, extents and
attributes are in the key. Limits on bytes and work depend on what else is live, so an engine
with limits always verifies in full.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from operator import attrgetter

import numpy as np

from shoal.bytecode import BaseDecl, Batch
from shoal.bytecode.alike import repeat_models
from shoal.bytecode.verify import NO_LIMITS, VerifyLimits, verify
from shoal.engine.node.schedule.compiled_checks import CHECKS
from shoal.engine.node.schedule.plan_cache import BatchShape

VERIFIED_ENTRIES = 64
MISSES = 2  # keys of one opcode sequence that missed in a row before such batches are no longer keyed


def sequence_of(batch: Batch) -> tuple:
    """The number of bases ``batch`` declares, then its opcodes."""
    return (len(batch.bases), *map(_op, batch.instructions))


_op = attrgetter("op")


class VerifiedShapes:
    """The structure keys of the last few batches that passed full verification."""

    def __init__(self, entries: int = VERIFIED_ENTRIES) -> None:
        self.entries = entries
        self._keys: OrderedDict[tuple, None] = OrderedDict()
        self.skipped = 0  # batches admitted by their structure (a counter for tests and stats)
        self._sequences: OrderedDict[tuple, int] = OrderedDict()  # opcode sequence -> keys that missed in a row
        self._sequence: tuple | None = None  # the sequence of the batch ``recurs`` saw last

    def recurs(self, batch: Batch, sequence: tuple | None = None) -> bool:
        """True if a recent batch had ``batch``'s opcodes and number of declarations and the keys
        of such batches did not miss twice in a row: its structure key is then worth computing (a
        batch that runs directly needs no key but this). A row loop whose views move by an offset
        every batch has a new key each time; after two misses its batches are verified in full."""
        if sequence is None:
            sequence = sequence_of(batch)
        misses = self._sequences.get(sequence)
        self._sequence = sequence
        if misses is None:
            self._sequences[sequence] = 0
            while len(self._sequences) > self.entries:
                self._sequences.popitem(last=False)
            return False
        self._sequences.move_to_end(sequence)
        return misses < MISSES

    def check(self, batch: Batch, shape: BatchShape | None, known: Mapping[int, BaseDecl], limits: VerifyLimits) -> None:
        """Verify ``batch`` (structure ``shape``) against the ``known`` bases: in full unless its
        structure passed before; raise :class:`~shoal.bytecode.BytecodeError` if it is malformed."""
        sequence, self._sequence = self._sequence, None
        if shape is not None and limits == NO_LIMITS and shape.key in self._keys and self.admits(batch, shape, known):
            self._keys.move_to_end(shape.key)
            self.skipped += 1
            if sequence in self._sequences:
                self._sequences[sequence] = 0
            return
        repeats = batch.repeats
        if repeats is None or len(repeats) != len(batch.instructions):
            repeats = repeat_models(batch.instructions)
        verify(batch, known, limits=limits, alike=repeats)
        if shape is not None and sequence in self._sequences:
            self._sequences[sequence] += 1
        if shape is not None and limits == NO_LIMITS:
            self._keys[shape.key] = None
            while len(self._keys) > self.entries:
                self._keys.popitem(last=False)

    @staticmethod
    def admits(batch: Batch, shape: BatchShape, known: Mapping[int, BaseDecl]) -> bool:
        """True if what ``shape``'s key leaves out is well-formed (else full verification
        decides, and words the error)."""
        ids = shape.ids
        if CHECKS is not None and type(known) is dict and type(ids) is tuple:
            if not CHECKS.fresh_ids(ids, shape.declared, known):
                return False
        else:
            for position, base in enumerate(ids):
                if type(base) is not int or base < 0:
                    return False
                if position < shape.declared and base in known:
                    return False
        declared = {decl.id: decl for decl in batch.bases}
        for base, array in batch.data.items():
            decl = declared.get(base)
            if (
                decl is None
                or type(array) is not np.ndarray
                or array.ndim != 1
                or not array.flags.c_contiguous
                or array.dtype != decl.dtype
                or array.size != decl.size
            ):
                return False
        return True
