"""Engines by name: ``SHOAL_ENGINE`` picks one; each new engine registers a factory here."""

from __future__ import annotations

from collections.abc import Callable

from shoal.engine.component import Component
from shoal.engine.reference import ReferenceEngine

_FACTORIES: dict[str, Callable[[], Component]] = {"reference": ReferenceEngine}


def register(name: str, factory: Callable[[], Component]) -> None:
    """Make ``factory`` available as engine ``name``."""
    _FACTORIES[name] = factory


def names() -> list[str]:
    """Names of the registered engines."""
    _load_optional()
    return sorted(_FACTORIES)


def create(name: str) -> Component:
    """A new, uninitialised component for engine ``name``."""
    _load_optional()
    try:
        factory = _FACTORIES[name]
    except KeyError:
        known = ", ".join(sorted(_FACTORIES))
        raise ValueError(f"unknown Shoal engine {name!r}; known engines: {known}") from None
    return factory()


def _load_optional() -> None:
    """Import engines that live in their own packages so they can register themselves."""
    try:
        import shoal.engine.node  # noqa: F401
    except ImportError:
        pass
