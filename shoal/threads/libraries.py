"""Limit the threads of BLAS/OpenMP/numexpr/Numba inside this process.

Two kinds of controls exist and need different bookkeeping:

* process-wide controls (OpenBLAS with pthreads, MKL, BLIS, numexpr): one setting
  for every thread of the process.  Several threads may ask for limits at once,
  so the applied value is the smallest active request, and the libraries' own
  settings come back when the last request ends.  A plain save/set/restore per
  request would restore stale values when requests overlap.
* per-thread controls (the OpenMP ``nthreads-var`` ICV, Numba's
  ``set_num_threads``): set in the calling thread and restored there.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from threadpoolctl import ThreadpoolController

_PROCESS_WIDE_APIS = ("blas",)
# OpenBLAS's threads spin 2^28 cycles (about 0.1 s) after each call before they sleep, holding a
# core the engine's threads need; 2^18 (about 0.1 ms) still spans the gap between the products of
# a row loop, where 2^16 let the threads fall asleep and every product woke them (docs/decisions.md).
BLAS_DEFAULTS = {"OPENBLAS_THREAD_TIMEOUT": "18"}
_PER_THREAD_APIS = ("openmp",)


@dataclass(frozen=True)
class LibraryPool:
    """One thread pool found in this process."""

    name: str
    user_api: str
    threads: int
    version: str | None
    threading_layer: str | None
    filepath: str | None


class _Controllers:
    """threadpoolctl's view of the loaded libraries, rescanned when modules load."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._controller: ThreadpoolController | None = None
        self._modules_seen = -1

    def libraries(self, user_apis: tuple[str, ...]) -> list:
        with self._lock:
            if self._controller is None or len(sys.modules) != self._modules_seen:
                self._modules_seen = len(sys.modules)
                self._controller = ThreadpoolController()
            return [lib for lib in self._controller.lib_controllers if lib.user_api in user_apis]


_controllers = _Controllers()


def _openblas_setter(lib: object):
    # threadpoolctl lets only the first thread that set OpenBLAS's pthreads pool
    # change it; the arbitration here already serializes the changes, so call
    # OpenBLAS directly from whichever thread needs it.
    for prefix in ("", "scipy_"):
        for suffix in ("", "64_", "_64"):
            setter = getattr(lib.dynlib, f"{prefix}openblas_set_num_threads{suffix}", None)
            if setter is not None:
                return setter
    return None


def _set_process_wide(lib: object, n_threads: int) -> None:
    setter = _openblas_setter(lib) if lib.internal_api == "openblas" else None
    if setter is not None:
        setter(n_threads)
    else:
        lib.set_num_threads(n_threads)


def shorten_blas_spinning() -> bool:
    """Before OpenBLAS loads (NumPy not imported yet): let its idle threads sleep sooner, unless
    the user set the variable. True if the default was applied."""
    if "numpy" in sys.modules:
        return False
    for name, value in BLAS_DEFAULTS.items():
        os.environ.setdefault(name, value)
    return True


def _numexpr():
    return sys.modules.get("numexpr")


def _numba_if_launched():
    """Numba, only when its threading layer already runs: limiting must not start it."""
    if "numba" not in sys.modules:
        return None
    parallel = sys.modules.get("numba.np.ufunc.parallel")
    if parallel is None or not getattr(parallel, "_is_initialized", False):
        return None
    return sys.modules["numba"]


