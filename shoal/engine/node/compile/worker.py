"""A separate process that compiles kernel modules so compiling never holds the engine's GIL.

It reads one command per line on stdin. A job (``process.Job``: a module path, the
kernel's steps and whether it has a ring): import the module and call its
``_warmup()`` (which compiles the kernel and stores the machine code in Numba's disk cache),
write the kernel as a shared library next to it where it can (``native.py``), and answer one
line: ``ok <seconds>``, the CPU time it has used so far (its own and its linker's, start-up
included), ``ok <seconds> cached`` if another compiler had meanwhile put the kernel on disk, or
``error <message>``. ``detach <seconds>``: the engine is exiting and reads no more answers;
compile what it sent, then exit, and exit at the latest after ``<seconds>`` however far it got;
the compile costs it measures from then on it remembers itself (``costs.py``).
The end of stdin without ``detach`` (the engine died) is a detach with
:data:`ORPHANED_LIMIT_SECONDS`.

Each kernel is compiled under its claim (``claims.py``): a kernel that another compiler
is compiling is waited for, and then found on disk instead of compiled again. The engine starts
the worker in a session of its own with stderr to ``/dev/null``, so once detached it holds no
terminal and no pipe of the program that started it.
"""

from __future__ import annotations

import importlib.util
import os
import queue
import shutil
import sys
import threading
import time
import types
from pathlib import Path
from typing import BinaryIO

from shoal.engine.node.compile import costs as compile_costs
from shoal.engine.node.compile.claims import Claim, claim, claim_path, remove_stale
from shoal.engine.node.compile.native import available, build, build_prefix, library_path
from shoal.engine.node.compile.process import Job
from shoal.private_files import private_directory

ORPHANED_LIMIT_SECONDS = 120.0  # the engine died while the worker compiled: finish within this
OVERDUE_EXIT_STATUS = 3  # the worker gave up at its deadline


def load_and_warm(path: Path) -> object:
    """Import the kernel module at ``path`` under its own name and compile (or load) it."""
    name = path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load kernel module {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # Numba's disk cache re-imports the module by name
    try:
        spec.loader.exec_module(module)
        module._warmup()
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def load_in_memory(name: str, source: str) -> types.ModuleType:
    """Run the kernel module ``source`` as module ``name`` without a file and compile its
    kernel: where no cache directory can be trusted. Numba cannot cache a kernel without a
    file, so its ``cache=True`` is dropped."""
    module = types.ModuleType(name)
    code = compile(source.replace("cache=True", "cache=False"), f"<kernel module {name}>", "exec")
    exec(code, module.__dict__)
    module._warmup()
    return module


def cpu_seconds() -> float:
    """CPU time of this process and of the children it waited for (the linker)."""
    children = os.times()
    return time.process_time() + children.children_user + children.children_system


class WorkerState:
    """What the worker holds (the claim of the kernel it compiles) and whether it is detached."""

    def __init__(self) -> None:
        self.detached = threading.Event()
        self._lock = threading.Lock()
        self._held: tuple[Claim, Path] | None = None

    def hold(self, held: Claim | None, module: Path) -> None:
        with self._lock:
            if self._held is not None:
                self._held[0].release()
            self._held = None if held is None else (held, module)

    def detach(self, seconds: float) -> None:
        """From now on answer nobody, and exit after ``seconds`` at the latest."""
        if self.detached.is_set():
            return
        self.detached.set()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)  # what is still written there goes nowhere, not into a broken pipe
        os.close(devnull)
        timer = threading.Timer(seconds, self.give_up)
        timer.daemon = True
        timer.start()

    def give_up(self) -> None:
        """Overdue: release the claim, remove this process's partial files, exit at once."""
        self._lock.acquire()  # never released: the process ends here
        if self._held is not None:
            held, module = self._held
            held.release()
            for partial in (module.parent / "__pycache__").glob(f"{module.stem}.*.tmp.*"):
                partial.unlink(missing_ok=True)  # Numba's cache files being written
            for leftover in module.parent.glob(f"{build_prefix()}*"):
                shutil.rmtree(leftover, ignore_errors=True)  # a shared library being linked
        os._exit(OVERDUE_EXIT_STATUS)


def compile_module(path: Path, state: WorkerState) -> str:
    """Compile the kernel module at ``path`` under its claim; the answer line."""
    held = claim(claim_path(path))
    state.hold(held, path)
    library = library_path(path.parent, path.stem)
    try:
        if available(library):
            return f"ok {cpu_seconds():.6f} cached"
        module = load_and_warm(path)
        build(module, path.stem, library)
    except Exception as error:
        message = f"{type(error).__name__}: {error}".replace("\n", " ")
        return f"error {message}"
    finally:
        state.hold(None, path)
    return f"ok {cpu_seconds():.6f}"


def read_commands(stream: BinaryIO, requests: queue.SimpleQueue[Job | None], state: WorkerState) -> None:
    """Queue the jobs from ``stream``; detach on ``detach`` and at its end."""
    for line in stream:
        command = line.decode(errors="replace").strip()
        if command.startswith("detach "):
            try:
                state.detach(float(command.split()[1]))
            except (IndexError, ValueError):
                state.detach(ORPHANED_LIMIT_SECONDS)
        elif command:
            requests.put(Job.parse(command))
    state.detach(ORPHANED_LIMIT_SECONDS)
    requests.put(None)


def trusted_directory(directory: Path) -> bool:
    """True if no other user could have written in ``directory`` (checked by the engine too);
    then the claims of compilers that were killed are removed from it."""
    try:
        if private_directory(directory) != directory.resolve():
            return False
    except OSError:
        return False
    remove_stale(directory)
    return True


def remember_cost(job: Job, measured: float, started_worker: bool) -> None:
    """Fold a compile measured while detached into the costs kept next to the kernels."""
    if job.steps < 0:
        return
    costs = compile_costs.load(job.path.parent)
    costs.learn(job.steps, job.ring, measured, started_worker)
    compile_costs.save(costs, job.path.parent)


def main() -> None:
    requests: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
    state = WorkerState()
    reader = threading.Thread(target=read_commands, args=(sys.stdin.buffer, requests, state), daemon=True)
    reader.start()
    trusted: dict[Path, bool] = {}
    reported = 0.0  # the CPU time of the last answer: each compile's cost is the difference
    while (job := requests.get()) is not None:
        if job.path.parent not in trusted:
            trusted[job.path.parent] = trusted_directory(job.path.parent)
        if trusted[job.path.parent]:
            answer = compile_module(job.path, state)
        else:
            answer = f"error the kernel cache {job.path.parent} is not safe to use"
        words = answer.split()
        if state.detached.is_set():
            if words[0] == "ok" and len(words) == 2:
                remember_cost(job, float(words[1]) - reported, started_worker=reported == 0.0)
        else:
            try:
                print(answer, flush=True)
            except OSError:
                state.detach(ORPHANED_LIMIT_SECONDS)
        if words[0] == "ok":
            reported = float(words[1])


if __name__ == "__main__":
    main()
