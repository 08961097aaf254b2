"""Run an unmodified NumPy program so that its own code uses :mod:`shoal.numpy`.

Only the program and the modules that live next to it (found in the program's directory, the way
``python app.py`` finds them) see ``numpy`` as ``shoal.numpy``; every other module, third-party
libraries included, keeps real NumPy, and ``sys.modules["numpy"]`` stays real NumPy.

The redirection is one replacement of :func:`builtins.__import__`: an ``import`` statement passes
the importing module's globals, so the hook can tell a user module from a library by where the
module's file lies. Submodules map to Shoal's own (``numpy.linalg`` -> ``shoal.numpy.linalg``)
where Shoal has them and stay NumPy's otherwise.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import importlib.machinery
import importlib.util
import io
import os
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from shoal import library_adapters
from shoal.interrupts import hold_interrupts
from shoal.settings import FULL_TRACEBACK

SOURCE_PACKAGE = "numpy"
TARGET_PACKAGE = "shoal.numpy"


class ProgramNotFound(OSError):
    """The program file cannot be opened."""


@dataclass(eq=False)  # hashable, as the builtin it replaces (toolz keys a dict by builtins)
class ImportRedirect:
    """``__import__`` replacement that maps ``numpy`` to ``shoal.numpy`` for user modules.

    ``source`` and ``target`` are parameters so the mechanism can be tested on its own.
    """

    program_directory: Path
    source: str = SOURCE_PACKAGE
    target: str = TARGET_PACKAGE
    original_import: Callable[..., types.ModuleType] = builtins.__import__
    _user_files: dict[tuple[str, str], bool] = field(default_factory=dict)
    _targets: dict[str, str] = field(default_factory=dict)

    def __call__(
        self,
        name: str,
        globals: Mapping[str, object] | None = None,
        locals: Mapping[str, object] | None = None,
        fromlist: Sequence[str] | None = (),
        level: int = 0,
    ) -> types.ModuleType:
        if level != 0 or not self._is_source(name) or not self.is_user_module(globals):
            module = self.original_import(name, globals, locals, fromlist, level)
            if name.partition(".")[0] in library_adapters.ROOTS:
                library_adapters.adapt_loaded()
            return module
        target = self.target_of(name)
        module = self.original_import(target, globals, locals, fromlist, 0)
        library_adapters.adapt_loaded()  # ``from numpy.polynomial import polynomial``
        if fromlist:
            return module
        # ``import numpy.linalg`` binds the name ``numpy``: hand back the package, not ``shoal``.
        return sys.modules[self.target]

    def _is_source(self, name: str) -> bool:
        return name == self.source or name.startswith(self.source + ".")

    def target_of(self, name: str) -> str:
        """Module that ``import name`` gives a user module: Shoal's if it exists, else NumPy's."""
        cached = self._targets.get(name)
        if cached is not None:
            return cached
        if name == self.source:
            resolved = self.target
        else:
            candidate = self.target + name[len(self.source) :]
            try:
                spec = importlib.util.find_spec(candidate)
            except ModuleNotFoundError:
                spec = None
            resolved = candidate if spec is not None else name
        self._targets[name] = resolved
        return resolved

    def is_user_module(self, module_globals: Mapping[str, object] | None) -> bool:
        """Whether the module owning these globals is the program or one of its local modules."""
        if not module_globals:
            return False
        name = module_globals.get("__name__")
        file = module_globals.get("__file__")
        if not isinstance(name, str) or not isinstance(file, str):
            return False
        key = (name, file)
        known = self._user_files.get(key)
        if known is None:
            known = self._lies_in_program_directory(name, file)
            self._user_files[key] = known
        return known

    def _lies_in_program_directory(self, name: str, file: str) -> bool:
        try:
            relative = Path(os.path.realpath(file)).relative_to(self.program_directory)
        except ValueError:
            return False
        if name == "__main__":
            return True
        # The module's top-level package must sit directly in the program's directory; this
        # keeps out, say, a virtual environment's site-packages below that directory.
        top_level = name.partition(".")[0]
        first = relative.parts[0] if relative.parts else ""
        return first == top_level or first.partition(".")[0] == top_level


@dataclass
class Program:
    """A program file and the arguments it is run with."""

    path: str
    arguments: list[str]

    def absolute_path(self) -> Path:
        return Path(os.path.abspath(self.path))

    def directory(self) -> Path:
        """The directory ``python app.py`` puts first on ``sys.path`` (symlinks resolved)."""
        return Path(os.path.realpath(self.path)).parent

    def read(self) -> bytes:
        try:
            with io.open_code(str(self.path)) as source:
                return source.read()
        except OSError as error:
            raise ProgramNotFound(error.errno, error.strerror, self.path) from None


def _prepare_sys_path(program_directory: Path) -> None:
    """Put the program's directory first, as ``python app.py`` does, keeping Shoal importable."""
    shoal_root = str(Path(__file__).resolve().parent.parent)
    if sys.path:
        sys.path[0] = str(program_directory)
    else:
        sys.path.append(str(program_directory))
    if shoal_root not in sys.path:
        sys.path.append(shoal_root)


