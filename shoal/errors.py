"""Warnings and errors that Shoal itself raises."""


class ShoalFallbackWarning(UserWarning):
    """A NumPy function Shoal does not implement yet ran in NumPy on materialized data."""


class ShoalUnsafeFileWarning(UserWarning):
    """A file or directory that another user could have written was not used (see docs/security.md)."""
