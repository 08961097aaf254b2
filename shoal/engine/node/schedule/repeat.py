"""A batch that repeats the previous batch's structure: its key taken over, not rebuilt.

A loop body recorded over and over sends batches whose structure key
(:func:`~shoal.engine.node.schedule.plan_cache.batch_shape`) is the same every time; building
that key (a tuple per view, the constants' kinds, one nested tuple hashed per lookup) was most of
a replayed batch's planning. :func:`repeated_shape` instead walks the new batch beside the
previous one and compares, fact by fact, everything the key holds: opcodes, attributes (bit-exact),
each view's dtype (and its character), byte offset, shape and strides, each constant's kind and
which constants are equal, the declarations (dtype, size, carried or donated data), and the live
dtype and size of every base used from earlier batches. Base ids are matched by a one-to-one
renaming built in first-use order, which is exactly the numbering the key uses. Only if every
fact is equal does the new batch get the previous key object (and its plan, verified structure
and everything keyed by it); the first difference falls back to :func:`batch_shape`. Nothing is
taken on trust from the producer: the comparison reads the batch itself, so verification
(``verified.py``) keeps its guarantees.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shoal.bytecode import BaseDecl, Batch, Instruction, View
from shoal.engine.node.keys import exact_key
from shoal.engine.node.schedule import compiled_checks
from shoal.engine.node.schedule.plan_cache import BatchShape, constant_kind


class Previous:
    """What :func:`repeated_shape` compares a batch with: the last keyed batch and its shape."""

    __slots__ = ("carries", "constants", "decls", "direct", "direct_work", "instructions", "outside", "shape")

    def __init__(self, batch: Batch, shape: BatchShape, direct: bool, direct_work: int) -> None:
        self.shape = shape
        self.direct = direct  # whether it ran instruction by instruction under ``direct_work``
        self.direct_work = direct_work
        self.instructions: tuple[Instruction, ...] = tuple(batch.instructions)
        self.decls = tuple((decl.dtype, decl.dtype.char, decl.size, decl.id in batch.data, decl.id in batch.donated) for decl in batch.bases)
        self.carries = any(carried or given for _, _, _, carried, given in self.decls)
        self.outside = shape.key[2]
        self.constants = [(constant_kind(const.value), exact_key(const.value), const.value) for const in shape.constants]


def _same_dtype(new: Any, old: Any) -> bool:
    return new is old or (new == old and new.char == old.char)


if compiled_checks.CHECKS is not None:
    compiled_checks.CHECKS.configure_functions(exact_key, constant_kind, _same_dtype)


def repeated_shape(batch: Batch, previous: Previous, live: Mapping[int, BaseDecl]) -> BatchShape | None:
    """``batch``'s structure if it equals ``previous``'s in every fact the key holds (the
    previous key then serves), else None."""
    instructions = batch.instructions
    old_instructions = previous.instructions
    decls = batch.bases
    if len(instructions) != len(old_instructions) or len(decls) != len(previous.decls):
        return None
    shape = previous.shape
    old_ids = shape.ids
    ids: list[int] = []
    constants: list[Any] = []
    alike = _compare(batch, previous, ids, constants, compiled_checks.CHECKS)
    if alike is None:  # a value the C loops do not know: Python compares, from the start
        ids.clear()
        constants.clear()
        alike = _compare(batch, previous, ids, constants, None)
    if not alike:
        return None
    if len(ids) != len(old_ids):
        return None
    for base, outside in zip(ids[shape.declared :], previous.outside):
        decl = live.get(base)
        if (None if decl is None else (decl.dtype, decl.dtype.char, decl.size)) != outside:
            return None
    return BatchShape(shape.key, tuple(ids), tuple(constants), shape.declared, shape.released_first, shape.written)


def _declare_python(
    decls: list[BaseDecl],
    old_decls: tuple[tuple[Any, ...], ...],
    old_ids: tuple[int, ...],
    new_of: dict[int, int],
    old_of: dict[int, int],
    ids: list[int],
    data: Mapping[int, Any],
    donated: set[int],
    plain: bool,
) -> bool:
    """Compare the batch's declarations with the previous batch's (dtype, size, carried or
    donated data), beginning the renaming; False at the first difference."""
    for decl, (dtype, char, size, carried, given), old in zip(decls, old_decls, old_ids):
        base = decl.id
        if (
            base in old_of
            or not (decl.dtype is dtype or (decl.dtype == dtype and decl.dtype.char == char))
            or decl.size != size
            or not (plain or ((base in data) == carried and (base in donated) == given))
        ):
            return False
        new_of[old] = base
        old_of[base] = old
        ids.append(base)
    return True


def _compare(batch: Batch, previous: Previous, ids: list[int], constants: list[Any], checks: Any) -> bool | None:
    """Compare ``batch``'s declarations and instructions with ``previous``'s, filling in the new
    batch's ids in renaming order and its ``constants``: with the compiled loops ``checks`` (a
    fifth of the time), or in Python if None. None if the compiled loops met a value of a kind
    they do not know."""
    new_of: dict[int, int] = {}  # old id -> new id
    old_of: dict[int, int] = {}  # new id -> old id
    decls, instructions = batch.bases, batch.instructions
    data, donated = batch.data, batch.donated
    plain = not (data or donated or previous.carries)  # no data on either side: nothing to compare
    old_ids = previous.shape.ids
    if checks is None or type(decls) is not list or type(instructions) is not list:
        if not _declare_python(decls, previous.decls, old_ids, new_of, old_of, ids, data, donated, plain):
            return False
        return _walk_python(instructions, previous.instructions, new_of, old_of, ids, previous.constants, constants)
    declared = checks.declare(decls, previous.decls, old_ids, new_of, old_of, ids, data, donated, plain)
    if not declared:
        return declared
    return checks.walk(instructions, previous.instructions, new_of, old_of, ids, previous.constants, constants)


def _walk_python(
    instructions: list[Instruction],
    old_instructions: tuple[Instruction, ...],
    new_of: dict[int, int],
    old_of: dict[int, int],
    ids: list[int],
    old_constants: list[tuple[Any, Any, Any]],
    constants: list[Any],
) -> bool:
    """Compare ``instructions`` with ``old_instructions`` fact by fact, extending the renaming
    (``new_of``, ``old_of``, ``ids``) and collecting the new batch's ``constants``; False at the
    first difference."""
    equal_new: dict[Any, Any] = {}
    equal_old: dict[Any, Any] = {}
    for instruction, old in zip(instructions, old_instructions):
        op = instruction.op
        if op != old.op:
            return False
        if op == "release":
            attrs, old_attrs = instruction.attrs, old.attrs
            if len(attrs) == 1 and len(old_attrs) == 1 and attrs[0][0] == "base" and old_attrs[0][0] == "base":
                value, was = attrs[0][1], old_attrs[0][1]
            else:
                value, was = instruction.attr("base"), old.attr("base")
            if type(value) is not int or type(was) is not int:
                return False
            mapped = new_of.get(was)
            if mapped is None:
                if value in old_of:
                    return False
                new_of[was] = value
                old_of[value] = was
                ids.append(value)
            elif mapped != value:
                return False
            continue
        if op == "gather":
            return False  # its index values are keyed (``row_gather``): the full key decides
        attrs = instruction.attrs
        if attrs is not old.attrs and (attrs or old.attrs) and exact_key(attrs) != exact_key(old.attrs):
            return False
        outputs, inputs = instruction.outputs, instruction.inputs
        old_outputs, old_inputs = old.outputs, old.inputs
        if len(outputs) != len(old_outputs) or len(inputs) != len(old_inputs):
            return False
        for value, was in zip(outputs + inputs, old_outputs + old_inputs):
            if type(value) is View:
                if type(was) is not View or not (
                    value is was
                    or (
                        (value.dtype is was.dtype or _same_dtype(value.dtype, was.dtype))
                        and value.offset == was.offset
                        and value.shape == was.shape
                        and value.strides == was.strides
                    )
                ):
                    return False
                value, was = value.base, was.base
                mapped = new_of.get(was)
                if mapped is None:
                    if value in old_of:
                        return False
                    new_of[was] = value
                    old_of[value] = was
                    ids.append(value)
                elif mapped != value:
                    return False
            elif type(value) is int:  # not an operand: the full key decides
                return False
            else:
                if type(was) is View:
                    return False
                new_value = value.value
                old_kind, old_key, old_value = old_constants[len(constants)]
                if new_value is old_value:  # a loop's literal: the same object every iteration
                    new_key = old_key
                else:
                    if constant_kind(new_value) != old_kind:
                        return False
                    new_key = exact_key(new_value)
                if equal_new.setdefault(new_key, old_key) != old_key or equal_old.setdefault(old_key, new_key) != new_key:
                    return False
                constants.append(value)
    return True
