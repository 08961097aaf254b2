"""Run one (tool, example) program as a child process and read what it reports.

Every program prints ``checksum: X`` and ``time: SECONDS`` (the timed section only). The child's
peak resident memory comes from ``os.wait4``: the rusage of exactly that child.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from shoal.bench.stats import Totals, parse_stats

TOOLS = ("numpy", "numexpr", "dask", "shoal")


class BenchError(RuntimeError):
    """A benchmark program failed or printed something unexpected."""


@dataclass(frozen=True)
class Sample:
    """One run of one program."""

    seconds: float
    checksum: float
    peak_rss_bytes: int
    stats: Totals | None  # node engine totals (Shoal runs only)


def command(tool: str, program: Path, size: int, arguments: tuple[str, ...]) -> list[str]:
    """The command line that runs ``program`` (an example or a variant) under ``tool``."""
    python = sys.executable
    args = [str(program), str(size), *arguments]
    if tool == "shoal":
        return [python, "-m", "shoal", *args]
    if tool in TOOLS:
        return [python, *args]
    raise ValueError(f"unknown tool {tool!r}; known tools: {', '.join(TOOLS)}")


def _value(output: str, key: str, argv: list[str]) -> float:
    prefix = f"{key}:"
    for line in output.splitlines():
        if line.startswith(prefix):
            return float(line[len(prefix) :].strip())
    raise BenchError(f"{' '.join(argv)} printed no {prefix!r} line; its output was:\n{output}")


def _wait(process: subprocess.Popen, timeout: float) -> tuple[int, int]:
    """Reap ``process`` with ``os.wait4``; returns (exit code, peak RSS in bytes)."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            process.returncode = os.waitstatus_to_exitcode(status)
            return process.returncode, usage.ru_maxrss * 1024  # Linux reports kilobytes
        if time.monotonic() > deadline:
            os.killpg(process.pid, signal.SIGKILL)
            os.wait4(process.pid, 0)
            process.returncode = -signal.SIGKILL
            raise BenchError(f"timed out after {timeout:.0f} s: {' '.join(process.args)}")
        time.sleep(0.01)


def run(argv: list[str], cwd: Path, timeout: float, env: dict[str, str] | None = None) -> Sample:
    """Run ``argv`` in ``cwd`` and return its reported time, checksum, peak memory and stats.

    ``SHOAL_STATS=1`` is set for the child, so a Shoal run prints the node engine's totals at
    exit (:mod:`shoal.engine.node.stats`); other tools never import Shoal and ignore it.
    """
    env = {**(os.environ if env is None else env), "SHOAL_STATS": "1"}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(
            argv, cwd=cwd, stdout=out, stderr=err, env=env, start_new_session=True
        )
        try:
            code, peak = _wait(process, timeout)
        except BaseException:
            if process.returncode is None:
                os.killpg(process.pid, signal.SIGKILL)
                os.wait4(process.pid, 0)
                process.returncode = -signal.SIGKILL
            raise
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
    if code != 0:
        raise BenchError(f"{' '.join(argv)} exited with status {code}:\n{stderr[-4000:]}")
    return Sample(
        seconds=_value(stdout, "time", argv),
        checksum=_value(stdout, "checksum", argv),
        peak_rss_bytes=peak,
        stats=parse_stats(stderr),
    )
