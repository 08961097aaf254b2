"""Recording an element-wise call whose signature was remembered (``shoal.numpy._fast_ufunc``):
one output, no attributes, the element counts and the warning site found by the caller, so the
runtime does only the bookkeeping every instruction needs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shoal import fp_warnings
from shoal.array_sizes import below
from shoal.bytecode import View
from shoal.frozen_values import new_instruction
from shoal.settled_memory import PRODUCT_READ_FACTOR

if TYPE_CHECKING:
    from shoal.runtime import Runtime


class CallRecording:
    """:meth:`record_call` of :class:`~shoal.runtime.Runtime` (``record_new`` there declares the
    result's base under the same lock)."""

    def record_call(self: Runtime, op: str, output: View, inputs: tuple, output_size: int, largest_input: int, site: fp_warnings.Site | None) -> None:
        """:meth:`record` for an element-wise call recorded from a remembered signature
        (``shoal.numpy._fast_ufunc``): one output, no attributes, the element counts and the
        warning site found by the caller."""
        with self._lock:
            self._record_call(op, output, inputs, output_size, largest_input, site)

    def _record_call(self: Runtime, op: str, output: View, inputs: tuple, output_size: int, largest_input: int, site: fp_warnings.Site | None) -> None:
        """:meth:`record_call` with the lock held."""
        if self._released or self._dropped:
            self._record_releases()
        if self._dead_bytes >= self.flush_bytes:
            self.flush()
        self.direct_run = 0
        outputs = (output,)
        kept = self._unhold(outputs, inputs) if self.held else ()
        deferred = self._deferred
        if deferred:
            if output.base in deferred:
                self._declare_deferred(output.base)
            for value in inputs:
                if type(value) is View and value.base in deferred:
                    self._declare_deferred(value.base)
        instructions = self._pending.instructions
        instructions.append(new_instruction(op, outputs, inputs))
        self._written.add(output.base)
        read = self._read
        for value in inputs:
            if type(value) is View:
                read.add(value.base)
        limit = self.settled_threshold
        small = below(output_size, output.dtype.itemsize, limit) and largest_input <= PRODUCT_READ_FACTOR * limit
        self._small_run = self._small_run + 1 if small else 0
        self._recorded(instructions, site, kept)

    def _recorded(self: Runtime, instructions: list, site: fp_warnings.Site | None, kept: object) -> None:
        """After an instruction was appended (lock held): its warning site, the arrays carried
        for it dropped, the batch run at once if NumPy views of a held base it touches are alive
        (``kept``), or at the flush threshold."""
        if site is not None:
            self._sites[len(instructions) - 1] = site
        if self._carried:
            self._carried.clear()
        if kept:  # NumPy views of a held base see the work now, as NumPy would have done it
            self.flush(wait=True)
            if self._taken_back:
                self._resync_taken_back(kept)  # shoal.local_loops
        if len(instructions) >= self.flush_threshold and self._boundary.due(instructions, self.flush_threshold):
            self.flush()
