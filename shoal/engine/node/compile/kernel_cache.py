"""Compiled kernels, keyed by structure, cached on disk, compiled in the background when hot.

Generated source is written to ``$SHOAL_CACHE_DIR`` (default ``~/.cache/shoal/kernels``) as one
module per kernel structure, named by a hash of that structure, and imported from there, so
Numba's own ``cache=True`` keeps the machine code between runs; the compile worker also writes
each kernel as a shared library that later runs load with ``ctypes`` (``native.py``). Until a
kernel is ready the engine runs the NumPy tile path: a short program never waits for a compiler.

Compiling costs far more than most short programs run (0.15 s to several seconds per kernel,
while holding the interpreter lock), so in background mode a kernel is compiled only once the
NumPy path has spent, or the batches built so far will spend, about as much CPU time on its
structure as compiling would take (the ski-rental rule: never worse than twice the better
choice). What compiling costs is measured in the worker and remembered (``costs.py``).
A kernel with a shared library on disk loads in under a millisecond and is used from the first
block of any batch that would spend more than that, or from the block after the NumPy path has
actually spent that much on its structure (the estimate misses view-blocks whose NumPy calls
cost more than their elements: a rank's shallow water ran such a kernel on NumPy every run); one
only in Numba's cache pays for importing Numba, once.

The cache directory is used only if no other user could have written in it (``cache_files.py``);
otherwise the run warns once and compiles its kernels in memory, in this process, caching nothing.

Closing does not wait for the compiler: the kernel being compiled and the queued ones (up to
:data:`DETACHED_WORK_SECONDS` of estimated compile time) are handed to the worker, which finishes
them after the program has exited and then exits itself (``process.py``), at the latest
after its time limit. ``SHOAL_COMPILE_EXIT=wait`` waits for it instead, ``kill`` drops the work.
"""

from __future__ import annotations

import enum
import functools
import importlib.util
import queue
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from shoal import trace
from shoal.engine.node.codegen.kernel_source import generate
from shoal.engine.node.compile import costs as compile_costs
from shoal.engine.node.compile import native
from shoal.engine.node.compile.cache_files import (
    read_text,
    verified_directory,
    write_text_atomically,
)
from shoal.engine.node.compile.claims import remove_stale
from shoal.engine.node.compile.process import CompileProcess, ExitMode, Job
from shoal.engine.node.compile.worker import load_and_warm, load_in_memory
from shoal.engine.node.lower.program import KernelProgram
from shoal.settings import CACHE_DIR, choice_setting

# Numba is optional: without it every kernel runs on the NumPy tile path. It is imported only
# when a kernel is compiled or loaded (0.2-0.5 s), not by every program that imports Shoal.
HAVE_NUMBA = importlib.util.find_spec("numba") is not None


class CompileMode(enum.Enum):
    OFF = "off"  # never compile
    BACKGROUND = "background"  # compile on a background thread, NumPy until ready
    SYNC = "sync"  # compile before first use (tests, benchmarks of steady state)

    @classmethod
    def parse(cls, text: str) -> CompileMode:
        return choice_setting(cls, "SHOAL_COMPILE", text)


def cache_dir() -> Path:
    """Where generated kernel modules (and Numba's machine code next to them) are kept."""
    configured = CACHE_DIR.value()
    root = Path(configured) if configured else Path.home() / ".cache" / "shoal"
    return root / "kernels"


def kernel_directory() -> Path | None:
    """:func:`cache_dir`, created, if no other user could have written in it; else None (the
    first time with a warning): kernels are then compiled in memory and nothing is cached."""
    return verified_directory(cache_dir())


LOAD_SECONDS = 0.3
LOAD_SECONDS_PER_KERNEL = 0.05
NATIVE_LOAD_SECONDS = 0.001  # a kernel's shared library, checked and hashed: 0.15-0.6 ms measured
NUMPY_SECONDS_PER_ELEMENT_STEP = 0.5e-9  # tile path, one core; measured 0.7-1.0 ns (black_scholes)
HEAT_MIN_SECONDS = 0.01  # a run's NumPy time on a structure below this is not written down
DETACHED_WORK_SECONDS = 30.0  # estimated compile time of queued kernels a detached worker gets
DETACHED_GRACE_SECONDS = 60.0  # a detached worker exits at the latest after this
DETACHED_LIMIT_FACTOR = 4.0  # ... plus this times the estimated compile time of its work
DETACHED_LIMIT_SECONDS = 600.0  # ... but never later than this


