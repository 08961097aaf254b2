"""``python -m shoal.smp [-f FACTOR] app.py [args...]``: run a program with per-pool thread budgets."""

from __future__ import annotations

import argparse
import os
import runpy
import sys

from shoal.threads import smp
from shoal.threads.coordination import composability_mode, install_call_regions


def _factor(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"factor must be a positive number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"factor must be a positive number, got {text!r}")
    return value


def parser() -> argparse.ArgumentParser:
    """The command line of ``python -m shoal.smp``."""
    result = argparse.ArgumentParser(
        prog="python -m shoal.smp",
        description=(
            "Run a Python program so that each worker of its multiprocessing / concurrent.futures "
            "pools gives its inner libraries max(1, cores / workers * FACTOR) threads. With "
            "SHOAL_COMPOSABILITY=exclusive|counting, large NumPy linear-algebra calls also take "
            "tokens from the node-wide semaphore."
        ),
    )
    result.add_argument("-f", "--factor", type=_factor, default=smp.DEFAULT_FACTOR,
                        help="oversubscription factor (default %(default)s)")  # fmt: skip
    result.add_argument("program", help="the Python file to run")
    result.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the program")
    return result


def main(argv: list[str] | None = None) -> None:
    """Parse the command line, install the patches and run the program as ``__main__``."""
    options = parser().parse_args(argv)
    if not os.path.isfile(options.program):
        parser().error(f"no such program file: {options.program!r}")
    try:
        mode = composability_mode()
    except ValueError as error:
        parser().error(str(error))
    smp.install(options.factor)
    if mode is not None:
        install_call_regions()
    sys.argv = [options.program, *options.args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(options.program)))
    runpy.run_path(options.program, run_name="__main__")
