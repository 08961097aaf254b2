"""Files in the kernel cache, written so that a concurrent reader sees the old or the new text."""

from __future__ import annotations

import os
import threading
from pathlib import Path


def write_text_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file renamed over it; raises ``OSError``
    (and leaves no temporary file) where it cannot be written."""
    temporary = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        temporary.write_text(text)
        os.replace(temporary, path)
    except OSError:
        temporary.unlink(missing_ok=True)
        raise