class HandedOver(Exception):
    """The engine closed while the kernel was with the worker, which finishes it alone."""


def estimated_compile_seconds(program: KernelProgram, costs: compile_costs.CompileCosts, worker_running: bool) -> float:
    """CPU time compiling ``program`` costs on one of the machine's cores, starting the compile
    worker (Python and Numba) first unless it is running (``costs.py``); a kernel
    running several sweeps per pass has its steps once per sweep."""
    return costs.seconds(len(program.steps) * program.sweeps + len(program.reductions), program.stores_rows, worker_running)


def estimated_load_seconds() -> float:
    """CPU time loading a kernel from Numba's disk cache costs: importing Numba (once, 0.15-0.3 s
    measured) and reading and linking the kernel (about 45 ms each, measured). A kernel with a
    shared library costs :data:`NATIVE_LOAD_SECONDS` instead."""
    imported = "numba.core.dispatcher" in sys.modules
    return (0.0 if imported else LOAD_SECONDS) + LOAD_SECONDS_PER_KERNEL


def estimated_numpy_seconds(program: KernelProgram) -> float:
    """CPU time the NumPy tile path will spend on all of ``program``'s view-blocks."""
    return program.elements * max(1, len(program.steps) + len(program.reductions)) * NUMPY_SECONDS_PER_ELEMENT_STEP


def heat_path(directory: Path, key: str) -> Path:
    """Where the NumPy time that earlier runs spent on kernel ``key`` is written down."""
    return directory / f"shoal_kernel_{key}.heat"


def past_numpy_seconds(key: str) -> float:
    """NumPy time earlier runs spent on structure ``key`` without its kernel (0 if none)."""
    directory = kernel_directory()
    text = None if directory is None else read_text(heat_path(directory, key))
    try:
        return 0.0 if text is None else max(0.0, float(text))
    except ValueError:
        return 0.0


def native_library(directory: Path, key: str) -> Path:
    """Where kernel ``key``'s shared library is kept (see ``native.py``)."""
    return native.library_path(directory, f"shoal_kernel_{key}")


def machine_code_cached(key: str) -> bool:
    """True if kernel ``key``'s machine code is on disk: its shared library or Numba's cache
    (not just its source: a compile cut short when a program exits leaves the source behind)."""
    directory = kernel_directory()
    if directory is None:
        return False
    if native.available(native_library(directory, key)):
        return True
    name = f"shoal_kernel_{key}"
    return any((directory / "__pycache__").glob(f"{name}.{name}-*.nbi"))


@functools.cache
def generator_stamp() -> str:
    """A digest of the code that writes kernels or is inlined into them. Numba's disk cache
    checks only the kernel module's own file, so the stamp is part of every kernel's key: a
    kernel cached by an older generator is never loaded."""
    import hashlib  # here, not at import: OpenSSL costs 3 MiB RSS that direct-only programs never need

    digest = hashlib.sha256()
    codegen = Path(__file__).parent.parent / "codegen"
    for path in sorted(codegen.glob("*.py")):
        try:
            digest.update(path.name.encode() + path.read_bytes())
        except OSError:
            digest.update(path.name.encode())
    return digest.hexdigest()[:16]


def write_module(directory: Path, key: str, source: str) -> Path:
    """The kernel module of ``key`` in ``directory``, written unless it already holds ``source``
    (and is this user's)."""
    path = directory / f"shoal_kernel_{key}.py"
    if read_text(path) != source:
        write_text_atomically(path, source)
    return path


def kernel_key(structure: tuple) -> str:
    import hashlib

    return hashlib.sha256(f"{generator_stamp()}{structure!r}".encode()).hexdigest()[:24]


