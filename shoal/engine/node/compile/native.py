"""Compiled kernels as shared libraries, so that a cached kernel loads without importing Numba.

Loading a kernel from Numba's disk cache costs importing Numba and setting up its compiler
contexts (0.3-0.6 s measured here, more than black_scholes.py's whole compiled run) before the
first kernel runs. The compile worker therefore also writes each kernel as a shared library:
Numba compiles a C-callable entry point that takes raw pointers and calls the kernel, LLVM emits
it as position-independent object code for this CPU, and the system's C compiler links it.
A later run loads it with ``ctypes`` in well under a millisecond; ``ctypes`` releases the
interpreter lock during the call, as Numba's ``nogil`` kernels do.

The entry point still references Numba's runtime and the Python C API on its error paths
(which a kernel never takes: no bounds checks, NumPy's error model, arrays without owners).
Those references are made weak, so the library loads without them. A library records the CPU
it was built for and is loaded only on the same one. Complex scalars travel as their two parts.

Loading a library runs its code, so a library is loaded only if it and its record belong to this
user, no other user may write them, neither is a link, and the library's SHA-256 (taken from the
open descriptor, which ``dlopen`` then loads through ``/proc/self/fd``) matches the one recorded
when it was built. A record without a hash (an older format) is not loaded: the kernel is
compiled again. Measured (``benchmarks/cached_kernel_load.py``, 17-35 KiB libraries): 0.15 ms per
library with the checks against 0.08 ms without (SHA-256: 0.03 ms), 0.6 ms for the first library
of a process, which also imports ``hashlib``.
Without a C compiler, or for a type ctypes cannot pass, no library is written and Numba's cache
serves instead.
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import platform
import re
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from shoal.engine.node.compile.cache_files import read_text, write_text_atomically
from shoal.private_files import open_owned

_CTYPES: dict[str, Any] = {
    "b": ctypes.c_int8, "h": ctypes.c_int16, "i": ctypes.c_int32, "l": ctypes.c_int64, "q": ctypes.c_int64,
    "B": ctypes.c_uint8, "H": ctypes.c_uint16, "I": ctypes.c_uint32, "L": ctypes.c_uint64, "Q": ctypes.c_uint64,
    "f": ctypes.c_float, "d": ctypes.c_double, "?": ctypes.c_uint8,
}  # fmt: skip
_COMPLEX_PARTS = {"F": ctypes.c_float, "D": ctypes.c_double}  # passed as real and imaginary part
_ARRAY = "array"
LIBRARY_FORMAT = 2  # 1 had no content hash
BUILD_PREFIX = ".build-"
STALE_BUILD_SECONDS = 600.0  # no build takes this long; an older build directory was abandoned
PROC_FD = Path("/proc/self/fd")

# Libraries loaded by this process, by (device, inode, hash), with the descriptor they were loaded
# through: kept open while the library is loaded (always), so that ``dlopen`` never meets the
# same /proc/self/fd name for another file (it would return the library loaded under that name).
_loaded: dict[tuple[int, int, str], Any] = {}
_loaded_lock = threading.Lock()


@functools.cache
def host_fingerprint() -> str:
    """The CPU this process runs on: a library built for another one is not loaded."""
    text = platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith(("model name", "flags")):
                    text += line
                if line.strip() == "":
                    break
    except OSError:
        text += platform.processor()
    import hashlib  # here, not at import (see compiler.generator_stamp)

    return hashlib.sha256(text.encode()).hexdigest()[:16]


def library_path(directory: Path, name: str) -> Path:
    return directory / f"{name}.so"


def _description_path(library: Path) -> Path:
    return library.with_suffix(".json")


@dataclass(frozen=True)
class NativeKernel:
    """A kernel in a shared library, called with the same arguments as its Numba original."""

    function: Any
    params: tuple[str, ...]  # per kernel argument: "array" or a scalar's dtype character
    results: tuple[np.dtype, ...]  # the kernel's return tuple (reductions); empty: returns 0
    library: Any  # keeps the library loaded while the function is in use

    def __call__(self, *args: Any) -> Any:
        flat, arrays = self.flatten(args)
        for position in arrays:
            array = args[position.position]
            flat[position.flat] = array.ctypes.data
            flat[position.flat + 1] = array.size
        return self.call_flat(flat)

    def flatten(self, args: Any) -> tuple[list[Any], list[FlatArray]]:
        """``args`` as the library function's C arguments, every array's pointer and element
        count left 0, and where each array goes (see :meth:`call_flat`)."""
        flat: list[Any] = []
        arrays: list[FlatArray] = []
        for position, (kind, value) in enumerate(zip(self.params, args)):
            if kind == _ARRAY:
                arrays.append(FlatArray(position, len(flat)))
                flat += [0, 0]
            else:
                flat += self.scalar(position, value)
        return flat, arrays

    def flat_offsets(self) -> list[int]:
        """Where each kernel argument's C arguments begin in :meth:`flatten`'s list."""
        offsets, count = [], 0
        for position, kind in enumerate(self.params):
            offsets.append(count)
            count += 2 if kind == _ARRAY else len(self.scalar(position, 0))
        return offsets

    def scalar(self, position: int, value: Any) -> list[Any]:
        """Scalar kernel argument ``position`` as its C arguments (as :meth:`flatten` gives them)."""
        kind = self.params[position]
        if kind in "fd":
            return [float(value)]
        if kind in "FD":
            return [float(value.real), float(value.imag)]
        return [int(value)]

    def call_flat(self, flat: list[Any]) -> Any:
        """Call the kernel with C arguments from :meth:`flatten`, pointers filled in."""
        outputs = [np.zeros(1, np.uint8 if dtype == np.bool_ else dtype) for dtype in self.results]
        self.function(*flat, *(out.ctypes.data for out in outputs))
        if not self.results:
            return 0
        return tuple(out.astype(dtype)[0] for out, dtype in zip(outputs, self.results))


@dataclass(frozen=True, slots=True)
class FlatArray:
    """Kernel argument ``position`` is an array: its pointer goes to C argument ``flat`` and its
    element count to the one after it."""

    position: int
    flat: int


def _description(library: Path) -> dict[str, Any] | None:
    """The description written next to ``library`` if it is this user's, for this CPU and has
    the library's size and hash, else None."""
    text = read_text(_description_path(library))
    if text is None:
        return None
    try:
        description = json.loads(text)
    except ValueError:
        return None
    if not isinstance(description, dict) or description.get("format") != LIBRARY_FORMAT:
        return None
    if not isinstance(description.get("sha256"), str) or not isinstance(description.get("size"), int):
        return None
    return description if description.get("host") == host_fingerprint() else None


