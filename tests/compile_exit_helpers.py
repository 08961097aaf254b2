"""Helpers for the tests of what happens to kernels being compiled when a program exits."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import psutil

from shoal.engine.node.compile.claims import CLAIM_SUFFIX, Claim, claim_path, try_claim
from shoal.engine.node.compile.process import workers_for

PATIENCE_SECONDS = 60.0  # how long a test waits for something that must happen (not a timing)


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + PATIENCE_SECONDS
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.02)


def wait_gone(processes: list[psutil.Process]) -> None:
    _, alive = psutil.wait_procs(processes, timeout=PATIENCE_SECONDS)
    assert not alive, f"still running: {alive}"


def hold_claim(kernels: Path, module_name: str) -> Claim:
    """Claim a kernel as another compiler would: compilers that want it wait until release."""
    kernels.mkdir(parents=True, exist_ok=True)
    held = try_claim(claim_path(kernels / module_name))
    assert held is not None
    return held


def waits_for_a_claim(worker: psutil.Process) -> bool:
    """True once ``worker`` has a claim file open: it got a kernel and waits for its claim."""
    try:
        return any(file.path.endswith(CLAIM_SUFFIX) for file in worker.open_files())
    except psutil.NoSuchProcess:
        return False


def compilers_for(cache: Path) -> list[psutil.Process]:
    """Compile workers running for ``SHOAL_CACHE_DIR=cache``, whoever started them."""
    return workers_for(cache)


def libraries(kernels: Path) -> list[Path]:
    return sorted(kernels.glob("shoal_kernel_*.so"))


def leftovers(kernels: Path) -> list[Path]:
    """Claims, temporary files and build directories: none may outlive the compilers."""
    patterns = ("*.claim", "*.tmp", "*.tmp.*", ".build-*", "__pycache__/*.tmp.*")
    return sorted(path for pattern in patterns for path in kernels.glob(pattern))