def _main_module(program: Program) -> types.ModuleType:
    module = types.ModuleType("__main__")
    module.__file__ = str(program.absolute_path())
    module.__loader__ = importlib.machinery.SourceFileLoader(
        "__main__", str(program.absolute_path())
    )
    module.__spec__ = None
    module.__builtins__ = builtins
    return module


FRONTEND_DIRECTORY = str(Path(__file__).resolve().parent / "numpy") + os.sep
PACKAGE_DIRECTORY = str(Path(__file__).resolve().parent) + os.sep
# The frame NumPy's calls made for the program run in (``shoal.fp_warnings.at_user_line``): it
# carries the program's file and line, and the module that makes it.
USER_LINE_FILE = str(Path(__file__).resolve().parent / "fp_warnings.py")


def _user_traceback(
    traceback: types.TracebackType | None, code: types.CodeType, interrupted: bool = False
) -> types.TracebackType | None:
    """The traceback as ``python app.py`` with NumPy would show it.

    The runner's own frames are dropped, so it starts at the program's first frame. An error
    raised inside Shoal's frontend (a NumPy error found at the call, such as a shape mismatch)
    loses the frontend's frames, so it ends at the program's line as NumPy's C code would;
    so does a Ctrl-C (``interrupted``) that came while Shoal ran recorded work, wherever in
    Shoal. ``SHOAL_FULL_TRACEBACK=1`` keeps them.
    """
    start = traceback
    while start is not None and start.tb_frame.f_code is not code:
        start = start.tb_next
    if start is None:
        return traceback
    if FULL_TRACEBACK.value():
        return start
    return _without_frontend_tail(start, interrupted)


def _without_frontend_tail(start: types.TracebackType, interrupted: bool = False) -> types.TracebackType:
    """``start`` with the run of Shoal's frontend frames at its end cut off (see
    :func:`_user_traceback`), changed in place."""
    entries = []
    entry: types.TracebackType | None = start
    while entry is not None:
        entries.append(entry)
        entry = entry.tb_next
    # The run of Shoal's frontend frames at the end, with NumPy's own frames among or below them
    # (a probe, a fallback's call): if Shoal's are in it, the error came through Shoal and ends
    # at the program's line; NumPy's frames alone (the program called NumPy) stay.
    numpy = sys.modules.get("numpy")
    library = os.path.dirname(numpy.__file__) + os.sep if numpy is not None else None
    kept = len(entries)
    if interrupted:
        while kept > 1 and _in_shoal_or(entries[kept - 1].tb_frame.f_code, library):
            kept -= 1
        entries[kept - 1].tb_next = None
        return start
    while kept > 1 and _frontends_or_in(entries[kept - 1].tb_frame.f_code, library):
        kept -= 1
    if not any(_frontends(entry.tb_frame.f_code) for entry in entries[kept:]):
        kept = len(entries)
    entries[kept - 1].tb_next = None
    return start


def _frontends(code: types.CodeType) -> bool:
    """True for a frame of Shoal's frontend, or of the NumPy calls it makes for the program
    (their module is loaded only if the program made such a call)."""
    filename = code.co_filename
    if filename.startswith(FRONTEND_DIRECTORY) or filename == USER_LINE_FILE:
        return True
    user_line = sys.modules.get("shoal.fp_warnings")
    return user_line is not None and code.co_name == user_line.TRAMPOLINE_NAME


def _frontends_or_in(code: types.CodeType, library: str | None) -> bool:
    return _frontends(code) or (library is not None and code.co_filename.startswith(library))


def _in_shoal_or(code: types.CodeType, library: str | None) -> bool:
    """True for a frame of any of Shoal's modules (or of ``library``, Python's own ``contextlib``
    that Shoal's context managers run in, or code made at run time, as a dataclass's
    ``__init__``, whose file is ``<string>``)."""
    filename = code.co_filename
    return filename.startswith((PACKAGE_DIRECTORY, "<")) or filename == contextlib.__file__ or (library is not None and filename.startswith(library))