def _open_library(library: Path, description: dict[str, Any]) -> int | None:
    """A descriptor of ``library`` if it is this user's, safe to trust and of the recorded size."""
    try:
        descriptor = open_owned(library)
    except OSError:
        return None
    if os.fstat(descriptor).st_size != description["size"]:
        os.close(descriptor)
        return None
    return descriptor


def _verified_handle(library: Path, description: dict[str, Any]) -> Any:
    """``library`` loaded, if its content has the recorded hash; else None."""
    import hashlib  # here, not at import (see compiler.generator_stamp)

    descriptor = _open_library(library, description)
    if descriptor is None:
        return None
    try:
        status = os.fstat(descriptor)
        digest = hashlib.sha256(os.pread(descriptor, status.st_size + 1, 0)).hexdigest()
        if digest != description["sha256"]:
            os.close(descriptor)
            return None
        key = (status.st_dev, status.st_ino, digest)
        with _loaded_lock:
            handle = _loaded.get(key)
            if handle is not None:
                os.close(descriptor)
                return handle
            through = PROC_FD / str(descriptor)
            handle = ctypes.CDLL(str(through if through.exists() else library))
            _loaded[key] = handle  # the descriptor stays open as long as the library is loaded
            return handle
    except BaseException:
        os.close(descriptor)
        raise


def load(library: Path) -> NativeKernel | None:
    """The kernel in ``library`` if it exists, belongs to this user with safe modes, has the
    recorded hash, was built for this CPU and loads, else None (whatever is wrong with a cached
    file, the kernel falls back to Numba or NumPy)."""
    description = _description(library)
    if description is None:
        return None
    try:
        handle = _verified_handle(library, description)
        if handle is None:
            return None
        function = handle[description["symbol"]]
        params = tuple(str(kind) for kind in description["params"])
        results = tuple(np.dtype(d) for d in description["results"])
        argtypes: list[Any] = []
        for kind in params:
            if kind == _ARRAY:
                argtypes += [ctypes.c_void_p, ctypes.c_int64]
            elif kind in _COMPLEX_PARTS:
                argtypes += [_COMPLEX_PARTS[kind]] * 2
            else:
                argtypes.append(_CTYPES[kind])
        argtypes += [ctypes.c_void_p] * len(results)
        function.argtypes = argtypes
        function.restype = ctypes.c_int32
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return NativeKernel(function, params, results, handle)


def available(library: Path) -> bool:
    """True if a library for this CPU is on disk (cheap: reads its small description and checks
    the library's owner, modes and size; :func:`load` checks its hash)."""
    description = _description(library)
    descriptor = None if description is None else _open_library(library, description)
    if descriptor is None:
        return False
    os.close(descriptor)
    return True


