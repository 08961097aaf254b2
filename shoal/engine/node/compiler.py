"""Compiled kernels, keyed by structure, cached on disk, compiled in the background.

Generated source is written to ``$SHOAL_CACHE_DIR`` (default ``~/.cache/shoal/kernels``) as one
module per kernel structure, named by a hash of that structure, and imported from there, so
Numba's own ``cache=True`` keeps the machine code between runs. Until a kernel is ready the
engine runs the NumPy tile path: a short program never waits for a compiler.
"""

from __future__ import annotations

import enum
import hashlib
import importlib.util
import os
import queue
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from shoal.engine.node.codegen import generate
from shoal.engine.node.program import ARRAY, CONST, KernelProgram

try:  # Numba is optional: without it every kernel runs on the NumPy tile path
    import numba  # noqa: F401

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - depends on the environment
    HAVE_NUMBA = False


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


def cache_dir() -> Path:
    """Where generated kernel modules (and Numba's machine code next to them) are kept."""
    configured = os.environ.get("SHOAL_CACHE_DIR")
    root = Path(configured) if configured else Path.home() / ".cache" / "shoal"
    return root / "kernels"


def kernel_key(structure: tuple) -> str:
    return hashlib.sha256(repr(structure).encode()).hexdigest()[:24]


class KernelCache:
    """Kernels by structure hash: ready ones, ones being compiled, ones that failed."""

    def __init__(self, mode: CompileMode) -> None:
        self.mode = mode if HAVE_NUMBA else CompileMode.OFF
        self._ready: dict[str, Callable[..., Any]] = {}
        self._failed: set[str] = set()
        self._pending: set[str] = set()
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[tuple[str, str, tuple] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self.compiled = 0
        self.errors: list[str] = []

    def lookup(self, program: KernelProgram) -> Callable[..., Any] | None:
        """The compiled kernel for ``program``, or None (and compilation starts) if not ready."""
        if self.mode is CompileMode.OFF:
            return None
        structure = program.structure()
        key = kernel_key(structure)
        kernel = self._ready.get(key)
        if kernel is not None or key in self._failed:
            return kernel
        source_name = f"shoal_kernel_{key}"
        if self.mode is CompileMode.SYNC:
            self._compile(key, generate(program, source_name), _dummy_args(program))
            return self._ready.get(key)
        with self._lock:
            if key in self._pending:
                return None
            self._pending.add(key)
        self._queue.put((key, generate(program, source_name), _dummy_args(program)))
        self._start()
        return None

    def ready(self, key: str) -> Callable[..., Any] | None:
        """The compiled kernel with structure hash ``key`` if it is ready."""
        return self._ready.get(key)

    def wait(self) -> None:
        """Block until every queued kernel is compiled (for tests and steady-state timing)."""
        while True:
            with self._lock:
                if not self._pending:
                    return
            threading.Event().wait(0.01)

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="shoal-compiler", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            key, source, args = item
            self._compile(key, source, args)
            with self._lock:
                self._pending.discard(key)

    def _compile(self, key: str, source: str, args: tuple) -> None:
        name = f"shoal_kernel_{key}"
        try:
            directory = cache_dir()
            directory.mkdir(parents=True, exist_ok=True)
            path = directory / f"{name}.py"
            if not path.exists() or path.read_text() != source:
                temporary = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
                temporary.write_text(source)
                os.replace(temporary, path)
            module_spec = importlib.util.spec_from_file_location(name, path)
            assert module_spec is not None and module_spec.loader is not None
            module = importlib.util.module_from_spec(module_spec)
            module_spec.loader.exec_module(module)
            kernel = getattr(module, name)
            kernel(*args)  # compile (or load from Numba's cache) for these argument types
            self._ready[key] = kernel
            self.compiled += 1
        except Exception as error:  # a kernel that will not compile runs on NumPy instead
            self._failed.add(key)
            self.errors.append(f"{key}: {type(error).__name__}: {error}")
            sys.modules.pop(name, None)

    def close(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout=60)
            self._thread = None


def _dummy_args(program: KernelProgram) -> tuple:
    """Arguments of the kernel's types that run zero iterations."""
    part = program.partition
    ndim = len(part.shape) - part.axis
    args: list[Any] = [0] * ndim
    for slot in program.slots:
        if slot.kind == ARRAY:
            args += [np.zeros(1, slot.dtype), 0] + [0] * ndim
        elif slot.kind == CONST:
            args.append(slot.dtype.type(0))
    return tuple(args)


def kernel_args(program: KernelProgram, index: int, typed_of: Callable[[int, np.dtype], np.ndarray]) -> list[Any]:
    """The compiled kernel's arguments for view-block ``index``."""
    part = program.partition
    axis = part.axis
    args: list[Any] = list(part.block_shape(index))
    for slot in program.slots:
        if slot.kind == ARRAY:
            itemsize = slot.dtype.itemsize
            args.append(typed_of(slot.base, slot.dtype))
            args.append(part.block_offset(index, slot.offset, slot.strides) // itemsize)
            args.extend(s // itemsize for s in slot.strides[axis:])
        elif slot.kind == CONST:
            args.append(slot.dtype.type(slot.value))
    return args


def typed_buffer(raw: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The bytes of a base as a 1-D array of ``dtype`` (trailing bytes that do not fit dropped)."""
    usable = raw.size - raw.size % dtype.itemsize
    return raw[:usable].view(dtype)
