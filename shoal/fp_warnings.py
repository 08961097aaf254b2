"""NumPy's floating-point ``RuntimeWarning`` for lazy operations, at the line that recorded them.

NumPy warns ``"divide by zero encountered in log"`` from the user's call, once per line under
the default filters. A lazy operation runs later, so the runtime keeps, for each recorded
instruction that NumPy's error state would warn about, where it was recorded (:func:`site`:
file, line, the module's globals, the categories set to ``"warn"`` then). The engine notes the
conditions each instruction met (``shoal.engine.fp_signals``) and :func:`emit` warns for them
with ``warnings.warn_explicit`` and the module's ``__warningregistry__``, as
``warnings.warn`` from that line would: same text, category, file, line and filtering.

Where the warnings filters may turn the warning into an error, :func:`raises` says so and the
operations that can signal run at the call instead (``shoal.numpy._fperr``), so that the
exception comes from the user's line.
"""

from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass
from types import CodeType, FunctionType
from typing import Any

import numpy as np

from shoal import warning_filters
from shoal.bytecode import OPCODES, Kind
from shoal.engine.fp_signals import CATEGORY_TEXT, DIVIDE, INVALID, OVER, UNDER, silent
from shoal.warning_filters import Filters, filters_now, warn_under

try:  # the cached half of call_site in C, built at install where a C compiler is found
    from shoal._call_sites import known_call_site
except ImportError:
    known_call_site = None

_MODE_NAMES = (("divide", DIVIDE), ("over", OVER), ("under", UNDER), ("invalid", INVALID))
_STATE = getattr(np._core.umath, "_extobj_contextvar", None)
_last_state: tuple[Any, int] = (object(), 0)
_last_verdict: tuple[Any, bool] = (None, False)  # filters_now()'s snapshot and filters_raise()'s verdict on it
_INTERNAL = (os.path.dirname(__file__), os.path.dirname(np.__file__))
# file name -> whether Shoal's or NumPy's (a string caches its hash; a code object's is computed
# from its contents on every call, 0.3 µs, and a recording walks several frames)
_internal_files: dict[str, bool] = {}


@dataclass(frozen=True, slots=True)
class Site:
    """Where an instruction was recorded, and the categories that warned then (bits).
    ``entry`` is the NumPy function or ``ndarray`` method the user called, where NumPy
    implements it in Python (a reduction's warning then names NumPy's line, see
    :func:`numpy_location`)."""

    filename: str
    lineno: int
    module_globals: dict[str, Any]
    warned: int
    entry: Any = None
    filters: Filters | None = None  # the warnings filters then (shoal.warning_filters)


def warned_categories() -> int:
    """The categories NumPy's error state sets to ``"warn"`` now (bits of ``fp_signals``)."""
    global _last_state
    if _STATE is None:
        return _warned_now()
    state = _STATE.get()
    last = _last_state
    if state is last[0]:
        return last[1]
    bits = _warned_now()
    _last_state = (state, bits)
    return bits


def _warned_now() -> int:
    modes = np.geterr()
    return sum(bit for name, bit in _MODE_NAMES if modes[name] == "warn")


_QUIETED: dict[int, dict[str, str]] = {}


def quieted() -> dict[str, str]:
    """``np.errstate`` keywords that ignore the categories set to ``"warn"`` now."""
    bits = warned_categories()
    keywords = _QUIETED.get(bits)
    if keywords is None:
        keywords = _QUIETED[bits] = {name: "ignore" for name, bit in _MODE_NAMES if bit & bits}
    return keywords


def raises() -> bool:
    """True if a category warns now and the warnings filters may make a ``RuntimeWarning`` an
    error (checked against the filters list only when it changed), or a NumPy
    ``suppress_warnings`` block, which checks what it recorded before it ends, is open."""
    return bool(warned_categories()) and (filters_raise() or warning_filters.eager_blocks > 0)


