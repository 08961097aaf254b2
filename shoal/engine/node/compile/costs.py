"""What compiling a kernel costs on this machine, in CPU seconds of the compile worker.

The engine compiles a kernel once the NumPy path has spent (or will spend) as much CPU time on
its structure as compiling costs, so the estimate decides how long a program runs on NumPy
tiles. The defaults were measured in the worker (its own and its linker's CPU time per request)
for the examples' 37 kernels on a 2-core AMD EPYC: starting the worker and importing Numba
0.5-0.7 s once; a kernel 0.12-0.3 s for 1-5 steps, 0.45-0.85 s for 11-36 steps, 1.0-1.4 s for
62-64 steps (about 0.15 s + 16 ms per step); and 3.1 s for the 6- and 8-step two-axis stencils
whose kernels store their rows through a ring.

Every compile the worker reports updates the estimate (a running geometric mean of measured over
modelled time per kind of kernel, and of the start-up), and the result is written to
``compile_costs.json`` next to the kernels, so later runs on this machine start from what it
measured here. A missing or unreadable file, or one that is not this user's or that other users
may write, means the defaults.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from shoal.engine.node.compile.cache_files import read_text, write_text_atomically
from shoal.private_files import private_directory

COSTS_FILE = "compile_costs.json"
LEARNING_WEIGHT = 0.5  # of a new measurement against what was remembered
SCALE_LIMITS = (0.1, 10.0)  # a measured scale outside these is taken as noise and clamped


@dataclass
class CompileCosts:
    """CPU seconds to compile a kernel: ``startup`` once per worker, then the kernel's share."""

    startup: float = 0.6  # starting the worker process and importing Numba
    kernel: float = 0.15  # any kernel, on top of its steps
    per_step: float = 0.016  # per element-wise step or reduction
    ring: float = 3.0  # a kernel that stores its rows through a ring (two-axis stencils)
    flat_scale: float = 1.0  # measured / modelled, kernels without a ring
    ring_scale: float = 1.0  # measured / modelled, kernels with a ring

    def kernel_seconds(self, steps: int, ring: bool) -> float:
        """The worker's CPU time for one kernel of ``steps`` steps, the worker already running."""
        modelled = self._modelled(steps, ring)
        return modelled * (self.ring_scale if ring else self.flat_scale)

    def seconds(self, steps: int, ring: bool, worker_running: bool) -> float:
        """The CPU time compiling this kernel costs, starting the worker if it is not running."""
        return (0.0 if worker_running else self.startup) + self.kernel_seconds(steps, ring)

    def learn(self, steps: int, ring: bool, measured: float, started_worker: bool) -> None:
        """Fold one measured compile (CPU seconds, the worker's start-up included if this
        request started it) into the estimate."""
        if not math.isfinite(measured) or measured <= 0.0:
            return
        if started_worker:
            # The start-up is what remains after the kernel's own (estimated) share.
            share = self.kernel_seconds(steps, ring)
            self.startup = _mix(self.startup, max(0.05, measured - share))
            return
        ratio = min(max(measured / self._modelled(steps, ring), SCALE_LIMITS[0]), SCALE_LIMITS[1])
        if ring:
            self.ring_scale = _mix(self.ring_scale, ratio)
        else:
            self.flat_scale = _mix(self.flat_scale, ratio)

    def _modelled(self, steps: int, ring: bool) -> float:
        return self.kernel + self.per_step * steps + (self.ring if ring else 0.0)


def _mix(remembered: float, measured: float) -> float:
    """A geometric running mean: one odd measurement moves the estimate by its square root."""
    return math.exp((1 - LEARNING_WEIGHT) * math.log(remembered) + LEARNING_WEIGHT * math.log(measured))


def load(directory: Path) -> CompileCosts:
    """The costs remembered in ``directory`` (the defaults where there are none)."""
    text = read_text(directory / COSTS_FILE)
    try:
        stored = json.loads(text) if text is not None else None
    except ValueError:
        return CompileCosts()
    if not isinstance(stored, dict):
        return CompileCosts()
    known = {f.name for f in fields(CompileCosts)}
    values = {}
    for name, value in stored.items():
        if name in known and isinstance(value, (int, float)) and math.isfinite(value) and value > 0:
            values[name] = float(value)
    return CompileCosts(**values)


def save(costs: CompileCosts, directory: Path) -> None:
    """Remember ``costs`` in ``directory`` (silently not, where it cannot be written or other
    users could write in it)."""
    try:
        directory = private_directory(directory)  # an unsafe one raises: nothing is written
        write_text_atomically(directory / COSTS_FILE, json.dumps(asdict(costs)) + "\n")
    except OSError:
        return
