"""When the node engine compiles its kernels (``SHOAL_COMPILE``).

Kept apart from ``compiler`` so the engine can check the setting when it starts without loading
the kernel generator and compiler (about 5 MiB of resident memory that a program whose batches
all run directly never needs).
"""

from __future__ import annotations

import enum


class CompileMode(enum.Enum):
    OFF = "off"  # never compile
    BACKGROUND = "background"  # compile on a background thread, NumPy until ready
    SYNC = "sync"  # compile before first use (tests, benchmarks of steady state)

    @classmethod
    def parse(cls, text: str) -> CompileMode:
        try:
            return cls(text.strip().lower())
        except ValueError:
            known = ", ".join(m.value for m in cls)
            raise ValueError(f"SHOAL_COMPILE must be one of {known}, got {text!r}") from None
