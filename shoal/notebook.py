"""``%load_ext shoal`` in IPython and Jupyter: later ``import numpy`` in the notebook's cells (and
in modules next to the notebook) gives :mod:`shoal.numpy`, as ``python -m shoal app.py`` does for a
program; libraries keep real NumPy. ``%unload_ext shoal`` restores plain imports; names bound
before either stay as they are.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shoal.runner import ImportRedirect


@dataclass
class NotebookRedirect(ImportRedirect):
    """The runner's import redirect, which also counts the notebook's namespace as user code."""

    namespace: Mapping[str, object] = field(default_factory=dict)

    def is_user_module(self, module_globals: Mapping[str, object] | None) -> bool:
        if module_globals is self.namespace:
            return True
        return super().is_user_module(module_globals)


def load(shell: Any) -> None:
    """Install the redirect for ``shell`` (an IPython ``InteractiveShell``); idempotent."""
    current = builtins.__import__
    if isinstance(current, NotebookRedirect):
        return
    builtins.__import__ = NotebookRedirect(
        Path(os.path.realpath(os.getcwd())), original_import=current, namespace=shell.user_ns
    )


def unload(shell: Any) -> None:
    """Remove the redirect, flushing the work the notebook recorded."""
    current = builtins.__import__
    if isinstance(current, NotebookRedirect):
        builtins.__import__ = current.original_import
    import shoal

    shoal.flush()
