"""The component interface every layer of the stack implements (paper 004 §3.1).

A component is created with its configuration (one frozen dataclass per component) and, if it
is a middle layer, the component below it (``inner``). It receives batches of bytecode, keeps the
bases they create, and hands back array data only when the program reads a value. The proxy, the
cluster manager and the node engine all speak this interface, so they stack
(``shoal.engine.registry`` builds a stack from a spelling such as ``pass:node``).

``execute`` may return before the batch has run. An error in a batch that ran after ``execute``
returned surfaces at the next :meth:`Component.fetch`, :meth:`Component.flush` or
:meth:`Component.shutdown` as an :class:`EngineError` that names the instruction. A base's end is
a ``release`` instruction in a batch; there is no other way to free one.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from shoal.bytecode import Batch, Instruction, View

if TYPE_CHECKING:
    from shoal import drawn


class EngineError(RuntimeError):
    """A component could not run a batch that the frontend accepted."""


def name_instruction(error: BaseException, index: int, instruction: Instruction) -> None:
    """Add to ``error`` a note naming instruction ``index`` of a batch, which raised it."""
    from shoal.bytecode.disasm import format_operand

    outputs = ", ".join(format_operand(view) for view in instruction.outputs)
    inputs = ", ".join(format_operand(operand) for operand in instruction.inputs)
    text = f"{instruction.op} {outputs} <- {inputs}" if inputs else f"{instruction.op} {outputs}"
    error.add_note(f"in instruction {index}: {text.rstrip()}")


def described(error: BaseException) -> str:
    """``error``'s type, message and notes on one line."""
    notes = "; ".join(getattr(error, "__notes__", ()))
    return f"{type(error).__name__}: {error}" + (f" ({notes})" if notes else "")


class Component(abc.ABC):
    """One layer of Shoal's runtime stack.

    A subclass sets ``name`` (its name in a stack spelling) and ``layered`` (True for a middle
    layer, which is created with the component below it), and builds its configuration from
    the settings in :meth:`configure`.
    """

    name: ClassVar[str] = "component"
    layered: ClassVar[bool] = False

    @classmethod
    @abc.abstractmethod
    def configure(cls, environ: Mapping[str, str] | None = None) -> Any:
        """This component's configuration from Shoal's settings (``shoal.settings``): what a
        stack spelled by name is created with."""

    @abc.abstractmethod
    def execute(self, batch: Batch) -> None:
        """Run ``batch``: declare its bases, load its data, run its instructions in order.

        May return before the batch has run; the caller must not change the batch afterwards."""

    @abc.abstractmethod
    def fetch(self, view: View) -> np.ndarray:
        """A new ndarray holding the contents of ``view`` after every batch executed so far."""

    def memory(self, view: View, write: bool = False) -> np.ndarray | None:
        """The live ndarray that ``view`` describes in this component's own memory, or None.

        Only for a base that no batch executed so far still has to change: the caller reads it
        (or, with ``write``, writes it) in place of recording an instruction. None where the
        component cannot offer that (it runs batches elsewhere, or the base's values live in
        another base's region). Where its ``base`` is a C-contiguous ndarray, that array is the
        base's whole memory from its first byte: the caller may keep it to make other views of
        the base until it executes the next batch."""
        return None

    def prefers_local_loops(self) -> bool:
        """True if, for a component that offers no :meth:`memory`, a loop of small operations on
        one of its bases runs faster on the base's values fetched into the program's process
        than recorded (the cluster manager: a recorded row loop pays a round trip between ranks
        per row). The runtime then takes such a base back for the loop (:mod:`shoal.local_loops`).
        By default False (a proxy's client records the loop and sends it in one batch)."""
        return False

    def expect_draw(self, made: drawn.Recipe, shape: tuple[int, ...]) -> None:
        """The program is about to make a large random draw of ``shape`` whose recipe is ``made``
        (:mod:`shoal.drawn`); a later batch may carry it as data. A component that would send
        its parts elsewhere may have them drawn there ahead, while NumPy draws it here; the
        batch still carries the data, and the draw may yet fail. By default, nothing."""
        return None

    def flush(self) -> None:
        """Return once every batch executed so far has run; raise an :class:`EngineError` for
        one that failed (a component that runs batches inside ``execute`` has nothing to do)."""
        return None

    def abandon(self) -> None:
        """The program was interrupted (Ctrl-C) and reads nothing more: work executed and not
        yet run may be dropped instead of run; :meth:`shutdown` follows. By default nothing is
        dropped."""
        return None

    @abc.abstractmethod
    def shutdown(self) -> None:
        """Finish or drop outstanding work and release everything; the component may not be used
        afterwards. Raises the :class:`EngineError` of a batch that failed unseen."""

    def in_process(self) -> bool:
        """True if every base this component keeps lives in this process's memory, so that a
        child forked from it has a copy of them and keeps using it through :meth:`forked`. By
        default False: before a fork the runtime fetches the live bases from it
        (:mod:`shoal.forks`)."""
        return False

    def forked(self) -> Component | None:
        """Called in a child forked from this process, before the child runs anything else: the
        component the child uses from now on. One :meth:`in_process` returns this component made
        usable by the child alone (its parent's threads are gone); any other drops what it shares
        with the parent (a socket, an MPI communicator) without using it and returns None, and the
        child then runs on a node engine of its own. Never talks to anything."""
        return None

    def live_bases(self) -> int:
        """How many bases the component holds after every batch executed so far (leak tests)."""
        return 0