def build(module: ModuleType, name: str, library: Path) -> bool:
    """Write kernel ``name`` of the compiled (warmed-up) ``module`` as ``library``; True if done.

    Needs Numba (the kernel is already compiled) and a C compiler to link; any failure leaves
    nothing behind and the kernel is then loaded through Numba's cache.
    """
    linker = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if linker is None:
        return False
    try:
        entry, params, results = _entry_point(getattr(module, name))
        if entry is None:
            return False
        object_code = _object_code(entry)
    except Exception:
        return False
    directory = library.parent
    remove_stale_builds(directory)
    with tempfile.TemporaryDirectory(dir=directory, prefix=build_prefix()) as scratch:
        object_path = Path(scratch) / "kernel.o"
        object_path.write_bytes(object_code)
        linked = Path(scratch) / "kernel.so"
        done = subprocess.run([linker, "-shared", "-o", str(linked), str(object_path)], capture_output=True, check=False)
        if done.returncode != 0 or load_check(linked, entry.native_name) is False:
            return False
        import hashlib

        content = linked.read_bytes()
        os.chmod(linked, 0o600)
        description = {"format": LIBRARY_FORMAT, "host": host_fingerprint(), "symbol": entry.native_name,
                       "params": params, "results": results, "size": len(content),
                       "sha256": hashlib.sha256(content).hexdigest()}  # fmt: skip
        staged = Path(scratch) / "kernel.json"
        write_text_atomically(staged, json.dumps(description))
        os.replace(linked, library)  # a reader between the two renames finds the hash wrong
        os.replace(staged, _description_path(library))
    return True


def build_prefix() -> str:
    """How the names of this process's build directories begin."""
    return f"{BUILD_PREFIX}{os.getpid()}-"


def remove_stale_builds(directory: Path, older_than: float = STALE_BUILD_SECONDS) -> None:
    """Remove build directories that a killed compile worker left behind."""
    now = time.time()
    for leftover in directory.glob(f"{BUILD_PREFIX}*"):
        try:
            if now - leftover.stat().st_mtime > older_than:
                shutil.rmtree(leftover, ignore_errors=True)
        except OSError:
            continue


def load_check(library: Path, symbol: str) -> bool:
    """True if the freshly linked ``library`` loads and exports ``symbol``."""
    try:
        ctypes.CDLL(str(library))[symbol]
    except (OSError, AttributeError):
        return False
    return True


def _entry_point(kernel: Any) -> tuple[Any, list[str], list[str]]:
    """A Numba ``cfunc`` taking pointers and scalars that calls ``kernel`` and stores its results."""
    import numba
    from numba.core import types
    from numba.np.numpy_support import as_dtype

    signature = kernel.nopython_signatures[0]
    c_args: list[Any] = []
    entry_params: list[str] = []
    setup: list[str] = []
    call: list[str] = []
    params: list[str] = []
    for position, arg_type in enumerate(signature.args):
        local = f"x{position}"
        if isinstance(arg_type, types.Array):
            if arg_type.ndim != 1:
                return None, [], []
            c_args += [types.CPointer(arg_type.dtype), types.int64]
            entry_params += [f"p{position}", f"n{position}"]
            setup.append(f"    {local} = numba.carray(p{position}, n{position})")
            params.append(_ARRAY)
        else:
            char = as_dtype(arg_type).char
            if char in _COMPLEX_PARTS:
                part = arg_type.underlying_float
                c_args += [part, part]
                entry_params += [f"{local}_re", f"{local}_im"]
                setup.append(f"    {local} = np.{as_dtype(arg_type).name}(complex({local}_re, {local}_im))")
                params.append(char)
                call.append(local)
                continue
            if char not in _CTYPES:
                return None, [], []
            c_args.append(types.uint8 if char == "?" else arg_type)
            entry_params.append(local)
            if char == "?":
                setup.append(f"    {local} = {local} != 0")
            params.append(char)
        call.append(local)
    returned = signature.return_type
    elements = list(returned) if isinstance(returned, types.BaseTuple) else []
    results: list[str] = []
    store: list[str] = []
    for which, element in enumerate(elements):
        char = as_dtype(element).char
        if char not in _CTYPES and char not in "FD":
            return None, [], []
        c_args.append(types.CPointer(types.uint8 if char == "?" else element))
        entry_params.append(f"out{which}")
        store.append(f"    out{which}[0] = result[{which}]")
        results.append(np.dtype(char).str)
    source = "\n".join([
        f"def entry({', '.join(entry_params)}):",
        *setup,
        f"    result = kernel({', '.join(call)})",
        *store,
        "    return 0",
    ])  # fmt: skip
    namespace: dict[str, Any] = {"numba": numba, "np": np, "kernel": kernel}
    exec(compile(source, f"<entry of {kernel.__name__}>", "exec"), namespace)
    entry = numba.cfunc(types.int32(*c_args), error_model="numpy")(namespace["entry"])
    return entry, params, results


def _object_code(entry: Any) -> bytes:
    """``entry``'s module as position-independent object code for this CPU, with every
    external symbol weak (they are only referenced on error paths that a kernel never takes)."""
    import llvmlite.binding as llvm

    text = str(entry._library._final_module)
    text = re.sub(r"^declare (?!.*@llvm\.)", "declare extern_weak ", text, flags=re.M)
    text = re.sub(r"^(@\S+) = external global", r"\1 = extern_weak global", text, flags=re.M)
    machine = llvm.Target.from_default_triple().create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=3, reloc="pic", codemodel="default"
    )
    return machine.emit_object(llvm.parse_assembly(text))
