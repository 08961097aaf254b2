"""What happens to a batch between the runtime's flush and its component (a mixin of
:class:`~shoal.runtime.Runtime`): rolls of one array read from one padded copy
(:mod:`shoal.rolled_reads`), verification and a round trip through the wire format where
``SHOAL_VERIFY`` asks for them, the disassembly, the watch for its floating-point warnings, and
the hand-over itself, traced.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import numpy as np

from shoal import fp_warnings, trace
from shoal.bytecode import Batch, BytecodeError
from shoal.engine import fp_signals
from shoal.rolled_reads import padded_rolls

if TYPE_CHECKING:
    from shoal.runtime import Runtime


class Handover:
    """``_padded_rolls``, ``_execute``, ``_execute_part`` and ``_check`` of
    :class:`~shoal.runtime.Runtime`."""

    def _padded_rolls(self: Runtime, batch: Batch, sites: dict[int, fp_warnings.Site]) -> tuple[Batch, dict[int, fp_warnings.Site]]:
        """``batch`` with its rolls of one array read from one padded copy (``rolled_reads``),
        and where each instruction's warnings come from in it."""
        rewritten, moved = padded_rolls(batch, self.next_base_id)
        if rewritten is batch:
            return batch, sites
        return rewritten, {moved[position]: site for position, site in sites.items() if position in moved}

    def _execute(self: Runtime, batch: Batch, sites: dict[int, fp_warnings.Site], wait: bool) -> None:
        if self.verify:
            batch = self._check(batch)
        if self.dump:
            from shoal.bytecode import disassemble

            print(disassemble(batch), file=sys.stderr)
        engine = self.engine
        if sites:
            self._watches.append((fp_signals.watch(batch, fp_warnings.watched(sites)), sites))
        tracer = trace.TRACER
        if tracer is None:
            engine.execute(batch)
            if wait:
                engine.flush()
        else:
            with tracer.span("flush", "scheduling", {"instructions": len(batch.instructions)}):
                engine.execute(batch)
                if wait:
                    engine.flush()

    def _execute_part(self: Runtime, part: Batch) -> None:
        """Run part of a batch that verification refused (``shoal.salvage``)."""
        if self.verify:
            part = self._check(part)
        self.engine.execute(part)

    def _check(self: Runtime, batch: Batch) -> Batch:
        from shoal.bytecode import dumps, loads, verify

        verify(batch, self._known)
        for decl in batch.bases:
            self._known[decl.id] = decl
        for instruction in batch.instructions:
            if instruction.op == "release":
                self._known.pop(instruction.attr("base"), None)
        carried = loads(dumps(batch))
        for base in batch.donated:
            # Data given away stays the very array the program wrote (the wire carries no
            # ownership): a view of it taken before the flush (a settled write whose value
            # completes a hold) must write what the component holds.
            if not np.array_equal(carried.data[base], batch.data[base], equal_nan=True):
                raise BytecodeError(f"the wire format changed the data of base {base}")
            carried.data[base] = batch.data[base]
        carried.donated = set(batch.donated)
        return carried
