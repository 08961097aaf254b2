"""Which instruction of a block operation met a floating-point condition, as NumPy reports it.

The engine runs with NumPy's error reporting off; the frontend warns for lazy operations from
the notes taken here (``shoal.engine.fp_signals``). Two gates, both cheap where nothing
happens:

- NumPy calls (the tile path, whole-view operations, reductions' folds, direct runs) run under
  ``np.errstate`` with the watched categories set to ``"log"``: NumPy hands its own message
  (``"divide by zero encountered in log"``) to a log object after each ufunc call that met one.
- Compiled kernels (Numba, error model ``"numpy"``) leave the processor's status flags set:
  ``feclearexcept`` before and ``fetestexcept`` after the call (0.73 µs the pair). Integer
  division sets no flag there, so a compiled block with an integer division whose divisor may be
  0 (or -1, where the quotient may overflow) is checked too.

On the NumPy tile path each message comes with the step whose call made it
(``NumpyLog.current``, set by ``run_tiles``) and is noted as it is: exact, nothing recomputed.
When a compiled block's gate fires, :func:`attribute` recomputes the block's steps one by one
with NumPy under ``"log"`` into scratch arrays: NumPy's own messages, per step, for exactly the
steps that meet a condition (a fused kernel holding ``log`` and ``/`` blames the one that signalled;
flags a compiled kernel raised where NumPy would not, such as a speculated division, blame
none). A step whose inputs the kernel overwrote in place (``a = np.log(a)``, a deferred write
the kernel stored itself) cannot be recomputed: a condition no recomputed step explains goes to
the first such step that can meet it (its name in NumPy's message where the tile path gave one).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform
from collections.abc import Callable
from typing import Any

import numpy as np

from shoal.bytecode import Instruction, spec
from shoal.engine import fp_signals
from shoal.engine.fp_signals import (
    CATEGORY_TEXT,
    DIVIDE,
    INVALID,
    OVER,
    UNDER,
    NumpyLog,
    category,
    logging_state,
    named,
    numpy_name,
    silent,
)
from shoal.engine.node.lower.program import (
    ARRAY,
    CONST,
    DEFERRED,
    KernelProgram,
    KernelStep,
    block_offset,
)
from shoal.engine.node.run.tiles import partial_reduce

# <fenv.h> bits differ by architecture; NumPy's bits are the same everywhere.
_FE_BITS = {
    "aarch64": ((1, INVALID), (2, DIVIDE), (4, OVER), (8, UNDER)),
    "arm64": ((1, INVALID), (2, DIVIDE), (4, OVER), (8, UNDER)),
}.get(platform.machine().lower(), ((1, INVALID), (4, DIVIDE), (8, OVER), (16, UNDER)))
_FE_ALL = sum(bit for bit, _ in _FE_BITS)


def _libm() -> Any:
    path = ctypes.util.find_library("m")
    try:
        library = ctypes.CDLL(path)
        return library.feclearexcept, library.fetestexcept
    except (OSError, AttributeError, TypeError):
        return None


_FENV = _libm()
_INT_DIVISIONS = frozenset({"floor_divide", "remainder", "divmod", "fmod"})


def _hardware(watched: int) -> int:
    """The conditions the status flags hold (NumPy's bits, only those watched); cleared."""
    if _FENV is None:
        return 0
    raised = _FENV[1](_FE_ALL)
    if not raised:
        return 0
    _FENV[0](_FE_ALL)
    found = 0
    for bit, condition in _FE_BITS:
        if raised & bit:
            found |= condition
    return found & watched


def compute(runner: Any, kernel: Any, index: int, buffers: dict[int, np.ndarray]) -> Any:
    """``runner._compute(kernel, index, buffers)`` (a view-block into its deferred buffers),
    noting the conditions it meets per instruction."""
    return _gated(runner, index, lambda: runner._compute(kernel, index, buffers), stored=False)


def compute_storing(runner: Any, kernel: Any, index: int, shape: tuple[int, ...]) -> Any:
    """``runner._run_storing_rows(kernel, index, shape)``, a compiled kernel that stores its
    deferred rows itself, noting the conditions it meets per instruction."""
    return _gated(runner, index, lambda: runner._run_storing_rows(kernel, index, shape), stored=True)


def _gated(runner: Any, index: int, run: Callable[[], Any], stored: bool) -> Any:
    watched = fp_signals.watched()
    if not watched:
        with np.errstate(all="ignore"):
            return run()
    log = NumpyLog()
    compiled_before = runner.compiled_blocks
    if _FENV is not None:
        _FENV[0](_FE_ALL)
    with logging_state(watched, log):
        result = run()
    flags = _hardware(watched)
    compiled = runner.compiled_blocks != compiled_before
    if not compiled:
        flags = 0  # NumPy's calls leave flags too; they reported through the log
    messages = log.messages
    if messages and None not in log.sources:
        explained: set[str] = set()
        for source, message in zip(log.sources, messages):
            _note_all(source, [message], watched, explained)
        messages = []
    if messages or flags or (compiled and _may_divide_by_zero(runner, index)):
        attribute(runner, index, messages, flags, watched, stored)
    return result


def _may_divide_by_zero(runner: Any, index: int) -> bool:
    """True if an integer division of the program may divide by 0 (or by -1) in this block."""
    program: KernelProgram = runner.program
    divisions = getattr(runner, "_fp_int_divisions", None)
    if divisions is None:
        divisions = runner._fp_int_divisions = [
            step for step in program.steps
            if step.op in _INT_DIVISIONS and step.loop_in is not None and step.loop_in[1].kind in "iu"
        ]  # fmt: skip
    if not divisions:
        return False
    constants = runner.constants()
    for step in divisions:
        divisor = step.inputs[1]
        slot = program.slots[divisor]
        if slot.kind == CONST:
            if constants[divisor] in (0, -1):
                return True
        elif slot.kind == ARRAY and not slot.written:
            values = _block_view(runner, index, divisor)
            if not values.all() or (values.dtype.kind == "i" and (values == -1).any()):
                return True
        else:
            return True
    return False


def _block_view(runner: Any, index: int, slot_id: int) -> np.ndarray:
    program: KernelProgram = runner.program
    part = program.partition
    slot = program.slots[slot_id]
    return np.ndarray(
        part.block_shape(index), slot.dtype, buffer=runner.storage.raw(slot.base),
        offset=block_offset(part, index, slot), strides=slot.strides[part.axis :],
    )  # fmt: skip


def _overwritten(program: KernelProgram, stored: bool) -> set[int]:
    """Array slots whose base memory no longer holds the block's inputs after the kernel."""
    written = {i for i, slot in enumerate(program.slots) if slot.kind == ARRAY and slot.written}
    if stored:
        deferred = {slot.base for slot in program.slots if slot.kind == DEFERRED}
        written |= {i for i, slot in enumerate(program.slots) if slot.kind == ARRAY and slot.base in deferred}
    return written


def attribute(runner: Any, index: int, messages: list[str], flags: int, watched: int, stored: bool) -> None:
    """Note, per instruction, the conditions view-block ``index`` met (see the module's text)."""
    program: KernelProgram = runner.program
    shape = program.partition.block_shape(index)
    constants = runner._tile_constants()
    slots = program.slots
    values: dict[int, Any] = {}
    bad = _overwritten(program, stored) if program.sweeps == 1 else set(range(len(slots)))
    explained: set[str] = set()
    unsure: list[Instruction] = []

    def operand(i: int) -> Any:
        if i in values:
            return values[i]
        if slots[i].kind == CONST:
            return constants[i]
        return _block_view(runner, index, i)

    def reduce_at(position: int) -> None:
        for r in program.reductions:
            if r.position != position:
                continue
            if r.source in bad or (slots[r.source].kind not in (ARRAY, CONST) and r.source not in values):
                unsure.append(r.instruction)
                continue
            log = NumpyLog()
            with logging_state(watched, log):
                partial_reduce(r.op, operand(r.source), r.acc)
            _note_all(r.instruction, log.messages, watched, explained)

    for position, step in enumerate(program.steps):
        reduce_at(position)
        if not _recomputable(step, slots, values, bad):
            bad.update(step.outputs)
            unsure.append(step.instruction)
            continue
        outs = [np.empty(shape, slots[o].dtype) for o in step.outputs]
        ins = [operand(i) for i in step.inputs]
        log = NumpyLog()
        with logging_state(watched, log):
            spec(step.op).reference(outs, ins, step.instruction.attr_dict())
        for o, array in zip(step.outputs, outs):
            values[o] = array
            bad.discard(o)
        _note_all(step.instruction, log.messages, watched, explained)
    reduce_at(len(program.steps))
    _blame_unsure(unsure, messages, flags, watched, explained)


def _recomputable(step: KernelStep, slots: list[Any], values: dict[int, Any], bad: set[int]) -> bool:
    if step.axis_reduction:
        return False
    for i in step.inputs:
        if i in bad or (slots[i].kind not in (ARRAY, CONST) and i not in values):
            return False
    return True


def _note_all(instruction: Instruction, messages: list[str], watched: int, explained: set[str]) -> None:
    for message in messages:
        if category(message) & watched:
            message = named(instruction, message)
            fp_signals.note(instruction, message)
            explained.add(message)


def _blame_unsure(unsure: list[Instruction], messages: list[str], flags: int, watched: int, explained: set[str]) -> None:
    """Conditions no recomputed step explains go to the first step that could meet them among
    those that could not be recomputed."""
    if not unsure:
        return
    wanted: dict[int, set[str] | None] = {}
    for message in messages:
        bit = category(message) & watched
        if bit and message not in explained:
            names = wanted.setdefault(bit, set())
            if names is not None:
                names.add(message.rpartition(" encountered in ")[2])
    explained_bits = 0
    for message in explained:
        explained_bits |= category(message)
    for condition in (DIVIDE, OVER, UNDER, INVALID):
        if flags & condition and not explained_bits & condition and condition not in wanted:
            wanted[condition] = None
    for condition, names in wanted.items():
        for instruction in unsure:
            name = numpy_name(instruction)
            if (names is None or name in names) and _can_signal(instruction, condition):
                fp_signals.note(instruction, f"{CATEGORY_TEXT[condition]} encountered in {name}")
                break


def _can_signal(instruction: Instruction, condition: int) -> bool:
    """Whether NumPy can report ``condition`` for ``instruction`` (by operation and dtypes)."""
    op = instruction.op
    if silent(op, (*instruction.inputs, *instruction.outputs)):
        return False
    kinds = {view.dtype.kind for view in instruction.outputs}
    kinds |= {operand.dtype.kind for operand in instruction.inputs if hasattr(operand, "dtype")}
    if op == "copy":
        source = instruction.inputs[0]
        return getattr(source, "dtype", None) != instruction.outputs[0].dtype and bool(kinds & set("fc"))
    if not kinds & set("fc"):
        return op in _INT_DIVISIONS and condition in (DIVIDE, OVER)
    return True
