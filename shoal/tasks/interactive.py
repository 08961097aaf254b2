"""Tasks defined interactively (``python -c``, standard input, a notebook, the REPL).

Workers import a task's function by module and name. That fails for functions of an
interactive ``__main__``, which no worker can import: those are sent by value instead,
pickled with cloudpickle (with the interactive helpers and classes they use), once per
worker. Functions of modules, and of a main script workers can load, go by reference.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
from collections.abc import Callable, Iterator


def main_script() -> str | None:
    """The path of the main script if workers can load it (None when interactive)."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    return path if isinstance(path, str) and os.path.isfile(path) else None


def defined_interactively(function: Callable[..., object]) -> bool:
    """Whether ``function`` lives in a ``__main__`` that workers cannot import."""
    if getattr(function, "__module__", None) != "__main__":
        return False
    main = sys.modules.get("__main__")
    return main_script() is None or getattr(function, "__globals__", None) is not vars(main)


def by_value(function: Callable[..., object]) -> tuple[str, bytes]:
    """The function pickled by value, and a short digest naming that pickle."""
    import cloudpickle

    payload = cloudpickle.dumps(function, protocol=5)
    return hashlib.blake2b(payload, digest_size=8).hexdigest(), payload


@contextlib.contextmanager
def unloadable_main_hidden() -> Iterator[None]:
    """While a worker starts, hide a ``__main__.__file__`` that names no file (``<stdin>``):
    multiprocessing would have the new process run it as the main script, and fail."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if path is None or main_script() is not None or getattr(main, "__spec__", None) is not None:
        yield
        return
    del main.__file__  # type: ignore[union-attr]
    try:
        yield
    finally:
        main.__file__ = path  # type: ignore[union-attr]
