"""Shoal: ordinary NumPy and task-parallel Python programs on every core, unchanged."""

from shoal.errors import ShoalFallbackWarning

__version__ = "0.1.0"

_TASK_EXPORTS = frozenset({"task", "IN", "OUT", "INOUT", "wait_on", "barrier", "delete"})
_PROXY_EXPORTS = frozenset({"connect", "preview"})


def flush() -> None:
    """Run every array operation recorded so far."""
    import shoal.runtime

    shoal.runtime.flush()


def load_ipython_extension(shell: object) -> None:
    """``%load_ext shoal``: later ``import numpy`` in the notebook gives ``shoal.numpy``."""
    import shoal.notebook

    shoal.notebook.load(shell)


def unload_ipython_extension(shell: object) -> None:
    """``%unload_ext shoal``."""
    import shoal.notebook

    shoal.notebook.unload(shell)


def __getattr__(name: str) -> object:
    # Imported on first use so that ``import shoal`` stays light.
    if name in _TASK_EXPORTS:
        import shoal.tasks

        return getattr(shoal.tasks, name)
    if name in _PROXY_EXPORTS:
        import shoal.proxy

        return getattr(shoal.proxy, name)
    raise AttributeError(f"module 'shoal' has no attribute {name!r}")


__all__ = [
    "IN",
    "INOUT",
    "OUT",
    "ShoalFallbackWarning",
    "barrier",
    "connect",
    "delete",
    "flush",
    "preview",
    "task",
    "wait_on",
]
