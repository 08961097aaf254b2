"""The text of ``python -m shoal info``: the stack, the kernel back end and why, the settings."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import platform
import shutil
import sys
from collections.abc import Mapping

from shoal import settings


def _version(distribution: str) -> str | None:
    """The installed version of ``distribution`` without importing it (Numba takes 0.3 s)."""
    if importlib.util.find_spec(distribution) is None:
        return None
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "unknown version"


def stack(environ: Mapping[str, str] | None = None) -> str:
    """The component stack a program would run on, or why none can be built."""
    from shoal.engine import stack_names

    try:
        return ":".join(stack_names(environ=environ))
    except (ValueError, TypeError, ImportError) as error:
        return f"invalid: {error}"


def kernel_backend(environ: Mapping[str, str] | None = None) -> str:
    """Which kernel back end the node engine would use here, and why."""
    bottom = stack(environ).rpartition(":")[2]
    if bottom != "node":
        return f"none: the bottom component is {bottom!r}, which runs NumPy operation by operation"
    try:
        mode = settings.COMPILE.value(environ=environ)
    except ValueError as error:
        return f"invalid: {error}"
    if mode == "off":
        return "NumPy tiles: SHOAL_COMPILE=off"
    numba = _version("numba")
    if numba is None:
        return ("NumPy tiles: Numba is not installed (it is one of Shoal's dependencies; "
                "`pip install numba` brings compiled kernels back)")  # fmt: skip
    linker = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    when = "in a background process, NumPy tiles until ready" if mode == "background" else "before first use"
    cached = (
        f"cached kernels load as shared libraries (linked with {linker})"
        if linker
        else "no C compiler: cached kernels load through Numba's cache (0.3-0.6 s to import Numba)"
    )
    return f"compiled kernels (Numba {numba}, compiled {when}); {cached}"


def indexing() -> str:
    """How a held array's ``a[i, j]`` runs here: the compiled slots, or Python and why."""
    from shoal.numpy import _slots

    if _slots.COMPILED:
        return "compiled slots (NumPy's cost per element or row)"
    if settings.COMPILED_INDEXING.value() == "off":
        return "Python: SHOAL_COMPILED_INDEXING=off"
    return "Python: the compiled slots were not built at install (no C compiler); about 50 ns more per access"


def replay_checks() -> str:
    """How a replayed batch is compared with the previous one here: the compiled loops, or Python."""
    from shoal.engine.node.schedule import compiled_checks

    if compiled_checks.CHECKS is not None:
        return "compiled loops (about 0.2 µs an instruction)"
    return "Python: the compiled loops were not built at install (no C compiler); about 1 µs an instruction"


def call_bookkeeping() -> str:
    """How the runtime's bookkeeping for a remembered element-wise call runs here."""
    from shoal import compiled_recording
    from shoal.numpy import _fast_ufunc

    if compiled_recording.RECORDING is not None and _fast_ufunc.FAST_RECORD is not None:
        return "compiled (recording a remembered call: about 2.6 µs)"
    if compiled_recording.RECORDING is not None:
        return "compiled bookkeeping; the call's key, filters and site read in Python (about 1 µs more a call)"
    return "Python: the compiled bookkeeping was not built at install (no C compiler); about 2 µs more a call"


def settled_calls() -> str:
    """How a NumPy call on settled memory (a loop's small operations on lazy arrays) runs here."""
    from shoal.numpy import _settled_compiled

    if _settled_compiled.SETTLED_CALLS is not None:
        return "compiled (about 3 µs a call over NumPy's)"
    return "Python: the compiled calls were not built at install (no C compiler); about 7 µs a call over NumPy's"


def chunked_pairs() -> str:
    """How a direct batch's pair of float arithmetic calls (``a -= np.outer(x, y)``) runs here."""
    from shoal.engine.node.run import compiled_pairs

    if compiled_pairs.pair_rows is not None:
        return "compiled loop (one pass, about 0.6 ms per 10^6 float64 elements on one thread)"
    return "NumPy chunks: the compiled loop was not built at install (no C compiler); about 2.2 ms per 10^6 float64 elements"


def settings_lines(environ: Mapping[str, str] | None = None) -> list[str]:
    """One line per setting: name, effective value, and where the value comes from."""
    rows = settings.effective(environ)
    width = max(len(declared.name) for declared, _, _ in rows)
    return [f"  {declared.name:<{width}}  {value}  ({source})" for declared, value, source in rows]


def report(environ: Mapping[str, str] | None = None) -> str:
    """Everything ``python -m shoal info`` prints."""
    import numpy

    import shoal
    from shoal.threads import available_cores

    lines = [
        f"shoal {shoal.__version__}",
        f"engine stack: {stack(environ)}",
        f"kernels: {kernel_backend(environ)}",
        f"held-array indexing: {indexing()}",
        f"replayed batches compared by: {replay_checks()}",
        f"recorded calls' bookkeeping: {call_bookkeeping()}",
        f"calls on settled memory: {settled_calls()}",
        f"float arithmetic pairs in direct batches: {chunked_pairs()}",
        f"cores: {available_cores()}",
        f"python: {platform.python_version()} ({sys.executable})",
        f"numpy: {numpy.__version__}",
        f"numba: {_version('numba') or 'not installed'}",
        "Settings (effective value, and where it comes from)",
        *settings_lines(environ),
    ]
    return "\n".join(lines)
