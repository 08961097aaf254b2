"""The verifier: rejects a malformed batch with a :class:`BytecodeError` that says where and why.

Structural rules (always checked):

- every base is declared once (in this batch, or known from earlier batches, not both), with a
  supported dtype and a non-negative size; data arrays belong to bases declared in this batch and
  match their declaration (1-D, C-contiguous, same dtype and size);
- every instruction names an opcode of the table, with as many outputs as ``nout`` and as many
  inputs as ``arity`` (at least one when the arity is variable), only attributes the table
  accepts, every required attribute, no attribute twice, and values the wire format can carry;
- outputs are views and inputs are views or scalar constants;
- every view refers to a live base (declared, not released earlier in the batch), has a
  supported dtype, equal-length shape and strides (at most 64), no negative extent, offset,
  extents and strides that fit in 64 bits, an offset and strides aligned like NumPy's
  ``ALIGNED`` flag, and every byte it touches inside the base (computed on Python integers, with
  negative strides; an empty view may sit anywhere from the base's start to its end);
- a view's elements times its item size fit in 64 bits, as NumPy requires of any array;
- an output view holds at most as many elements as fit in its base's bytes, so no instruction
  writes more elements than the memory it writes to (a stride-0 output of 2**34 elements over
  a 16-byte base is rejected).

With ``semantics=True`` (the default) every instruction's shapes and attributes must also agree
(:mod:`shoal.bytecode.shapes`): its work and allocations are then bounded by its declared views,
and a lying count (an ``arange`` of 2**26 elements into 4) is rejected. :class:`VerifyLimits`
bounds the bytes a batch declares and the work it asks for (a boundary sets them per client).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from shoal.bytecode.codec import DEFAULT_LIMITS, INT64_MAX, INT64_MIN
from shoal.bytecode.dtypes import SUPPORTED_DTYPES, is_supported
from shoal.bytecode.errors import BytecodeError
from shoal.bytecode.ir import BaseDecl, Batch, Const, Instruction, View
from shoal.bytecode.opcodes import BY_NAME, OpSpec
from shoal.bytecode.shapes import check_shapes, work

MAX_NDIM = DEFAULT_LIMITS.max_ndim


@dataclass(frozen=True)
class VerifyLimits:
    """Bounds a boundary puts on what one batch may ask for; None means no bound.

    ``max_batch_bytes``: bytes of the bases the batch declares. ``max_live_bytes``: bytes of the
    known bases plus those the batch declares. ``max_work``: element steps of all its
    instructions together (:func:`shoal.bytecode.shapes.work`; needs ``semantics``).
    """

    max_batch_bytes: int | None = None
    max_live_bytes: int | None = None
    max_work: int | None = None

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise ValueError(f"VerifyLimits.{name} must be None or a non-negative int, got {value!r}")


NO_LIMITS = VerifyLimits()


def verify(
    batch: Batch,
    known_bases: Mapping[int, BaseDecl] | None = None,
    *,
    semantics: bool = True,
    limits: VerifyLimits = NO_LIMITS,
    alike: Sequence[int] | None = None,
) -> None:
    """Raise :class:`BytecodeError` if ``batch`` is malformed, or asks for more than ``limits``.

    ``known_bases`` are the bases that earlier batches declared and did not release; a batch
    may use them without declaring them. ``semantics=False`` leaves out the shape and attribute
    rules of each opcode (and with them the work bound): structure and memory bounds only.
    ``alike``: per instruction, the position of an earlier one it may repeat over other bases
    (-1: none); such an instruction with the same operation, attributes, views but for their
    bases, and types of constants, over live bases of the same sizes as that one's, passes the
    checks that one passed and is not checked again (anything else is checked in full).
    """
    if not isinstance(batch, Batch):
        raise BytecodeError(f"expected a Batch, got {type(batch).__name__}")
    if limits.max_work is not None and not semantics:
        raise ValueError("VerifyLimits.max_work needs semantics=True: work is counted from agreeing shapes")
    if alike is not None and len(alike) != len(batch.instructions):
        raise ValueError(f"alike names {len(alike)} instructions of a batch of {len(batch.instructions)}")
    _Verifier(known_bases or {}, semantics, limits).run(batch, alike if limits.max_work is None else None)


class _Verifier:
    def __init__(self, known_bases: Mapping[int, BaseDecl], semantics: bool, limits: VerifyLimits) -> None:
        self.live: dict[int, BaseDecl] = {}
        self.released_by: dict[int, int] = {}
        self.semantics = semantics
        self.limits = limits
        self.work = 0
        for base, decl in known_bases.items():
            _check_decl(decl, f"known base {base!r}")
            if decl.id != base:
                raise BytecodeError(f"known base {base!r} maps to the declaration of base {decl.id}")
            self.live[base] = decl

    def run(self, batch: Batch, alike: Sequence[int] | None = None) -> None:
        declared_here: dict[int, BaseDecl] = {}
        for index, decl in enumerate(batch.bases):
            _check_decl(decl, f"base declaration {index}")
            if decl.id in declared_here:
                raise BytecodeError(f"base declaration {index}: base {decl.id} declared twice")
            if decl.id in self.live:
                raise BytecodeError(
                    f"base declaration {index}: base {decl.id} is already known from an earlier batch"
                )
            declared_here[decl.id] = decl
        for base, array in batch.data.items():
            _check_data(base, array, declared_here.get(base))
        self._check_bytes(declared_here)
        self.live.update(declared_here)
        instructions = batch.instructions
        if alike is None:
            for index, instruction in enumerate(instructions):
                self._instruction(index, instruction)
            return
        sizes = {base: decl.nbytes for base, decl in self.live.items()}  # every base's, released ones too
        for index, instruction in enumerate(instructions):
            model = alike[index]
            if not (0 <= model < index and self._repeats(instruction, instructions[model], sizes, index)):
                self._instruction(index, instruction)

    def _repeated_release(self, instruction: Instruction, index: int) -> bool:
        """Release a live base named as a release's only attribute and nothing else (else False:
        the full check words the error)."""
        attrs = instruction.attrs
        if instruction.outputs or instruction.inputs or type(attrs) is not tuple or len(attrs) != 1:
            return False
        entry = attrs[0]
        if type(entry) is not tuple or len(entry) != 2:
            return False
        name, base = entry
        if name != "base" or type(base) is not int or base not in self.live:
            return False
        del self.live[base]
        self.released_by[base] = index
        return True

    def _repeats(self, instruction: Instruction, model: Instruction, sizes: Mapping[int, int], index: int) -> bool:
        """True if ``instruction`` passes every check because ``model``, verified before it, did:
        what the checks read of the two differs only in their bases (each live here and of the
        size of ``model``'s) and the values of their constants (of the same types)."""
        if type(instruction) is not Instruction or instruction.op != model.op:
            return False
        if instruction.op == "release":
            return self._repeated_release(instruction, index)
        if instruction.attrs != model.attrs:
            return False
        if len(instruction.outputs) != len(model.outputs) or len(instruction.inputs) != len(model.inputs):
            return False
        live = self.live
        for value, like in (*zip(instruction.outputs, model.outputs), *zip(instruction.inputs, model.inputs)):
            if type(value) is View:
                if type(like) is not View or type(value.base) is not int:
                    return False
                decl = live.get(value.base)
                if (
                    decl is None
                    or decl.nbytes != sizes.get(like.base)
                    or value.dtype != like.dtype
                    or value.offset != like.offset
                    or value.shape != like.shape
                    or value.strides != like.strides
                ):
                    return False
            elif not (type(value) is Const and type(like) is Const and type(value.value) is type(like.value)):  # a constant's check reads its type
                return False
        return True

    def _check_bytes(self, declared_here: Mapping[int, BaseDecl]) -> None:
        declared = sum(decl.nbytes for decl in declared_here.values())
        limit = self.limits.max_batch_bytes
        if limit is not None and declared > limit:
            raise BytecodeError(f"the batch declares bases of {declared} bytes, above max_batch_bytes={limit}")
        limit = self.limits.max_live_bytes
        if limit is not None:
            live = declared + sum(decl.nbytes for decl in self.live.values())
            if live > limit:
                raise BytecodeError(
                    f"the batch would hold bases of {live} bytes (its own and known ones), "
                    f"above max_live_bytes={limit}"
                )

    def _instruction(self, index: int, instruction: Instruction) -> None:
        if not isinstance(instruction, Instruction):
            raise BytecodeError(f"instruction {index}: expected an Instruction, got {type(instruction).__name__}")
        entry = BY_NAME.get(instruction.op)
        if entry is None:
            raise BytecodeError(f"instruction {index}: unknown opcode {instruction.op!r}")
        where = f"instruction {index} ({instruction.op})"
        _check_counts(entry, instruction, where)
        attrs = _check_attrs(entry, instruction, where)
        for position, view in enumerate(instruction.outputs):
            if not isinstance(view, View):
                raise BytecodeError(f"{where}: output {position} must be a View, got {type(view).__name__}")
            self._view(view, f"{where}: output {position}", output=True)
        for position, operand in enumerate(instruction.inputs):
            if isinstance(operand, View):
                self._view(operand, f"{where}: input {position}")
            elif isinstance(operand, Const):
                _check_const(operand, f"{where}: input {position}")
            else:
                raise BytecodeError(
                    f"{where}: input {position} must be a View or a Const, got {type(operand).__name__}"
                )
        if entry.name == "release":
            self._release(index, attrs["base"], where)
        if self.semantics:
            problem = check_shapes(entry, instruction.outputs, instruction.inputs, attrs)
            if problem:
                raise BytecodeError(f"{where}: {problem}")
            limit = self.limits.max_work
            if limit is not None:
                self.work += work(entry, instruction.outputs, instruction.inputs, attrs)
                if self.work > limit:
                    raise BytecodeError(
                        f"{where}: the batch asks for {self.work} element steps up to here, "
                        f"above max_work={limit}"
                    )

    def _release(self, index: int, base: Any, where: str) -> None:
        if not _is_int(base):
            raise BytecodeError(f"{where}: attribute 'base' must be an int, got {base!r}")
        self._live_decl(base, where)
        del self.live[base]
        self.released_by[base] = index

    def _live_decl(self, base: Any, where: str) -> BaseDecl:
        if not _is_int(base):
            raise BytecodeError(f"{where} names base {base!r}, which is not an int")
        decl = self.live.get(base)
        if decl is not None:
            return decl
        if base in self.released_by:
            raise BytecodeError(
                f"{where} uses base {base}, released by instruction {self.released_by[base]}"
            )
        raise BytecodeError(f"{where} uses base {base}, which is neither declared nor known")

    def _view(self, view: View, where: str, output: bool = False) -> None:
        base = view.base
        decl = self.live.get(base) if type(base) is int else None
        if decl is None:
            decl = self._live_decl(base, where)
        check_view(view, decl, where, output)


def check_view(view: View, decl: BaseDecl, where: str, output: bool = False) -> None:
    """Raise :class:`BytecodeError` unless every byte ``view`` shows lies inside base ``decl``
    (and, for an ``output``, each element has bytes of its own there)."""
    extent = _fast_extent(view)
    low, high, size = extent if extent is not None else _checked_extent(view, where)
    nbytes = decl.nbytes
    if low < 0 or high > nbytes:
        raise BytecodeError(
            f"{where}: bytes [{low}, {high}) lie outside base {decl.id} of {nbytes} bytes"
        )
    if size * view.dtype.itemsize > INT64_MAX:
        raise BytecodeError(
            f"{where}: {size} elements of {view.dtype.itemsize} bytes are more than an array "
            f"can hold (2**63 - 1 bytes)"
        )
    if output and size * view.dtype.itemsize > nbytes:
        raise BytecodeError(
            f"{where}: {size} elements of {view.dtype.itemsize} bytes cannot be written to "
            f"base {decl.id} of {nbytes} bytes without writing some twice"
        )


def _fast_extent(view: View) -> tuple[int, int, int] | None:
    """``(low, high, size)`` of a view whose fields are plain in-range ints, aligned, of a
    supported dtype; None for anything else (:func:`_checked_extent` then says what is wrong)."""
    dtype, shape, strides, offset = view.dtype, view.shape, view.strides, view.offset
    if (
        type(shape) is not tuple
        or type(strides) is not tuple
        or type(offset) is not int
        or len(shape) != len(strides)
        or len(shape) > MAX_NDIM
        or dtype not in SUPPORTED_DTYPES
    ):
        return None
    alignment = dtype.alignment
    if offset % alignment or not INT64_MIN <= offset <= INT64_MAX:
        return None
    low = high = offset
    size = 1
    for n, s in zip(shape, strides):
        if type(n) is not int or type(s) is not int or not 0 <= n <= INT64_MAX or not INT64_MIN <= s <= INT64_MAX:
            return None
        if n > 1 and s % alignment:
            return None
        size *= n
        step = (n - 1) * s
        if step < 0:
            low += step
        else:
            high += step
    if size == 0:
        return (offset, offset, 0)
    return (low, high + dtype.itemsize, size)


def _checked_extent(view: View, where: str) -> tuple[int, int, int]:
    """``(low, high, size)`` of ``view`` in Python ints, or the :class:`BytecodeError` that says
    which of its fields is wrong."""
    dtype = view.dtype
    if not is_supported(dtype):
        raise BytecodeError(f"{where}: unsupported view dtype {dtype!r}")
    shape, strides = view.shape, view.strides
    if not (isinstance(shape, tuple) and isinstance(strides, tuple)):
        raise BytecodeError(f"{where}: shape and strides must be tuples")
    if not all(_is_int(value) for value in (view.offset, *shape, *strides)):
        raise BytecodeError(f"{where}: offset, shape and strides must be ints")
    if len(shape) != len(strides):
        raise BytecodeError(f"{where}: shape {shape} and strides {strides} differ in length")
    if len(shape) > MAX_NDIM:
        raise BytecodeError(f"{where}: {len(shape)} dimensions, more than {MAX_NDIM}")
    if any(extent < 0 for extent in shape):
        raise BytecodeError(f"{where}: negative extent in shape {shape}")
    if not all(INT64_MIN <= value <= INT64_MAX for value in (view.offset, *shape, *strides)):
        raise BytecodeError(f"{where}: offset {view.offset}, shape {shape} or strides {strides} do not fit in 64 bits")
    alignment = dtype.alignment
    misaligned = [s for n, s in zip(shape, strides) if n > 1 and s % alignment]
    if view.offset % alignment or misaligned:
        raise BytecodeError(
            f"{where}: offset {view.offset} and strides {strides} must be multiples of "
            f"{alignment} (the alignment of {dtype})"
        )
    # Python ints throughout, so extents of NumPy-integer views cannot overflow
    exact = View(view.base, dtype, int(view.offset), tuple(map(int, shape)), tuple(map(int, strides)))
    return (*exact.byte_extent(), exact.size)


def _check_decl(decl: Any, where: str) -> None:
    if not isinstance(decl, BaseDecl):
        raise BytecodeError(f"{where}: expected a BaseDecl, got {type(decl).__name__}")
    if not _is_int(decl.id) or decl.id < 0:
        raise BytecodeError(f"{where}: base id {decl.id!r} must be a non-negative int")
    if not is_supported(decl.dtype):
        raise BytecodeError(f"{where}: base {decl.id} has unsupported dtype {decl.dtype!r}")
    if not _is_int(decl.size) or decl.size < 0:
        raise BytecodeError(f"{where}: base {decl.id} has invalid size {decl.size!r}")
    nbytes = int(decl.size) * decl.dtype.itemsize
    if nbytes > DEFAULT_LIMITS.max_base_bytes:
        raise BytecodeError(
            f"{where}: base {decl.id} of {nbytes} bytes exceeds {DEFAULT_LIMITS.max_base_bytes}"
        )


def _check_data(base: Any, array: Any, decl: BaseDecl | None) -> None:
    where = f"data for base {base!r}"
    if decl is None:
        raise BytecodeError(f"{where}: the base is not declared in this batch")
    if not isinstance(array, np.ndarray):
        raise BytecodeError(f"{where}: expected an ndarray, got {type(array).__name__}")
    if array.ndim != 1 or not array.flags.c_contiguous:
        raise BytecodeError(f"{where}: expected a 1-D C-contiguous array, got shape {array.shape}")
    if array.dtype != decl.dtype or array.size != decl.size:
        raise BytecodeError(
            f"{where}: array of {array.size} x {array.dtype} does not match the declared "
            f"{decl.size} x {decl.dtype}"
        )


def _check_counts(entry: OpSpec, instruction: Instruction, where: str) -> None:
    nout, nin = len(instruction.outputs), len(instruction.inputs)
    if nout != entry.nout:
        raise BytecodeError(f"{where}: {nout} outputs, the opcode takes {entry.nout}")
    if entry.arity == -1:
        if nin < 1:
            raise BytecodeError(f"{where}: no inputs, the opcode takes at least 1")
    elif nin != entry.arity:
        raise BytecodeError(f"{where}: {nin} inputs, the opcode takes {entry.arity}")


def _check_attrs(entry: OpSpec, instruction: Instruction, where: str) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    if instruction.attrs == () and not entry.required:
        return attrs
    if not isinstance(instruction.attrs, tuple):
        raise BytecodeError(f"{where}: attrs must be a tuple of (name, value) pairs")
    for pair in instruction.attrs:
        if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str)):
            raise BytecodeError(f"{where}: attribute {pair!r} is not a (name, value) pair")
        key, value = pair
        if key in attrs:
            raise BytecodeError(f"{where}: attribute {key!r} given twice")
        if key not in entry.attrs:
            accepted = ", ".join(sorted(entry.attrs)) or "none"
            raise BytecodeError(f"{where}: unknown attribute {key!r} (accepted: {accepted})")
        _check_attr_value(value, f"{where}: attribute {key!r}", 0)
        attrs[key] = value
    missing = sorted(entry.required - attrs.keys())
    if missing:
        raise BytecodeError(f"{where}: missing required attribute(s) {', '.join(missing)}")
    return attrs


def _check_attr_value(value: Any, where: str, depth: int) -> None:
    if isinstance(value, np.generic | np.dtype):
        dtype = value.dtype if isinstance(value, np.generic) else value
        if not is_supported(dtype):
            raise BytecodeError(f"{where}: unsupported dtype {dtype!r}")
    elif isinstance(value, tuple):
        if depth >= DEFAULT_LIMITS.max_attr_depth:
            raise BytecodeError(f"{where}: tuples nested deeper than {DEFAULT_LIMITS.max_attr_depth} levels")
        for item in value:
            _check_attr_value(item, where, depth + 1)
    elif not (value is None or isinstance(value, bool | int | float | complex | str)):
        raise BytecodeError(f"{where}: a value of type {type(value).__name__} cannot be carried")


def _check_const(const: Const, where: str) -> None:
    value = const.value
    if isinstance(value, np.generic):
        if not is_supported(value.dtype):
            raise BytecodeError(f"{where}: constant of unsupported dtype {value.dtype!r}")
    elif not isinstance(value, bool | int | float | complex):
        raise BytecodeError(f"{where}: a constant must be a scalar, got {type(value).__name__}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)