def filters_raise(filters: Filters | None = None) -> bool:
    """True if the warnings filters may make a ``RuntimeWarning`` an error (:func:`raises`
    without its check of NumPy's error state); ``filters``: :func:`filters_now`, if known."""
    global _last_verdict
    snapshot = filters_now() if filters is None else filters
    last = _last_verdict
    if last[0] is snapshot:
        return last[1]
    verdict = _errors(*snapshot)
    _last_verdict = (snapshot, verdict)
    return verdict


def _errors(filters: tuple[Any, ...], default: str) -> bool:
    for action, message, category, module, lineno in filters:
        if not issubclass(RuntimeWarning, category):
            continue
        if action == "error":
            return True
        if message is None and module is None and not lineno:
            return False
    return default == "error"


def user_frame(frame: Any) -> Any:
    """The first frame from ``frame`` outwards that is neither Shoal's nor NumPy's (None: none)."""
    return _user_frame_and_caller(frame)[0]


def _user_frame_and_caller(frame: Any) -> tuple[Any, Any]:
    """:func:`user_frame`, and the frame it called (the outermost internal one; None if
    ``frame`` is the user's own)."""
    outer = None
    while frame is not None:
        filename = frame.f_code.co_filename
        inside = _internal_files.get(filename)
        if inside is None:
            inside = _internal_files[filename] = filename.startswith(_INTERNAL)
        if not inside:
            return frame, outer
        outer = frame
        frame = frame.f_back
    return None, outer


def _warn_at(message: str, filename: str, lineno: int, module_globals: dict[str, Any]) -> None:
    """``RuntimeWarning(message)`` as ``warnings.warn`` from that line of that module would give it."""
    warnings.warn_explicit(
        message,
        RuntimeWarning,
        filename,
        lineno,
        module=module_globals.get("__name__", "<string>"),
        registry=module_globals.setdefault("__warningregistry__", {}),
    )


class relayed:
    """``with relayed():`` around a NumPy call Shoal makes for the user (an operation computed
    at the call): the categories set to ``"warn"`` are logged instead, and on exit warned with
    the location NumPy's own call would have had: NumPy's line where NumPy's Python code made
    the failing call, else the user's line (not Shoal's). Left as they are while a category is
    ``"call"`` or ``"log"`` (one handler object serves both)."""

    __slots__ = ("_seen", "_state")

    def __init__(self) -> None:
        self._seen: list[tuple[str, Any]] = []
        self._state: Any = None

    def __enter__(self) -> None:
        if not warned_categories():
            return
        modes = np.geterr()
        if "call" in modes.values() or "log" in modes.values():
            return
        self._state = np.errstate(**{name: "log" for name, mode in modes.items() if mode == "warn"}, call=self)
        self._state.__enter__()

    def write(self, text: str) -> None:
        frame = sys._getframe(1)
        if not frame.f_code.co_filename.startswith(_INTERNAL[1]):
            frame = user_frame(frame)
        if frame is not None:
            self._seen.append((text.removeprefix("Warning: ").rstrip("\n"), (frame.f_code.co_filename, frame.f_lineno, frame.f_globals)))

    def __exit__(self, *exc: object) -> None:
        if self._state is None:
            return
        self._state.__exit__(*exc)
        for message, (filename, lineno, module_globals) in self._seen:
            _warn_at(message, filename, lineno, module_globals)


def _call(function: Any, args: Any, kwargs: Any) -> Any: return function(*args, **kwargs)  # fmt: skip


TRAMPOLINE_NAME = "<numpy call>"  # the frame a NumPy call Shoal makes runs in (``at_user_line``)
_TEMPLATE = _call.__code__.replace(co_name=TRAMPOLINE_NAME, co_qualname=TRAMPOLINE_NAME)
_trampolines: dict[tuple[int, int], tuple[CodeType, Any]] = {}  # (id(code), line) -> (code, trampoline)


