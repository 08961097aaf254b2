"""A separate process that compiles kernel modules so compiling never holds the engine's GIL.

It reads one module path per line on stdin, imports the module and calls its ``_warmup()``
(which compiles the kernel and stores the machine code in Numba's disk cache), writes the kernel
as a shared library next to it where it can (``native.py``), and answers one line: ``ok
<seconds>``, the CPU time it has used so far (its own and its linker's, start-up included), or
``error <message>``. It exits when stdin closes, so it cannot outlive the
process that started it.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from pathlib import Path

from shoal.engine.node.native import build, library_path


def load_and_warm(path: Path) -> object:
    """Import the kernel module at ``path`` under its own name and compile (or load) it."""
    name = path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load kernel module {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # Numba's disk cache re-imports the module by name
    try:
        spec.loader.exec_module(module)
        module._warmup()
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def cpu_seconds() -> float:
    """CPU time of this process and of the children it waited for (the linker)."""
    children = os.times()
    return time.process_time() + children.children_user + children.children_system


def main() -> None:
    for line in sys.stdin:
        path = Path(line.strip())
        try:
            module = load_and_warm(path)
            build(module, path.stem, library_path(path.parent, path.stem))
        except Exception as error:
            message = f"{type(error).__name__}: {error}".replace("\n", " ")
            print(f"error {message}", flush=True)
        else:
            print(f"ok {cpu_seconds():.6f}", flush=True)


if __name__ == "__main__":
    main()
