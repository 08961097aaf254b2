"""``python -m shoal``: run a NumPy program on every core, or one of Shoal's tools.

python -m shoal [--fallbacks] program.py [arguments...]
python -m shoal info
python -m shoal bench [arguments...]
python -m shoal serve [--bind HOST:PORT] [--token-file F] [--tls-cert C --tls-key K]
python -m shoal trace-summary TRACE.json
"""

from __future__ import annotations

import atexit
import importlib
import os
import sys
import types
from collections.abc import Sequence

USAGE = """\
usage: python -m shoal [--fallbacks] program.py [arguments...]
       python -m shoal info
       python -m shoal bench [arguments...]
       python -m shoal serve [--bind HOST:PORT] [--token-file F] [--tls-cert C --tls-key K]
       python -m shoal trace-summary TRACE.json

Runs program.py as `python program.py` would, with its own `import numpy` served by Shoal.

options:
  --fallbacks   at exit, report to stderr the NumPy functions Shoal ran through its fallback
  -h, --help    show this message and exit
  --version     show Shoal's version and exit

commands:
  info          the engine stack, kernel back end, settings, cores and libraries in use here
  bench         run Shoal's benchmarks side by side with their peers
  serve         run array work for programs that set SHOAL_REMOTE (shoal serve --help)
  trace-summary per-category totals of a trace written with SHOAL_TRACE=TRACE.json
"""

EXIT_USAGE = 2


def _usage_error(message: str) -> int:
    sys.stderr.write(f"{USAGE}\nshoal: error: {message}\n")
    return EXIT_USAGE


def _optional_module(name: str) -> types.ModuleType | None:
    """Import ``name`` if it exists in this installation; errors inside it still propagate."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name is not None and name.startswith(error.name):
            return None
        raise


def _info(arguments: Sequence[str]) -> int:
    if arguments:
        return _usage_error(f"info takes no arguments, got {' '.join(arguments)!r}")
    cluster = _optional_module("shoal.cluster.info")
    extra = cluster.lines() if cluster is not None else []
    session = _optional_module("shoal.cluster.session")
    if session is not None and session.current() is not None and session.current().rank != 0:
        return 0  # under mpiexec, rank 0 prints for every rank
    from shoal.info import report

    threads = _optional_module("shoal.threads.info")
    text = "\n".join([report(), *extra, *([threads.report()] if threads is not None else [])])
    try:
        print(text, flush=True)
    except BrokenPipeError:  # `shoal info | head`: the reader has gone, so stop without a traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0



def _bench(arguments: Sequence[str]) -> int:
    bench = _optional_module("shoal.bench")
    if bench is None:
        sys.stderr.write("shoal: error: `shoal bench` is not available in this installation\n")
        return EXIT_USAGE
    return int(bench.main(list(arguments)) or 0)


def _report_fallbacks() -> None:
    from shoal.runner import fallbacks_used, format_fallback_report

    sys.stderr.write(format_fallback_report(fallbacks_used()))
    sys.stderr.flush()


def _run_program(path: str, arguments: Sequence[str], report_fallbacks: bool) -> int:
    from shoal.threads.libraries import shorten_blas_spinning

    shorten_blas_spinning()
    from shoal.runner import Program, ProgramNotFound, load_engine, run

    program = Program(path, list(arguments))
    try:
        program.read()
    except ProgramNotFound as error:
        sys.stderr.write(
            f"shoal: can't open file {os.path.abspath(path)!r}: "
            f"[Errno {error.errno}] {error.strerror}\n"
        )
        return EXIT_USAGE
    cluster = _optional_module("shoal.cluster.session")
    if cluster is not None and cluster.launched():
        from shoal.cluster.guard import guard

        guard()  # from here on this process is the rank; its parent names a signal that kills it
        session = cluster.start()  # under mpiexec: rank 0 runs the program, the others serve it
        if session.rank != 0:
            from shoal.cluster.worker import serve

            return serve(session)
    if report_fallbacks:
        atexit.register(_report_fallbacks)
    from shoal import trace

    trace.from_settings()
    load_engine()
    if cluster is None or not cluster.launched():
        run(program)
        return 0
    try:
        run(program)
    except BaseException as error:
        if cluster.in_forked_child():  # the program forked and this is the child (os.fork)
            cluster.end_forked_child(error)
        raise
    if cluster.in_forked_child():
        cluster.end_forked_child(None)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m shoal`` and of the ``shoal`` command; returns the exit code."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    report_fallbacks = False
    while arguments and arguments[0].startswith("-") and arguments[0] != "-":
        option = arguments.pop(0)
        if option in ("-h", "--help"):
            sys.stdout.write(USAGE)
            return 0
        if option == "--version":
            import shoal

            print(f"shoal {shoal.__version__}")
            return 0
        if option == "--fallbacks":
            report_fallbacks = True
        elif option == "--":
            break
        else:
            return _usage_error(f"unknown option {option!r}")
    if not arguments:
        return _usage_error("no program given")
    first, rest = arguments[0], arguments[1:]
    if not report_fallbacks and first == "info":
        return _info(rest)
    if not report_fallbacks and first == "bench":
        return _bench(rest)
    if not report_fallbacks and first == "serve":
        from shoal.proxy.serve import main as serve

        return serve(rest)
    if not report_fallbacks and first == "trace-summary":
        from shoal.trace_summary import main as trace_summary

        return trace_summary(rest)
    return _run_program(first, rest, report_fallbacks)


if __name__ == "__main__":
    sys.exit(main())
