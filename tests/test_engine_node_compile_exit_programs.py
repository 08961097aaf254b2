"""Programs under ``python -m shoal`` that exit while their kernel is being compiled: they return
at once (their output captured through pipes, as a test harness or ``| head`` reads it), however
they end; the compiler finishes alone, exits, and leaves the kernel and nothing else; a second
program does not compile the same kernel again.

A claim held by the test keeps the kernel "being compiled" until the test lets go, so the
programs provably exit while it is, and nothing depends on how long compiling takes.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from compile_exit_helpers import (
    compilers_for,
    hold_claim,
    leftovers,
    libraries,
    wait_gone,
)

from shoal.engine.node.compile import costs as compile_costs

pytest.importorskip("numba")
pytestmark = [pytest.mark.full, pytest.mark.timeout(240)]

PROGRAM = """
    import os, signal, sys, time
    import numpy as np

    a = np.arange(2_000_000.0)
    print(float(np.sqrt(a * 2.0 + 1.0).sum()), flush=True)
    if sys.argv[1] == "raise":
        raise ValueError("the program fails after its work")
    if sys.argv[1] == "kill":  # once the compiler has its kernel (it waits for the claim)
        import psutil
        me = psutil.Process()
        while not any(f.path.endswith(".claim") for c in me.children() for f in c.open_files()):
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGKILL)
"""


def run(program: Path, cache: Path, ending: str = "return", **settings: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "SHOAL_CACHE_DIR": str(cache), "SHOAL_DIRECT_WORK": "0", **settings}
    return subprocess.run([sys.executable, "-m", "shoal", str(program), ending], env=environment, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("program") / "app.py"
    path.write_text(textwrap.dedent(PROGRAM))
    return path


@pytest.fixture(scope="module")
def modules(program, tmp_path_factory) -> list[str]:
    """The program's kernel modules, compiled once in a scratch cache to learn their names."""
    scratch = tmp_path_factory.mktemp("kernel-names")
    assert run(program, scratch, SHOAL_COMPILE="sync").returncode == 0
    return sorted(path.name for path in (scratch / "kernels").glob("shoal_kernel_*.py"))


@pytest.fixture
def cache(tmp_path) -> Path:
    """An empty cache whose compile costs are so low that the first run compiles its kernels."""
    costs = compile_costs.CompileCosts(startup=1e-7, kernel=1e-7, per_step=1e-7)
    compile_costs.save(costs, tmp_path / "kernels")
    return tmp_path


@pytest.mark.parametrize(("ending", "status"), [("return", 0), ("raise", 1), ("kill", -9)])
def test_a_program_exits_while_its_kernel_compiles_and_the_next_run_finds_it(program, modules, cache, ending, status):
    kernels = cache / "kernels"
    claims = [hold_claim(kernels, module) for module in modules]
    try:
        done = run(program, cache, ending)  # would never return if anything waited for the claims
        assert done.returncode == status, done.stderr
        assert float(done.stdout.split()[0]) == pytest.approx(2666666666.75)  # its work was done
        compilers = compilers_for(cache)
        assert len(compilers) == 1 and not libraries(kernels)  # still compiling, alone
    finally:
        for held in claims:
            held.release()
    wait_gone(compilers)
    assert [path.stem for path in libraries(kernels)] == [module.removesuffix(".py") for module in modules]
    assert not leftovers(kernels)
    again = run(program, cache, SHOAL_STATS="1")
    assert int(re.search(r"compiled_block_ops=(\d+)", again.stderr).group(1)) > 0
    assert not compilers_for(cache)


def test_a_second_program_does_not_compile_again_the_kernel_being_compiled(program, modules, cache):
    kernels = cache / "kernels"
    claims = [hold_claim(kernels, module) for module in modules]
    try:
        assert run(program, cache).returncode == 0
        (first,) = compilers_for(cache)  # waits for the claims: the kernels are "being compiled"
        assert run(program, cache, SHOAL_COMPILE="sync").returncode == 0  # they are done meanwhile
        built = {path: path.stat().st_ino for path in libraries(kernels)}
        assert len(built) == len(modules)
    finally:
        for held in claims:
            held.release()
    wait_gone([first])
    assert {path: path.stat().st_ino for path in libraries(kernels)} == built  # found, not rebuilt
    assert not leftovers(kernels)