class _ProcessWideLimit:
    """The smallest active request wins; the originals return when none is left."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active: Counter[int] = Counter()
        self._originals: list[tuple[object, int]] = []
        self._numexpr_original: int | None = None
        self._applied: int | None = None

    def acquire(self, n_threads: int) -> None:
        with self._lock:
            if not self._active:
                self._save_originals()
            self._active[n_threads] += 1
            self._apply(min(self._active))

    def release(self, n_threads: int) -> None:
        with self._lock:
            self._active[n_threads] -= 1
            if self._active[n_threads] <= 0:
                del self._active[n_threads]
            if self._active:
                self._apply(min(self._active))
            else:
                self._restore_originals()

    def applied(self) -> int | None:
        """The limit in force now, or None when no request is active."""
        return self._applied

    def _save_originals(self) -> None:
        self._originals = [
            (lib, lib.num_threads) for lib in _controllers.libraries(_PROCESS_WIDE_APIS)
        ]
        numexpr = _numexpr()
        self._numexpr_original = numexpr.get_num_threads() if numexpr is not None else None

    def _apply(self, n_threads: int) -> None:
        for lib in _controllers.libraries(_PROCESS_WIDE_APIS):
            if not any(lib is saved for saved, _ in self._originals):
                self._originals.append((lib, lib.num_threads))
            _set_process_wide(lib, min(n_threads, self._original_of(lib)))
        numexpr = _numexpr()
        if numexpr is not None:
            if self._numexpr_original is None:
                self._numexpr_original = numexpr.get_num_threads()
            numexpr.set_num_threads(min(n_threads, self._numexpr_original))
        self._applied = n_threads

    def _original_of(self, lib: object) -> int:
        return next(threads for saved, threads in self._originals if saved is lib)

    def _restore_originals(self) -> None:
        for lib, threads in self._originals:
            _set_process_wide(lib, threads)
        numexpr = _numexpr()
        if numexpr is not None and self._numexpr_original is not None:
            numexpr.set_num_threads(self._numexpr_original)
        self._originals = []
        self._numexpr_original = None
        self._applied = None


_process_wide = _ProcessWideLimit()


def _set_per_thread(n_threads: int) -> list[tuple[object, int]]:
    """Limit this thread's OpenMP and Numba threads; return what to restore."""
    restore: list[tuple[object, int]] = []
    for lib in _controllers.libraries(_PER_THREAD_APIS):
        previous = lib.num_threads
        lib.set_num_threads(min(n_threads, previous))
        restore.append((lib, previous))
    numba = _numba_if_launched()
    if numba is not None:
        previous = numba.get_num_threads()
        numba.set_num_threads(min(n_threads, previous))
        restore.append((numba, previous))
    return restore


def _check_threads(n_threads: int) -> None:
    if isinstance(n_threads, bool) or not isinstance(n_threads, int) or n_threads < 1:
        raise ValueError(f"thread limit must be a positive integer, got {n_threads!r}")


@contextlib.contextmanager
def limit_library_threads(n_threads: int) -> Iterator[int]:
    """Limit BLAS/OpenMP/numexpr/Numba threads in this process to ``n_threads``.

    A limit only lowers: libraries already below ``n_threads`` keep their setting.
    Overlapping limits from several threads apply the smallest; everything is
    restored when the last one exits.  Yields ``n_threads``.
    """
    _check_threads(n_threads)
    _process_wide.acquire(n_threads)
    try:
        restore = _set_per_thread(n_threads)
        try:
            yield n_threads
        finally:
            for lib, previous in reversed(restore):
                lib.set_num_threads(previous)
    finally:
        _process_wide.release(n_threads)


def hold_process_wide_limit(n_threads: int) -> None:
    """Add a process-wide limit that lasts until :func:`drop_process_wide_limit`."""
    _check_threads(n_threads)
    _process_wide.acquire(n_threads)


def drop_process_wide_limit(n_threads: int) -> None:
    """End a limit taken with :func:`hold_process_wide_limit`."""
    _process_wide.release(n_threads)


def limit_this_thread(n_threads: int) -> None:
    """Limit the per-thread controls (OpenMP, Numba) of the calling thread, for good."""
    _check_threads(n_threads)
    _set_per_thread(n_threads)


def library_threads() -> int:
    """Threads a BLAS call made now from this process would use (1 if no BLAS is loaded)."""
    libs = _controllers.libraries(_PROCESS_WIDE_APIS)
    return max((lib.num_threads for lib in libs), default=1)


def library_pools() -> list[LibraryPool]:
    """Every thread pool threadpoolctl finds, plus numexpr and a launched Numba."""
    pools = [
        LibraryPool(
            name=lib.internal_api,
            user_api=lib.user_api,
            threads=lib.num_threads,
            version=lib.version,
            threading_layer=getattr(lib, "threading_layer", None),
            filepath=lib.filepath,
        )
        for lib in _controllers.libraries(("blas", "openmp"))
    ]
    numexpr = _numexpr()
    if numexpr is not None:
        pools.append(
            LibraryPool("numexpr", "numexpr", numexpr.get_num_threads(), numexpr.__version__, "pthreads", None)
        )
    numba = _numba_if_launched()
    if numba is not None:
        pools.append(
            LibraryPool("numba", "numba", numba.get_num_threads(), numba.__version__, numba.threading_layer(), None)
        )
    return pools
