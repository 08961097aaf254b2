"""Floating-point conditions an engine met, per instruction of the batch it ran.

NumPy warns about a division by zero, an overflow, an invalid value or an underflow at the call
that met it. Lazy operations run later, on other threads, so the engine notes each condition
with the instruction that met it, as NumPy's message (``"divide by zero encountered in log"``),
and the frontend reads the notes back with the batch and warns at the line that recorded the
instruction (``shoal.numpy._fpwarn``).

The frontend says before each batch which conditions anyone will look at (:func:`watch`);
an engine runs the batch inside :class:`running` and skips its checks when none are watched;
the frontend reads the notes once the watch is ``done`` (a component may run batches after
``execute`` returns). Instructions are named by their position in the batch.
A plan the engine replays for a later batch of the same structure holds the instructions of the
batch it was planned for: :func:`planned` keeps their positions (the same in every batch the
plan serves), :func:`derived` gives an instruction the engine made from another one the
other's position.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from shoal.bytecode import Batch, Instruction, Kind, spec

# NumPy's bits for the four conditions (``np.seterrcall`` handlers receive them too).
DIVIDE, OVER, UNDER, INVALID = 1, 2, 4, 8
CATEGORY_TEXT = {DIVIDE: "divide by zero", OVER: "overflow", UNDER: "underflow", INVALID: "invalid value"}
_PRUNE_AT = 50_000
# Operations NumPy never reports a condition for, whatever the values.
SILENT = frozenset({
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or",
    "bitwise_xor", "invert", "left_shift", "right_shift", "isnan", "isinf", "isfinite",
    "signbit", "negative", "positive", "absolute", "fabs", "conjugate", "sign", "copysign",
    "maximum", "minimum", "fmax", "fmin", "floor", "ceil", "trunc", "rint", "arange",
    "gather", "sort", "argsort", "partition", "argpartition", "take_along_axis",
    "argmin", "argmax", "any", "all", "min", "max", "release",
})  # fmt: skip
# ... except these with a complex operand: orderings report an invalid value where one is NaN,
# and ``sign`` divides by the magnitude (overflow, underflow).
SIGNAL_ON_COMPLEX = frozenset({"less", "less_equal", "greater", "greater_equal", "sign"})


def silent(op: str, operands: tuple[Any, ...]) -> bool:
    """Whether NumPy never reports a condition for ``op`` on these operands (arrays, views,
    constants, scalars, dtypes or scalar types)."""
    return op in SILENT and not (op in SIGNAL_ON_COMPLEX and any(_complex(operand) for operand in operands))


def _complex(operand: Any) -> bool:
    if isinstance(operand, np.dtype):
        return operand.kind == "c"
    if isinstance(operand, type):  # a Python scalar's type, as the recording keys hold it
        return issubclass(operand, (complex, np.complexfloating))
    dtype = getattr(operand, "dtype", None)
    if isinstance(dtype, np.dtype):
        return dtype.kind == "c"
    value = getattr(operand, "value", operand)  # a constant's value
    return isinstance(value, complex) or (isinstance(getattr(value, "dtype", None), np.dtype) and value.dtype.kind == "c")


@dataclass
class Watch:
    """One batch's watch: the conditions its engine checks for, and the notes taken."""

    batch: Batch
    watched: int
    notes: list[tuple[Instruction, str]] = field(default_factory=list)
    done: bool = False
    remote: bool = False  # run by another process: done only once its notes are back


_IDLE = Watch(Batch(), 0)
_running = _IDLE  # the watch of the batch an engine runs now
_watches: dict[int, Watch] = {}  # id(batch) -> watch, from ``watch`` until the batch runs
_positions: dict[int, tuple[Instruction, int]] = {}  # id(instruction) -> (instruction, position)
_lock = threading.Lock()


def watch(batch: Batch, conditions: int) -> Watch:
    """Before ``batch`` goes to a component: the conditions (bits above) the frontend reports
    for it (0: none). The watch is ``done`` once an engine has run the batch."""
    record = Watch(batch, conditions)
    if conditions:
        _watches[id(batch)] = record
    else:
        record.done = True
    return record


def forget(record: Watch) -> None:
    """Drop ``record``'s watch if no engine ran its batch (a component that reports nothing)."""
    _watches.pop(id(record.batch), None)


def claim(batch: Batch) -> Watch | None:
    """The watch of ``batch`` for a component that runs it in another process and hands its
    notes back with :func:`received` (None: nothing is watched). The frontend waits for those
    notes: the watch is ``done`` only then."""
    record = _watches.pop(id(batch), None)
    if record is not None:
        record.remote = True
    return record


def received(record: Watch, notes: list[tuple[int, str]]) -> None:
    """Notes (position, NumPy's message) for ``record``'s batch, checked by the caller to lie
    inside the batch, arrived from the process that ran it."""
    instructions = record.batch.instructions
    for position, message in notes:
        record.notes.append((instructions[position], message))


def watched() -> int:
    """The conditions the batch being run is checked for (0: no checks)."""
    return _running.watched


_exclusive: threading.RLock | None = None  # set: one batch at a time in this process


def one_batch_at_a_time() -> None:
    """Several engines of this process run batches on threads of their own (a proxy server's
    sessions): from now on they run one batch at a time, so that the notes of one batch never
    land in another's watch (the notes of the running batch are process-wide)."""
    global _exclusive
    with _lock:
        if _exclusive is None:
            _exclusive = threading.RLock()


