"""Shoal: ordinary NumPy and task-parallel Python programs on every core, unchanged."""

__version__ = "0.1.0"

from shoal.errors import ShoalFallbackWarning
from shoal.runtime import flush

__all__ = ["ShoalFallbackWarning", "flush"]
