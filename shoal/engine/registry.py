"""Components by name, and stacks of them spelled ``top:...:bottom`` (``pass:node``).

The registry maps a name to ``"module:Class"``; the module is imported when a stack first names
it, so naming the reference engine never loads the node engine. ``SHOAL_STACK`` spells the stack;
``SHOAL_ENGINE`` names its bottom component (and is the whole stack when ``SHOAL_STACK`` is
unset).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping
from typing import Any

from shoal import settings
from shoal.engine.component import Component

_TARGETS: dict[str, str] = {
    "reference": "shoal.engine.reference:ReferenceEngine",
    "node": "shoal.engine.node:NodeEngine",
    "pass": "shoal.engine.passthrough:PassThrough",
    "proxy": "shoal.proxy.client:ProxyClient",
    "cluster": "shoal.cluster.manager:ClusterManager",
}
_LOADED: dict[str, type[Component]] = {}


def register(name: str, target: str | type[Component]) -> None:
    """Make component ``target`` (a class, or ``"module:Class"`` to import on first use)
    available as ``name``."""
    if ":" in name:
        raise ValueError(f"a component name may not contain ':', got {name!r}")
    _LOADED.pop(name, None)
    if isinstance(target, str):
        _TARGETS[name] = target
    else:
        _TARGETS[name] = f"{target.__module__}:{target.__qualname__}"
        _LOADED[name] = target


def names() -> list[str]:
    """Names of the registered components whose module is present in this installation."""
    return sorted(name for name, target in _TARGETS.items() if _importable(target.partition(":")[0]))


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:
        return False


def component_class(name: str) -> type[Component]:
    """The class registered as ``name``, imported on first use."""
    loaded = _LOADED.get(name)
    if loaded is not None:
        return loaded
    target = _TARGETS.get(name)
    if target is None:
        known = ", ".join(sorted(_TARGETS))
        raise ValueError(f"unknown Shoal engine {name!r}; known engines: {known}")
    module_name, _, class_name = target.partition(":")
    loaded = getattr(importlib.import_module(module_name), class_name)
    if not (isinstance(loaded, type) and issubclass(loaded, Component)):
        raise TypeError(f"{target} (component {name!r}) is not a Component")
    _LOADED[name] = loaded
    return loaded


def default_engine(environ: Mapping[str, str] | None = None) -> str:
    """``SHOAL_ENGINE`` if set, else the remote proxy if ``SHOAL_REMOTE`` is set, else the node
    engine when present, else the reference engine."""
    chosen = settings.ENGINE.value(environ=environ)
    if chosen:
        return chosen.strip()
    if settings.REMOTE.is_set(environ):
        return "proxy"
    return "node" if _importable(_TARGETS["node"].partition(":")[0]) else "reference"  # not names(): it imports every package


def stack_names(spelling: str | None = None, environ: Mapping[str, str] | None = None) -> list[str]:
    """The component names of a stack, top first: ``spelling``, else ``SHOAL_STACK``, else
    ``SHOAL_ENGINE``; a stack whose last component is a middle layer gets the default engine
    below it."""
    text = spelling if spelling is not None else settings.STACK.value(environ=environ)
    if not text:
        return [default_engine(environ)]
    stack = [name.strip() for name in text.split(":")]
    if any(not name for name in stack):
        raise ValueError(f"a component stack is spelled name:name:...:name, got {text!r}")
    if component_class(stack[-1]).layered:
        stack.append(default_engine(environ))
    elif spelling is None and settings.ENGINE.is_set(environ) and default_engine(environ) != stack[-1]:
        raise ValueError(f"SHOAL_STACK={text!r} ends in {stack[-1]!r} but SHOAL_ENGINE names {default_engine(environ)!r}")
    for upper in stack[:-1]:
        if not component_class(upper).layered:
            raise ValueError(f"component {upper!r} is a bottom component: nothing can stack below it (in {':'.join(stack)!r})")
    return stack


def create(
    spelling: str | None = None,
    configs: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Component:
    """A new stack of components, ready for batches (see :func:`stack_names`).

    Each component gets its entry of ``configs`` (by name) if there is one, else the
    configuration its class builds from the settings."""
    configs = configs or {}
    component: Component | None = None
    for name in reversed(stack_names(spelling, environ)):
        kind = component_class(name)
        config = configs[name] if name in configs else kind.configure(environ)
        component = kind(config, component) if kind.layered else kind(config)  # type: ignore[call-arg]
    assert component is not None
    return component