class running:
    """``with running(batch):`` around an engine's run of ``batch`` (on any thread; an engine
    runs one batch at a time): notes taken meanwhile are the batch's."""

    __slots__ = ("_held", "_record")

    def __init__(self, batch: Batch) -> None:
        self._record = _watches.pop(id(batch), None)
        self._held: threading.RLock | None = None

    def __enter__(self) -> None:
        global _running
        exclusive = _exclusive
        if exclusive is not None:
            exclusive.acquire()
            self._held = exclusive
        if self._record is not None:
            _running = self._record

    def __exit__(self, *exc: object) -> None:
        global _running
        if self._record is not None:
            self._record.done = True
            _running = _IDLE
        if self._held is not None:
            self._held.release()


def planned() -> None:
    """The batch being run is being planned: its instructions' positions, as sent (an engine may
    plan fewer instructions), serve the plan's later replays."""
    running = _running
    if not running.watched:
        return
    batch = running.batch
    with _lock:
        if len(_positions) > _PRUNE_AT:
            for key, (instruction, _position) in list(_positions.items()):
                if sys.getrefcount(instruction) <= 3:  # only this table holds it
                    del _positions[key]
        for position, instruction in enumerate(batch.instructions):
            _positions[id(instruction)] = (instruction, position)


def derived(made: Instruction, source: Instruction) -> Instruction:
    """``made`` (part of ``source``'s work) reports as ``source``; returns ``made``."""
    with _lock:
        entry = _positions.get(id(source))
        if entry is not None and entry[0] is source:
            _positions[id(made)] = (made, entry[1])
    return made


def note(instruction: Instruction, message: str) -> None:
    """``instruction`` met a condition; ``message`` is NumPy's text for it."""
    _running.notes.append((instruction, message))


def take(record: Watch) -> list[tuple[int, str]]:
    """A run batch's notes as (position, message), in order of position, each once."""
    notes, record.notes = record.notes, []
    if not notes:
        return []
    current = {id(i): n for n, i in enumerate(record.batch.instructions)}
    found: dict[tuple[int, str], None] = {}
    for instruction, message in notes:
        position = current.get(id(instruction))
        if position is None:
            entry = _positions.get(id(instruction))
            if entry is None or entry[0] is not instruction:
                continue
            position = entry[1]
        found[(position, message)] = None
    return sorted(found, key=lambda item: (item[0], _order(item[1])))


def _order(message: str) -> int:
    """NumPy's order of the conditions of one call: divide, overflow, underflow, invalid."""
    for rank, text in enumerate(CATEGORY_TEXT.values()):
        if message.startswith(text):
            return rank
    return len(CATEGORY_TEXT)


class NumpyLog:
    """The ``call`` object of ``np.errstate(all="log")``: keeps NumPy's messages.

    Code that runs several instructions' NumPy calls under one log sets ``current`` to the
    instruction whose call comes next; each message is kept with it in ``sources`` (None where
    nobody said)."""

    __slots__ = ("current", "messages", "sources")

    def __init__(self) -> None:
        self.messages: list[str] = []
        self.sources: list[Instruction | None] = []
        self.current: Instruction | None = None

    def write(self, text: str) -> None:
        self.messages.append(text.removeprefix("Warning: ").rstrip("\n"))
        self.sources.append(self.current)


_MODE_NAMES = ((DIVIDE, "divide"), (OVER, "over"), (UNDER, "under"), (INVALID, "invalid"))
_LOGGED: dict[int, dict[str, str]] = {}


def logging_state(watched: int, log: NumpyLog) -> Any:
    """``np.errstate`` that hands NumPy's messages of the ``watched`` conditions to ``log`` and
    ignores the others (an underflow nobody watches costs no message and no check)."""
    modes = _LOGGED.get(watched)
    if modes is None:
        modes = _LOGGED[watched] = {name: "log" if bit & watched else "ignore" for bit, name in _MODE_NAMES}
    return np.errstate(call=log, **modes)


def category(message: str) -> int:
    """The condition bit of one of NumPy's messages."""
    for bit, text in CATEGORY_TEXT.items():
        if message.startswith(text):
            return bit
    return 0


def numpy_name(instruction: Instruction) -> str:
    """The name NumPy's message gives the call that ``instruction`` stands for."""
    op = instruction.op
    kind = spec(op).kind
    if kind is Kind.REDUCTION:
        return "reduce"
    if kind is Kind.SCAN:
        return "accumulate"
    if op in ("copy", "where"):
        return "cast"
    return op


def named(instruction: Instruction, message: str) -> str:
    """``message`` as NumPy words it for ``instruction`` (a reduction folded with ``add`` says
    ``reduce``, as ``np.sum`` does)."""
    if spec(instruction.op).kind in (Kind.REDUCTION, Kind.SCAN):
        head, _, _name = message.rpartition(" encountered in ")
        return f"{head} encountered in {numpy_name(instruction)}"
    return message


def _note_messages(instruction: Instruction, messages: list[str], watched: int) -> int:
    noted = 0
    for message in messages:
        bit = category(message)
        if bit & watched:
            note(instruction, named(instruction, message))
            noted |= bit
    return noted


class noting:
    """``with noting(instruction):`` runs NumPy calls for ``instruction`` and notes the
    conditions they meet (NumPy's errors ignored when the batch watches none)."""

    __slots__ = ("_instruction", "_log", "_state", "_watched")

    def __init__(self, instruction: Instruction | None) -> None:
        self._instruction = instruction
        self._watched = watched() if instruction is not None else 0
        self._log = NumpyLog()
        self._state = logging_state(self._watched, self._log) if self._watched else np.errstate(all="ignore")

    def __enter__(self) -> None:
        self._state.__enter__()

    def __exit__(self, *exc: object) -> None:
        self._state.__exit__(*exc)
        if self._log.messages and self._instruction is not None:
            _note_messages(self._instruction, self._log.messages, self._watched)