def at_user_line(function: Any, *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)``, a NumPy call Shoal makes for the user (a fallback, a
    result computed at the call), run in a frame that has the user's file, line and module
    globals: a warning NumPy gives from C (``ComplexWarning``, a ufunc's ``RuntimeWarning``) or
    with a ``stacklevel`` that leaves NumPy's code (``"Mean of empty slice"`` of
    ``ndarray.mean``) names that line and counts in that module's registry, as when the user
    calls NumPy directly, instead of naming Shoal's line."""
    frame = user_frame(sys._getframe(1))
    if frame is None:
        return function(*args, **kwargs)
    code = frame.f_code
    key = (id(code), frame.f_lineno)
    known = _trampolines.get(key)
    if known is None or known[0] is not code or known[1].__globals__ is not frame.f_globals:
        if len(_trampolines) > 4096:
            _trampolines.clear()
        trampoline = _TEMPLATE.replace(co_filename=code.co_filename, co_firstlineno=max(key[1], 1))
        known = _trampolines[key] = (code, FunctionType(trampoline, frame.f_globals))
    return known[1](function, args, kwargs)


def site(op: str, outputs: tuple[Any, ...] = (), inputs: tuple[Any, ...] = ()) -> Site | None:
    """Where operation ``op`` (on these operands) being recorded was called from, or None if no
    category warns or ``op`` never signals (a copy that does not cast)."""
    if silent(op, inputs) or (op == "copy" and getattr(inputs[0], "dtype", None) == outputs[0].dtype):
        return None
    warned = warned_categories()
    if not warned:
        return None
    frame, outer = _user_frame_and_caller(sys._getframe(2))
    if frame is None:
        return None
    entry = _entry(outer) if outer is not None and (op in _FOLDS or op in _LINALG) else None
    code = frame.f_code
    module_globals = frame.f_globals
    filters = filters_now()
    key = (id(code), frame.f_lineno, warned, entry, id(filters))
    known = _sites.get(key)
    if known is not None and known[0] is code and known[1].module_globals is module_globals and known[1].filters is filters:
        return known[1]  # a loop records from the same lines over and over
    if len(_sites) >= SITE_ENTRIES:
        _sites.clear()
    recorded = Site(code.co_filename, key[1], module_globals, warned, entry, filters)
    _sites[key] = (code, recorded)
    return recorded


def call_site(frame: Any, warned: int, filters: Filters | None = None) -> Site | None:
    """:func:`site` for an element-wise call that can signal (no reduction: no NumPy entry)
    while the categories ``warned`` (bits, not 0) warn, looked for from ``frame`` outwards;
    cached by the user frame's code and bytecode position, whose line is then known without
    computing it (a Site cached before is found in C where built: ``known_call_site``)."""
    if filters is None:
        filters = filters_now()
    if known_call_site is not None:
        known = known_call_site(frame, warned, filters, _internal_files, _call_sites)
        if known is not None:
            return known
    internal = _internal_files
    while frame is not None:
        code = frame.f_code
        filename = code.co_filename
        inside = internal.get(filename)
        if inside is None:
            inside = internal[filename] = filename.startswith(_INTERNAL)
        if not inside:
            break
        frame = frame.f_back
    else:
        return None
    key = (id(code), frame.f_lasti, warned, id(filters))
    known = _call_sites.get(key)
    module_globals = frame.f_globals
    if known is not None and known[0] is code and known[1].module_globals is module_globals and known[1].filters is filters:
        return known[1]
    if len(_call_sites) >= SITE_ENTRIES:
        _call_sites.clear()
    recorded = Site(code.co_filename, frame.f_lineno, module_globals, warned, None, filters)
    _call_sites[key] = (code, recorded)
    return recorded


SITE_ENTRIES = 4096
_call_sites: dict[tuple[int, int, int, int], tuple[CodeType, Site]] = {}  # (id(code), bytecode offset, categories, id(filters)) -> its Site
_sites: dict[tuple[Any, ...], tuple[CodeType, Site]] = {}  # (id(code), line, categories, entry, id(filters)) -> its Site


