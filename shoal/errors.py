"""Warnings and errors that Shoal itself raises."""


class ShoalFallbackWarning(UserWarning):
    """A NumPy function Shoal does not implement yet ran in NumPy on materialized data."""