def load_engine() -> None:
    """Import the modules of the component stack the settings name (the node engine's are about
    0.1-0.3 s of imports) before the program starts, so that its first large array, often inside
    the part of the program it times, does not pay for them. Nothing is created: a program whose
    arrays all stay small still starts no threads, and a wrong engine name is still reported
    where the program first needs the engine."""
    from shoal.engine.registry import component_class, stack_names

    try:
        for name in stack_names():
            component_class(name)
    except (ImportError, TypeError, ValueError):
        pass


def abandon_pending_work() -> None:
    """Drop what the program recorded and has not run, if it used Shoal's runtime at all."""
    runtime = sys.modules.get("shoal.runtime")
    if runtime is not None:
        runtime.abandon()


def flush_pending_work() -> None:
    """Run everything the program recorded, if it used Shoal's runtime at all."""
    runtime = sys.modules.get("shoal.runtime")
    if runtime is not None:
        runtime.flush()


def fallbacks_used() -> dict[str, int]:
    """NumPy functions the program ran through Shoal's fallback, with call counts."""
    frontend = sys.modules.get(TARGET_PACKAGE)
    report = getattr(frontend, "fallbacks_used", None)
    return dict(report()) if report is not None else {}


def format_fallback_report(used: Mapping[str, int]) -> str:
    """The ``--fallbacks`` report, one function a line, most used first."""
    if not used:
        return "shoal: the program used no NumPy fallbacks\n"
    lines = [f"shoal: NumPy fallbacks used by the program ({len(used)} functions):"]
    width = max(len(name) for name in used)
    for name, count in sorted(used.items(), key=lambda item: (-item[1], item[0])):
        lines.append(f"  {name:<{width}}  {count} call{'s' if count != 1 else ''}")
    return "\n".join(lines) + "\n"


def _trim_chained(error: BaseException) -> None:
    """The exceptions ``error`` was raised from or during (``raise ... from``, an error in an
    ``except`` block), which the interpreter prints above it: their tracebacks too end at the
    program's line where they came through Shoal's frontend."""
    if FULL_TRACEBACK.value():
        return
    seen = {id(error)}
    chained = [error.__cause__, error.__context__]
    while chained:
        link = chained.pop()
        if link is None or id(link) in seen:
            continue
        seen.add(id(link))
        if link.__traceback__ is not None:
            _without_frontend_tail(link.__traceback__)
        chained += [link.__cause__, link.__context__]


def _report_uncaught_later(error: BaseException, traceback: types.TracebackType | None) -> None:
    """Let the interpreter report ``error`` with the program's traceback.

    Re-raising ``error`` out of ``python -m shoal`` makes the interpreter do what it does for
    ``python app.py``: print through ``sys.excepthook``, run ``atexit`` handlers, exit with 1
    (or die of SIGINT for KeyboardInterrupt). Only the traceback shown is swapped for the trimmed
    one, so the runner's frames do not appear.
    """
    user_hook = sys.excepthook

    def hook(
        kind: type[BaseException], value: BaseException, shown: types.TracebackType | None
    ) -> None:
        sys.excepthook = user_hook
        if value is error:
            # The interpreter's hook prints the exception's own ``__traceback__``.
            shown = traceback
            value.with_traceback(traceback)
        user_hook(kind, value, shown)

    sys.excepthook = hook


def run(program: Program) -> None:
    """Run ``program`` as ``__main__`` with its own code seeing ``shoal.numpy`` as ``numpy``.

    Returns when the program ends normally; raises what the program raised otherwise
    (``SystemExit`` included), after the final flush, so the interpreter exits as for
    ``python app.py``. Raises :class:`ProgramNotFound` when the file cannot be read.
    """
    source = program.read()
    directory = program.directory()
    sys.argv = [program.path, *program.arguments]
    _prepare_sys_path(directory)
    builtins.__import__ = ImportRedirect(directory)

    module = _main_module(program)
    sys.modules["__main__"] = module
    hold_interrupts()  # Ctrl-C waits for the batch in hand (shoal.interrupts)
    code: types.CodeType | None = None
    try:
        code = compile(source, str(program.absolute_path()), "exec", dont_inherit=True)
        exec(code, module.__dict__)
    except SystemExit:
        flush_pending_work()
        raise
    except BaseException as error:
        interrupted = isinstance(error, KeyboardInterrupt)
        trimmed = _user_traceback(error.__traceback__, code, interrupted) if code is not None else None
        _trim_chained(error)
        # The program's own error is what it reports; work it left pending is finished on a
        # best-effort basis, since that work may fail for the very same reason. After Ctrl-C
        # nothing more runs, as under ``python app.py``, but what exit handlers read.
        if interrupted:
            abandon_pending_work()
        else:
            with contextlib.suppress(Exception, KeyboardInterrupt):
                flush_pending_work()
        _report_uncaught_later(error, trimmed)
        raise
    flush_pending_work()
