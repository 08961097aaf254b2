"""What of a batch that verification rejected still runs, so that the runtime goes on.

A batch is verified before a component runs any of it (``Runtime._check`` under
``SHOAL_VERIFY=1``, the node and reference engines always). When one instruction or declaration
fails, the whole batch is refused and nothing of it ran: the arrays of every other operation
recorded with it, and the bases they declared, would be unknown to the component, so every
later batch using them failed ("base N ... neither declared nor known"), and a program that
caught the first error could not go on. :func:`salvage` runs the batch again in parts: the
declarations that verify on their own in one batch, then each instruction alone, in program
order; a declaration or instruction that is refused on its own is left out (with any
instruction using a base whose declaration was left out), as the NumPy call that failed would
have produced nothing. The caller then raises the first error, as before.
"""

from __future__ import annotations

from collections.abc import Callable

from shoal.bytecode import Batch, BytecodeError, verify

_VERIFY_CODE = verify.__code__


def rejected(error: BaseException) -> bool:
    """True if ``error`` was raised by verification, which runs before anything of a batch."""
    trace = error.__traceback__
    while trace is not None:
        if trace.tb_frame.f_code is _VERIFY_CODE:
            return True
        trace = trace.tb_next
    return False


def salvage(batch: Batch, run: Callable[[Batch], None], lost: set[int]) -> Exception | None:
    """Run what of the refused ``batch`` verifies in parts, each part with ``run``; returns the
    first error a part raised, in program order (None: each part ran). The bases whose
    declarations were refused are added to ``lost``."""
    kept = []
    for decl in batch.bases:
        data = batch.data.get(decl.id)
        try:
            verify(Batch(bases=[decl], data={} if data is None else {decl.id: data}))
        except BytecodeError:
            lost.add(decl.id)
            continue
        kept.append(decl)
    first: Exception | None = None
    try:
        run(_declaring(batch, kept))
    except BytecodeError:  # too much at once: one by one
        for decl in kept:
            try:
                run(_declaring(batch, [decl]))
            except BytecodeError as error:
                lost.add(decl.id)
                first = first or error
    for instruction in batch.instructions:
        if instruction.op == "release":
            if instruction.attr("base") in lost:
                continue
        elif any(getattr(operand, "base", None) in lost for operand in (*instruction.outputs, *instruction.inputs)):
            continue
        try:
            run(Batch(instructions=[instruction]))
        except Exception as error:
            first = first or error
    return first


def _declaring(batch: Batch, decls: list) -> Batch:
    """A batch declaring ``decls`` of ``batch`` with their data."""
    return Batch(
        bases=decls,
        data={decl.id: batch.data[decl.id] for decl in decls if decl.id in batch.data},
        donated={decl.id for decl in decls if decl.id in batch.donated},
    )


def without_lost(batch: Batch, lost: set[int]) -> Batch:
    """``batch`` without the releases of ``lost`` bases (never declared: the program still
    drops their arrays); each such base is forgotten once its release is dropped."""
    kept = []
    for instruction in batch.instructions:
        if instruction.op == "release" and instruction.attr("base") in lost:
            lost.discard(instruction.attr("base"))
            continue
        kept.append(instruction)
    if len(kept) == len(batch.instructions):
        return batch
    return Batch(bases=batch.bases, data=batch.data, instructions=kept, donated=batch.donated)
