"""The node engine's configuration: one frozen dataclass, built from Shoal's settings.

Every field may also be given as text (``NodeConfig(compile="off")``); it is parsed as the
setting of the same meaning would be, and a bad value is a ValueError naming that setting.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from shoal import settings
from shoal.bytecode import VerifyLimits
from shoal.bytecode.boundary import VerifyAtExecute, execute_limits
from shoal.engine.node.compile.kernel_cache import CompileMode
from shoal.engine.node.compile.process import ExitMode


class Schedule(enum.Enum):
    """Which ready block operation the pool runs first."""

    PROGRAM = "program"  # the earliest in program order
    REVERSE = "reverse"  # the latest: a legal order that tests use to show no dependency is missing


class TileLoops(enum.Enum):
    """Whether fused groups run through NumPy's inner loops before their kernels are compiled."""

    ON = "on"
    OFF = "off"


def _cores() -> int:
    from shoal.threads import available_cores

    return available_cores()


@dataclass(frozen=True)
class NodeConfig:
    """Settings of one node engine (see ``shoal.settings`` for each one's meaning)."""

    threads: int = field(default=1, metadata={"setting": settings.NUM_THREADS})
    block_size: int = field(default=settings.BLOCK_SIZE.default, metadata={"setting": settings.BLOCK_SIZE})
    tile_elements: int = field(default=settings.TILE_ELEMENTS.default, metadata={"setting": settings.TILE_ELEMENTS})
    tile_loops: TileLoops = field(default=TileLoops.ON, metadata={"setting": settings.TILE_LOOPS, "enum": TileLoops})
    compile: CompileMode = field(default=CompileMode.BACKGROUND, metadata={"setting": settings.COMPILE, "enum": CompileMode})
    compile_exit: ExitMode = field(default=ExitMode.DETACH, metadata={"setting": settings.COMPILE_EXIT, "enum": ExitMode})
    schedule: Schedule = field(default=Schedule.PROGRAM, metadata={"setting": settings.SCHEDULE, "enum": Schedule})
    direct_work: int = field(default=settings.DIRECT_WORK.default, metadata={"setting": settings.DIRECT_WORK})
    sweeps_per_pass: int = field(default=settings.SWEEPS_PER_PASS.default, metadata={"setting": settings.SWEEPS_PER_PASS})
    verify: VerifyLimits | None = field(default_factory=VerifyLimits)  # None: batches are not verified

    def __post_init__(self) -> None:
        for entry in fields(self):
            if "setting" not in entry.metadata:
                continue
            declared: settings.Setting = entry.metadata["setting"]
            kind: type[enum.Enum] | None = entry.metadata.get("enum")
            value = getattr(self, entry.name)
            if kind is not None:
                if not isinstance(value, kind):
                    value = settings.choice_setting(kind, declared.name, str(value))
            else:
                if isinstance(value, str):
                    value = declared.parse(value)
                if isinstance(value, bool) or not isinstance(value, int) or value < declared.minimum:
                    raise ValueError(f"{declared.name} must be an integer of at least {declared.minimum}, got {value!r}")
            object.__setattr__(self, entry.name, value)

    @classmethod
    def from_settings(cls, environ: Mapping[str, str] | None = None, **explicit: Any) -> NodeConfig:
        """The configuration that the settings ask for: ``explicit`` fields first, then the
        environment, then the defaults; ``threads`` defaults to the cores this process may use."""
        unknown = set(explicit) - {entry.name for entry in fields(cls)}
        if unknown:
            raise TypeError(f"the node engine has no setting {', '.join(sorted(unknown))}")
        values = {entry.name: entry.metadata["setting"].value(explicit.get(entry.name), environ) for entry in fields(cls) if "setting" in entry.metadata}
        values["verify"] = explicit["verify"] if "verify" in explicit else execute_limits({}, VerifyAtExecute.ON, environ)
        if values["threads"] is None:
            values["threads"] = _cores()
        return cls(**values)

    def but(self, **changes: Any) -> NodeConfig:
        """This configuration with ``changes``."""
        return replace(self, **changes)
