"""Shoal: ordinary NumPy and task-parallel Python programs on every core, unchanged."""

__version__ = "0.1.0"