_FOLDS = frozenset(entry.name for entry in OPCODES if entry.kind in (Kind.REDUCTION, Kind.SCAN))
_LINALG = frozenset({"linalg", "linalg_pair", "linalg_triple"})  # det and slogdet warn from numpy/linalg/_linalg.py


def _entry(frame: Any) -> Any:
    """The NumPy callable behind Shoal's outermost frame ``frame`` (None: a ufunc method or
    anything NumPy runs in C, whose warnings name the caller's line)."""
    name = frame.f_code.co_name
    if name == "__array_function__":
        return frame.f_locals.get("func")
    if name == "method":
        name = frame.f_locals.get("name", "")
    if name == "call" and frame.f_globals.get("__name__") == "shoal.numpy.linalg":
        return frame.f_locals.get("attribute")  # np.linalg's function, forwarded
    return getattr(np.ndarray, name, None)


def numpy_entry() -> Any:
    """The NumPy function or ``ndarray`` method the user called, which Shoal is running now
    (None: not known)."""
    _, outer = _user_frame_and_caller(sys._getframe(1))
    return None if outer is None else _entry(outer)


_PROBES = {"overflow": (1e308, 1e308), "invalid value": (np.inf, -np.inf), "underflow": (1e-300, 1e-300), "divide by zero": (0.0, 0.0)}
_locations: dict[tuple[Any, str], tuple[str, int, dict[str, Any]] | None] = {}


def numpy_location(entry: Any, message: str) -> tuple[str, int, dict[str, Any]] | None:
    """Where NumPy's own ``entry`` warns ``message`` from, if in NumPy's Python code (NumPy's
    ``ndarray.sum`` warns from ``numpy/_core/_methods.py``, ``np.cumsum`` from
    ``fromnumeric.py``): found once by running ``entry`` on a two-element probe under
    ``np.errstate(all="call")``, whose handler sees the Python frame NumPy would warn from (the
    warnings machinery is not touched: its registries stay valid)."""
    key = (entry, message)
    if key in _locations:
        return _locations[key]
    found: list[tuple[str, int, dict[str, Any]]] = []
    head = message.partition(" encountered in ")[0]
    probe = _PROBES.get(head)

    def handler(kind: str, _flag: int) -> None:
        frame = sys._getframe(1)
        if kind == head and not found:
            found.append((frame.f_code.co_filename, frame.f_lineno, frame.f_globals))

    if probe is not None:
        if getattr(entry, "__module__", None) == "numpy.linalg":  # a matrix: NaN makes det's LU invalid, as inf does not
            probe = np.diag((np.nan, 1.0) if head == "invalid value" else probe)
        with np.errstate(all="call", call=handler):
            try:
                entry(np.array(probe))
            except Exception:  # a probe NumPy refuses names no location
                pass
    location = found[0] if found and found[0][0].startswith(_INTERNAL[1]) else None
    _locations[key] = location
    return location


def watched(sites: dict[int, Site]) -> int:
    """The categories a batch with these sites needs the engine to check for."""
    bits = 0
    for recorded in sites.values():
        bits |= recorded.warned
        if bits == DIVIDE | OVER | UNDER | INVALID:
            break
    return bits


def emit(signals: list[tuple[int, str]], sites: dict[int, Site]) -> None:
    """Warn for each (position, NumPy's message) the engine noted, as NumPy would have at the
    line that recorded the instruction, through the warnings filters in force then."""
    now = filters_now() if signals else None
    for position, message in signals:
        recorded = sites.get(position)
        if recorded is None or not recorded.warned & _category(message):
            continue
        filename, lineno, module_globals = recorded.filename, recorded.lineno, recorded.module_globals
        if recorded.entry is not None:
            filename, lineno, module_globals = numpy_location(recorded.entry, message) or (filename, lineno, module_globals)
        if recorded.filters is None or recorded.filters is now:
            _warn_at(message, filename, lineno, module_globals)
        else:
            warn_under(recorded.filters, message, filename, lineno, module_globals)


def _category(message: str) -> int:
    for bit, text in CATEGORY_TEXT.items():
        if message.startswith(text):
            return bit
    return 0