class KernelCache:
    """Kernels by structure hash: ready ones, ones being compiled, ones that failed."""

    def __init__(self, mode: CompileMode, threads: int = 1, exit_mode: ExitMode = ExitMode.DETACH) -> None:
        self.mode = mode if HAVE_NUMBA else CompileMode.OFF
        self.exit_mode = exit_mode
        self.threads = threads  # pool threads whose NumPy time ``note_numpy_time`` sums
        self._ready: dict[str, Callable[..., Any]] = {}
        self._failed: set[str] = set()
        self._pending: set[str] = set()
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[tuple[str, str, int, bool] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._process: CompileProcess | None = None
        self._closed = False
        self._numpy_seconds: dict[str, float] = {}  # spent on the NumPy path
        self._foreseen_seconds: dict[str, float] = {}  # what every block built so far would take
        self._not_on_disk: set[str] = set()
        self._no_library: set[str] = set()
        self._past_seconds: dict[str, float] = {}  # earlier runs' NumPy time, read once per key
        self._costs: compile_costs.CompileCosts | None = None  # read from the cache on first use
        self._costs_measured = False
        self._worker_cpu_seconds = 0.0  # the CPU time the worker reported last
        self._compiling_seconds = 0.0  # estimated compile time of the kernel being compiled
        self.compiled = 0
        self.errors: list[str] = []

    def lookup(self, program: KernelProgram, key: str | None = None) -> Callable[..., Any] | None:
        """The compiled kernel for ``program`` (``key``: its kernel key, if known) if ready; may
        start compiling or loading it.

        Sync mode compiles now. Background mode counts the NumPy time the program's view-blocks
        would take: a structure whose blocks in this batch (with what it ran before) outweigh
        loading its disk-cached kernel is loaded now, before its first block runs, and one that
        outweighs compiling is queued for the compiler. Otherwise :meth:`note_numpy_time` decides
        later, from time actually spent.
        """
        if self.mode is CompileMode.OFF:
            return None
        key = key or kernel_key(program.structure())
        kernel = self._ready.get(key)
        if kernel is not None or key in self._failed:
            return kernel
        directory = kernel_directory()  # here first: a refused cache warns in the planning thread
        if self.mode is CompileMode.SYNC:
            self._compile(key, generate(program, f"shoal_kernel_{key}"), in_process=True)
            return self._ready.get(key)
        with self._lock:
            foreseen = self._foreseen_seconds.get(key, 0.0) + estimated_numpy_seconds(program)
            self._foreseen_seconds[key] = foreseen
            worth = max(foreseen, self._numpy_seconds.get(key, 0.0))
            pending = key in self._pending
        if pending or worth < NATIVE_LOAD_SECONDS:
            return None
        if self._load_library(key, directory):
            return self._ready[key]
        compile_seconds = self._compile_seconds(program)
        if worth >= min(estimated_load_seconds(), compile_seconds) and key not in self._not_on_disk:
            if machine_code_cached(key):
                self._compile(key, generate(program, f"shoal_kernel_{key}"), in_process=True)
                return self._ready.get(key)
            self._not_on_disk.add(key)
        if worth + self._past(key) >= compile_seconds:
            self._submit(key, program)  # earlier runs count: each was too short to pay alone
        return None

    def note_numpy_time(self, key: str, program: KernelProgram, seconds: float) -> None:
        """Count time the NumPy path spent on ``key``; compile once it exceeds the compile cost."""
        if self.mode is not CompileMode.BACKGROUND:
            return
        with self._lock:
            spent = self._numpy_seconds.get(key, 0.0) + seconds
            self._numpy_seconds[key] = spent
        if spent >= NATIVE_LOAD_SECONDS * self.threads and self._load_library(key):
            return  # the NumPy path took longer than estimated: its library, on disk, serves from now on
        spent += self._past_seconds.get(key, 0.0)
        compile_seconds = self._compile_seconds(program)
        # Loading runs in this process and holds the GIL, so every pool thread waits for it:
        # in the units of ``spent`` (NumPy seconds summed over threads) it costs ``threads`` times.
        load_seconds = estimated_load_seconds() * self.threads
        if spent < min(load_seconds, compile_seconds) or key in self._pending or key in self._ready:
            return  # not hot enough even to load it: no need to look at the disk cache
        if spent >= compile_seconds or machine_code_cached(key):
            self._submit(key, program)

    def _load_library(self, key: str, directory: Path | None = None) -> bool:
        """Load kernel ``key``'s shared library if one is on disk (looked for once); True if the
        kernel is ready."""
        if key in self._ready:
            return True
        if key in self._no_library:
            return False
        directory = directory or kernel_directory()
        if directory is None:
            return False
        kernel = native.load(native_library(directory, key))
        if kernel is None:
            self._no_library.add(key)
            return False
        self._ready[key] = kernel
        return True

    def _past(self, key: str) -> float:
        if key not in self._past_seconds:
            self._past_seconds[key] = past_numpy_seconds(key)
        return self._past_seconds[key]

    def _compile_costs(self) -> compile_costs.CompileCosts:
        """The compile-cost estimate, read from the cache on first use."""
        if self._costs is None:
            directory = kernel_directory()
            self._costs = compile_costs.CompileCosts() if directory is None else compile_costs.load(directory)
        return self._costs

    def _compile_seconds(self, program: KernelProgram) -> float:
        return estimated_compile_seconds(program, self._compile_costs(), worker_running=self._thread is not None)

    def _submit(self, key: str, program: KernelProgram) -> None:
        with self._lock:
            if key in self._pending or key in self._ready or key in self._failed:
                return
            self._pending.add(key)
        steps = len(program.steps) + len(program.reductions)
        self._queue.put((key, generate(program, f"shoal_kernel_{key}"), steps, program.stores_rows))
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
        if self._thread is None and not self._closed:
            self._process = CompileProcess()
            self._thread = threading.Thread(target=self._loop, name="shoal-compiler", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            key, source, steps, ring = item
            costs = self._compile_costs()
            worker_running = self._process is not None and self._process.running
            self._compiling_seconds = costs.seconds(steps, ring, worker_running)
            self._compile(key, source, in_process=False, size=(steps, ring))
            self._compiling_seconds = 0.0
            with self._lock:
                self._pending.discard(key)

    def _compile(self, key: str, source: str, in_process: bool, size: tuple[int, bool] = (0, False)) -> None:
        """Write the module, have the worker process compile it, then load it: as a shared
        library where there is one, else from Numba's cache (writing the library for next time)."""
        name = f"shoal_kernel_{key}"
        directory = kernel_directory()
        tracer, began = trace.TRACER, time.perf_counter()
        try:
            if directory is None:
                kernel: Callable[..., Any] | None = getattr(load_in_memory(name, source), name)
            else:
                kernel = self._compile_cached(directory, key, source, in_process, size)
            self._ready[key] = kernel
            self.compiled += 1
            if tracer is not None:
                tracer.complete(f"compile {key}", "compile", began, time.perf_counter(), {"in_process": in_process})
        except HandedOver:
            return
        except Exception as error:  # a kernel that will not compile runs on NumPy instead
            self._failed.add(key)
            self.errors.append(f"{key}: {type(error).__name__}: {error}")
            if tracer is not None:
                tracer.complete(f"compile {key} (failed)", "compile", began, time.perf_counter())
            sys.modules.pop(name, None)

    def _compile_cached(self, directory: Path, key: str, source: str, in_process: bool, size: tuple[int, bool]) -> Callable[..., Any]:
        name = f"shoal_kernel_{key}"
        library = native_library(directory, key)
        kernel: Callable[..., Any] | None = native.load(library)
        if kernel is None:
            path = write_module(directory, key, source)
            if not in_process and not machine_code_cached(key):
                self._compile_elsewhere(path, *size)  # writes the library too where it can
            kernel = native.load(library)
        if kernel is None:
            module = load_and_warm(path)  # a cache hit when the worker has compiled it
            kernel = getattr(module, name)
            native.build(module, name, library)
        return kernel

    def _compile_elsewhere(self, path: Path, steps: int, ring: bool) -> None:
        """Compile in the worker process (started on first use); fall back to this one. The CPU
        time the worker reports is folded into the compile-cost estimate."""
        process = self._process
        if process is None:
            raise HandedOver
        try:
            answer, started = process.request(Job(path, steps, ring))
        except OSError:
            return  # no worker process: compiled here instead
        if answer is None:
            raise HandedOver
        if started:
            self._worker_cpu_seconds = 0.0
        if not answer:
            raise RuntimeError("the compile worker exited")
        if answer.startswith("error"):
            raise RuntimeError(answer[len("error ") :])
        self._learn_cost(answer, steps, ring, started)

    def _learn_cost(self, answer: str, steps: int, ring: bool, started_worker: bool) -> None:
        words = answer.split()
        try:
            total = float(words[1])
        except (IndexError, ValueError):
            return
        measured, self._worker_cpu_seconds = total - self._worker_cpu_seconds, total
        if words[2:] == ["cached"]:
            return  # another compiler compiled it: nothing learned about compiling
        self._compile_costs().learn(steps, ring, measured, started_worker)
        self._costs_measured = True

    def close(self) -> None:
        self._close_worker()
        self._write_heat()

    def _write_heat(self) -> None:
        """Add this run's NumPy time per structure without a kernel to what earlier runs spent,
        so that a program too short to pay for compiling gets its kernels after a few runs."""
        with self._lock:
            keys = set(self._foreseen_seconds) | set(self._numpy_seconds)
            worth = {key: max(self._foreseen_seconds.get(key, 0.0), self._numpy_seconds.get(key, 0.0)) for key in keys}
        directory = kernel_directory() if worth else None
        for key, seconds in worth.items():
            if directory is None:
                return
            if key in self._ready or key in self._failed or seconds < HEAT_MIN_SECONDS:
                continue
            past = self._past_seconds[key] if key in self._past_seconds else past_numpy_seconds(key)
            total = past + seconds
            try:
                write_text_atomically(heat_path(directory, key), f"{total!r}\n")
            except OSError:
                return  # an unwritable cache only costs the memory across runs

    def _close_worker(self) -> None:
        """Stop the compile thread and let go of the worker process. The kernel being compiled
        and the queued ones (in queue order, up to :data:`DETACHED_WORK_SECONDS` of estimated
        compile time) are handed to the worker, which finishes them after this process has gone
        on or exited and then exits by itself; a kernel killed at exit would start from scratch
        in the next run, and waiting for it held short programs up to 10 s at exit."""
        queued: list[tuple[str, str, int, bool]] = []
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                queued.append(item)
        self._closed = True
        process = self._process
        if self._thread is not None:
            self._queue.put(None)
            if process is not None:
                process.stop_waiting()
            self._thread.join()
            self._thread = None
        with self._lock:
            self._pending.clear()
        directory = None if process is None else kernel_directory()  # no compile: nothing to write
        if self._costs_measured and self._costs is not None and directory is not None:
            compile_costs.save(self._costs, directory)  # before a detached worker adds to them
        if process is None:
            return
        self._process = None
        try:
            if self.exit_mode is ExitMode.KILL:
                if process.running:
                    process.kill()
                    if directory is not None:
                        remove_stale(directory)  # the claim of the kernel it was compiling
                return
            jobs, seconds = self._hand_over(queued, directory, worker_running=process.running)
            worker = process.detach(jobs, seconds)
            if worker is not None and self.exit_mode is ExitMode.WAIT:
                worker.wait()  # it exits by itself within ``seconds``
        finally:
            process.close()

    def _hand_over(self, queued: list[tuple[str, str, int, bool]], directory: Path | None, worker_running: bool) -> tuple[list[Job], float]:
        """The modules of the queued kernels the detached worker compiles (written to the
        cache here), and the time it gets for them and for the one it is compiling."""
        costs = self._compile_costs()
        estimate = self._compiling_seconds if worker_running else costs.startup
        jobs: list[Job] = []
        for key, source, steps, ring in queued:
            seconds = costs.kernel_seconds(steps, ring)
            if directory is None or estimate + seconds > DETACHED_WORK_SECONDS or machine_code_cached(key):
                continue
            try:
                path = write_module(directory, key, source)
            except OSError:
                continue
            jobs.append(Job(path, steps, ring))
            estimate += seconds
        return jobs, min(DETACHED_LIMIT_SECONDS, DETACHED_GRACE_SECONDS + DETACHED_LIMIT_FACTOR * estimate)
