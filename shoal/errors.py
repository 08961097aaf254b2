"""Warnings and errors that Shoal itself raises."""


class ShoalFallbackWarning(UserWarning):
    """A NumPy function Shoal does not implement yet ran in NumPy on materialized data."""


class ShoalUnsafeFileWarning(UserWarning):
    """A file or directory that another user could have written was not used (see docs/security.md)."""


class WorkAbandoned(KeyboardInterrupt):
    """A second Ctrl-C stopped the batch a node engine was running (the runtime raises the
    program's ``KeyboardInterrupt`` for it): the arrays it had not finished are lost, and
    reading any lazy array afterwards raises :class:`LostWork`."""


class LostWork(RuntimeError):
    """A lazy array was read after a second Ctrl-C stopped Shoal's work halfway."""
