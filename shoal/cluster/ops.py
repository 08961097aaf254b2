"""One rank's planned operations and the memory they touch (see :mod:`shoal.cluster.plan`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from shoal.bytecode import BaseDecl, Instruction, View, contiguous_strides, make_attrs
from shoal.frozen_values import slot_maker

Access = tuple[int, int, int]  # local base, first byte, byte after the last


@dataclass(eq=False, slots=True)
class Op:
    """One operation of one rank.

    ``kind``: ``"compute"`` (``instructions`` run on the rank's node engine), ``"send"`` (the
    contents of ``view``, a local view, go to ``peer``) or ``"receive"`` (``shape`` elements of
    ``dtype`` arrive from ``peer`` into a new temporary base ``temp``). ``needs``: receives whose
    temporary bases the computation declares (with their data) before it runs. ``late``: a
    reduction's partial result or result, which only the end of the batch needs. A late send
    waits for the computations that are ready when it is, so that they join the node-engine
    batch it reads; a batch cut into loop iterations whose messages are all late runs them as
    one flush (:mod:`shoal.cluster.rank`)."""

    kind: str
    reads: list[Access] = field(default_factory=list)
    writes: list[Access] = field(default_factory=list)
    instructions: list[Instruction] = field(default_factory=list)
    needs: list[Op] = field(default_factory=list)
    declares: list[BaseDecl] = field(default_factory=list)
    peer: int = -1
    tag: int = 0
    view: View | None = None
    temp: int = -1
    dtype: np.dtype | None = None
    shape: tuple[int, ...] = ()
    late: bool = False
    buffer: np.ndarray | None = None
    data: dict[int, np.ndarray] = field(default_factory=dict)
    request: object = None
    issued: bool = False
    done: bool = False
    model: Op | None = None  # the template's operation this one replays (its instructions repeat it over other bases)
    positions: tuple[int, ...] = ()  # per instruction, the batch's instruction it computes, where ops are not in program order (shoal.cluster.interior_first)


new_op: Callable[..., Op] = slot_maker(
    Op,
    ("kind", "reads", "writes", "instructions", "needs", "declares", "peer", "tag", "view", "temp", "dtype", "shape", "late", "buffer", "data", "request", "issued", "done", "model", "positions"),
    (None, False, False, None, ()),
)  # every mutable field given: a maker's defaults are shared


def access(view: View) -> Access:
    low, high = view.byte_extent()
    return (view.base, low, high)


def contiguous(base: int, dtype: np.dtype, shape: tuple[int, ...]) -> View:
    return View(base, dtype, 0, tuple(shape), contiguous_strides(tuple(shape), dtype.itemsize))


def released_bases(instructions: Sequence[Instruction]) -> set[int]:
    """The bases ``instructions`` release: a batch's temporaries."""
    return {int(instruction.attr("base")) for instruction in instructions if instruction.op == "release"}


def release_of(local: int) -> Instruction:
    """The instruction that frees local base ``local``."""
    return Instruction("release", (), (), make_attrs(base=local))
