"""The component interface every layer of the stack implements (paper 004 §3.1).

A component receives batches of bytecode, keeps the bases they create, and hands back array data
only when the program reads a value. The proxy, the cluster manager and the node engine all speak
this interface, so they stack.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field

import numpy as np

from shoal.bytecode import Batch, View


class EngineError(RuntimeError):
    """A component could not run a batch that the frontend accepted."""


@dataclass(frozen=True)
class Config:
    """Settings handed to a component at ``init``."""

    threads: int = 1
    block_size: int = 1 << 19  # elements per block; measured in docs/decisions.md (node engine)
    options: dict[str, str] = field(default_factory=dict)


class Component(abc.ABC):
    """One layer of Shoal's runtime stack."""

    name: str = "component"

    @abc.abstractmethod
    def init(self, config: Config) -> None:
        """Prepare to run batches."""

    @abc.abstractmethod
    def execute(self, batch: Batch) -> None:
        """Run ``batch``: declare its bases, load its data, run its instructions in order."""

    @abc.abstractmethod
    def fetch(self, view: View) -> np.ndarray:
        """A new ndarray holding the current contents of ``view``."""

    @abc.abstractmethod
    def release(self, base: int) -> None:
        """Forget base ``base``; its memory may be reused."""

    @abc.abstractmethod
    def shutdown(self) -> None:
        """Release everything; the component may not be used afterwards."""

    def live_bases(self) -> int:
        """How many bases the component holds now (for leak tests)."""
        return 0
