"""Coordinate parallel regions across the processes of a node (paper 002 §2.2).

``SHOAL_COMPOSABILITY`` picks the mode:

* ``exclusive``: a parallel region (more than one thread) takes every token, so
  one runs at a time on the node; a serial region takes one token.
* ``counting``: a region of n threads takes n tokens, so the active threads of
  all regions together stay at or under the node's cores.

Unset, regions cost nothing.  Regions nest: inside a region, further regions of
the same thread take nothing more.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import threading
from collections.abc import Callable, Iterator

from shoal.settings import COMPOSABILITY
from shoal.threads.budget import node_cores
from shoal.threads.libraries import library_threads
from shoal.threads.semaphore import NodeSemaphore

# Calls with an array argument smaller than this are too short to coordinate.
HEAVY_CALL_ELEMENTS = 128 * 128

_LINALG_FUNCTIONS = (
    "cholesky", "det", "eig", "eigh", "eigvals", "eigvalsh", "inv", "lstsq", "matrix_power",
    "matrix_rank", "multi_dot", "pinv", "qr", "slogdet", "solve", "svd", "tensorinv", "tensorsolve",
)  # fmt: skip
# Not matmul: it is a ufunc, and libraries test ``ufunc is np.matmul``.
_NUMPY_FUNCTIONS = ("dot", "tensordot", "einsum", "inner", "vdot")


class Mode(enum.Enum):
    """How parallel regions share the node."""

    EXCLUSIVE = "exclusive"
    COUNTING = "counting"


def composability_mode() -> Mode | None:
    """The mode ``SHOAL_COMPOSABILITY`` asks for, or None when unset."""
    value = COMPOSABILITY.value()
    return None if value is None else Mode(value)


_semaphores: dict[tuple[int, str], NodeSemaphore] = {}
_semaphores_lock = threading.Lock()
_region_depth = threading.local()


def node_semaphore() -> NodeSemaphore:
    """The semaphore of this node (one token per core), at ``SHOAL_SEMAPHORE_PATH`` if set."""
    semaphore = NodeSemaphore(node_cores())
    key = (semaphore.size, semaphore.path)
    with _semaphores_lock:
        return _semaphores.setdefault(key, semaphore)


def tokens_for(mode: Mode, n_threads: int, size: int) -> int:
    """Tokens a region of ``n_threads`` threads takes from ``size`` in ``mode``."""
    if mode is Mode.EXCLUSIVE and n_threads > 1:
        return size
    return min(n_threads, size)


@contextlib.contextmanager
def parallel_region(n_threads: int, timeout: float | None = None) -> Iterator[int]:
    """Run a region of ``n_threads`` threads under the node-wide budget.

    Takes tokens per ``SHOAL_COMPOSABILITY`` (nothing when unset) and gives them
    back on exit.  Yields the number of tokens held (0 when none were needed).
    Raises TimeoutError if ``timeout`` seconds pass before the tokens are free.
    """
    if isinstance(n_threads, bool) or not isinstance(n_threads, int) or n_threads < 1:
        raise ValueError(f"a parallel region needs a positive thread count, got {n_threads!r}")
    mode = composability_mode()
    depth = getattr(_region_depth, "value", 0)
    if mode is None or depth > 0:
        _region_depth.value = depth + 1
        try:
            yield 0
        finally:
            _region_depth.value = depth
        return
    semaphore = node_semaphore()
    grant = semaphore.acquire(tokens_for(mode, n_threads, semaphore.size), timeout=timeout)
    _region_depth.value = 1
    try:
        yield grant.count
    finally:
        _region_depth.value = 0
        grant.release()


def _is_heavy(args: tuple, kwargs: dict) -> bool:
    for value in (*args, *kwargs.values()):
        if getattr(value, "size", 0) >= HEAVY_CALL_ELEMENTS:
            return True
        if isinstance(value, (list, tuple)) and any(
            getattr(item, "size", 0) >= HEAVY_CALL_ELEMENTS for item in value
        ):
            return True
    return False


def coordinated(function: Callable) -> Callable:
    """Wrap a BLAS/LAPACK-heavy function so large calls run as parallel regions."""
    if getattr(function, "__shoal_coordinated__", False):
        return function

    @functools.wraps(function)
    def run_as_region(*args, **kwargs):
        if composability_mode() is None or not _is_heavy(args, kwargs):
            return function(*args, **kwargs)
        with parallel_region(library_threads()):
            return function(*args, **kwargs)

    run_as_region.__shoal_coordinated__ = True
    run_as_region.__wrapped__ = function
    return run_as_region


def install_call_regions() -> None:
    """Make NumPy's linear algebra and products take tokens before large calls.

    Covers calls looked up through ``numpy`` / ``numpy.linalg`` at call time
    (what Dask and most programs do).  Not ``@`` (a C slot) nor ``np.matmul``: a
    wrapper would fail Dask's ``ufunc is np.matmul`` test (see docs/decisions.md).
    """
    import numpy

    for name in _LINALG_FUNCTIONS:
        if hasattr(numpy.linalg, name):
            setattr(numpy.linalg, name, coordinated(getattr(numpy.linalg, name)))
    for name in _NUMPY_FUNCTIONS:
        setattr(numpy, name, coordinated(getattr(numpy, name)))


def uninstall_call_regions() -> None:
    """Undo :func:`install_call_regions`."""
    import numpy

    for module, names in ((numpy.linalg, _LINALG_FUNCTIONS), (numpy, _NUMPY_FUNCTIONS)):
        for name in names:
            function = getattr(module, name, None)
            if getattr(function, "__shoal_coordinated__", False):
                setattr(module, name, function.__wrapped__)
