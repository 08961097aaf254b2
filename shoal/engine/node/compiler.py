"""Compiled kernels, keyed by structure, cached on disk, compiled in the background when hot.

Generated source is written to ``$SHOAL_CACHE_DIR`` (default ``~/.cache/shoal/kernels``) as one
module per kernel structure, named by a hash of that structure, and imported from there, so
Numba's own ``cache=True`` keeps the machine code between runs. Until a kernel is ready the
engine runs the NumPy tile path: a short program never waits for a compiler.

Compiling costs far more than most short programs run (0.3 s to several seconds per kernel,
while holding the interpreter lock), so in background mode a kernel is compiled only once the
NumPy path has spent about as much CPU time on its structure as compiling would take (the ski-rental
rule: never worse than twice the better choice). A kernel already in the disk cache only has to
pay for importing Numba, once.
"""

from __future__ import annotations

import enum
import hashlib
import importlib.util
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from shoal.engine.node.codegen import generate
from shoal.engine.node.compile_worker import load_and_warm
from shoal.engine.node.program import ARRAY, CONST, KernelProgram

# Numba is optional: without it every kernel runs on the NumPy tile path. It is imported only
# when a kernel is compiled or loaded (0.2-0.5 s), not by every program that imports Shoal.
HAVE_NUMBA = importlib.util.find_spec("numba") is not None


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


COMPILE_SECONDS_FIXED = 1.0
COMPILE_SECONDS_PER_STEP = 0.1
LOAD_SECONDS = 0.3
LOAD_SECONDS_PER_KERNEL = 0.05


def estimated_compile_seconds(program: KernelProgram) -> float:
    """CPU time compiling ``program`` costs: starting the worker and importing Numba (about a
    second), then 0.6 s for 6 steps to 6 s for 48 (measured), on one of the machine's cores."""
    return COMPILE_SECONDS_FIXED + COMPILE_SECONDS_PER_STEP * (len(program.steps) + 1)


def estimated_load_seconds() -> float:
    """CPU time loading a kernel from the disk cache costs: importing Numba (once, 0.15-0.3 s
    measured) and reading and linking the kernel (about 45 ms each, measured)."""
    imported = "numba.core.dispatcher" in sys.modules
    return (0.0 if imported else LOAD_SECONDS) + LOAD_SECONDS_PER_KERNEL


def machine_code_cached(key: str) -> bool:
    """True if Numba's disk cache holds the compiled kernel ``key`` (not just its source: a
    compile cut short when a program exits leaves the source behind without machine code)."""
    name = f"shoal_kernel_{key}"
    return any((cache_dir() / "__pycache__").glob(f"{name}.{name}-*.nbi"))


def kernel_key(structure: tuple) -> str:
    return hashlib.sha256(repr(structure).encode()).hexdigest()[:24]


class KernelCache:
    """Kernels by structure hash: ready ones, ones being compiled, ones that failed."""

    def __init__(self, mode: CompileMode, threads: int = 1) -> None:
        self.mode = mode if HAVE_NUMBA else CompileMode.OFF
        self.threads = threads  # pool threads whose NumPy time ``note_numpy_time`` sums
        self._ready: dict[str, Callable[..., Any]] = {}
        self._failed: set[str] = set()
        self._pending: set[str] = set()
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[tuple[str, str, tuple] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._worker: subprocess.Popen[str] | None = None
        self._closed = False
        self._numpy_seconds: dict[str, float] = {}
        self.compiled = 0
        self.errors: list[str] = []

    def lookup(self, program: KernelProgram) -> Callable[..., Any] | None:
        """The compiled kernel for ``program`` if ready; may start compiling or loading it.

        Sync mode compiles now; background mode waits for :meth:`note_numpy_time` to show that
        the structure is hot enough to pay for loading (disk-cached) or compiling it.
        """
        if self.mode is CompileMode.OFF:
            return None
        key = kernel_key(program.structure())
        kernel = self._ready.get(key)
        if kernel is not None or key in self._failed:
            return kernel
        if self.mode is CompileMode.SYNC:
            self._compile(key, generate(program, f"shoal_kernel_{key}"), in_process=True)
            return self._ready.get(key)
        return None

    def note_numpy_time(self, key: str, program: KernelProgram, seconds: float) -> None:
        """Count time the NumPy path spent on ``key``; compile once it exceeds the compile cost."""
        if self.mode is not CompileMode.BACKGROUND:
            return
        with self._lock:
            spent = self._numpy_seconds.get(key, 0.0) + seconds
            self._numpy_seconds[key] = spent
        compile_seconds = estimated_compile_seconds(program)
        # Loading runs in this process and holds the GIL, so every pool thread waits for it:
        # in the units of ``spent`` (NumPy seconds summed over threads) it costs ``threads`` times.
        load_seconds = estimated_load_seconds() * self.threads
        if spent < min(load_seconds, compile_seconds) or key in self._pending or key in self._ready:
            return  # not hot enough even to load it: no need to look at the disk cache
        if spent >= compile_seconds or machine_code_cached(key):
            self._submit(key, program)

    def _submit(self, key: str, program: KernelProgram) -> None:
        with self._lock:
            if key in self._pending or key in self._ready or key in self._failed:
                return
            self._pending.add(key)
        self._queue.put((key, generate(program, f"shoal_kernel_{key}")))
        self._start()

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
            key, source = item
            self._compile(key, source, in_process=False)
            with self._lock:
                self._pending.discard(key)

    def _compile(self, key: str, source: str, in_process: bool) -> None:
        """Write the module, have the worker process compile it, then load it from the cache."""
        name = f"shoal_kernel_{key}"
        try:
            directory = cache_dir()
            directory.mkdir(parents=True, exist_ok=True)
            path = directory / f"{name}.py"
            if not path.exists() or path.read_text() != source:
                temporary = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
                temporary.write_text(source)
                os.replace(temporary, path)
            if not in_process and not machine_code_cached(key):
                self._compile_elsewhere(path)
            module = load_and_warm(path)  # a cache hit when the worker has compiled it
            self._ready[key] = getattr(module, name)
            self.compiled += 1
        except Exception as error:  # a kernel that will not compile runs on NumPy instead
            self._failed.add(key)
            self.errors.append(f"{key}: {type(error).__name__}: {error}")
            sys.modules.pop(name, None)

    def _compile_elsewhere(self, path: Path) -> None:
        """Compile in the worker process (started on first use); fall back to this one."""
        if self._closed:
            raise RuntimeError("the engine is shutting down")
        if self._worker is None or self._worker.poll() is not None:
            try:
                self._worker = subprocess.Popen(
                    [sys.executable, "-c", "from shoal.engine.node.compile_worker import main; main()"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                    bufsize=1,
                )
            except OSError:
                self._worker = None
                return
        assert self._worker.stdin is not None and self._worker.stdout is not None
        try:
            self._worker.stdin.write(f"{path}\n")
            self._worker.stdin.flush()
            answer = self._worker.stdout.readline().strip()
        except OSError:
            return
        if not answer:
            raise RuntimeError("the compile worker exited")
        if answer.startswith("error"):
            raise RuntimeError(answer[len("error ") :])

    def close(self) -> None:
        self._closed = True
        self._close_worker()

    def _close_worker(self) -> None:
        """Stop the compile thread and the worker process (an unfinished compile is dropped)."""
        worker = self._worker
        if worker is not None:
            worker.kill()  # a compile thread waiting on it reads end-of-file and gives up
            worker.wait()
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout=30)
            self._thread = None
        if worker is not None:
            for stream in (worker.stdin, worker.stdout):
                if stream is not None:
                    stream.close()
            self._worker = None


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
