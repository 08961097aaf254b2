"""The warnings filters in force when a lazy operation was recorded, applied when it warns.

A lazy operation's ``RuntimeWarning`` is given when its batch runs (:mod:`shoal.fp_warnings`).
Filters that the program changed in between (``warnings.simplefilter("ignore")`` after the
operation and before its result is read, or a filter in force at the operation and reset since)
must not decide its fate: NumPy's own warning went through the filters of its moment. So each
recorded site keeps :func:`filters_now` (one tuple while the filters stay as they are), and a
warning whose filters changed since is filtered against them by :func:`warn_under`, which does
what ``warnings.warn_explicit`` does with the filters of that moment: the first filter that
matches decides, and the ``once``, ``module`` and ``default`` actions keep their registries,
which start empty again whenever the filters have changed (as Python resets them).
"""

from __future__ import annotations

import warnings
from typing import Any

Filters = tuple[tuple[Any, ...], str]  # the filters list as a tuple, and the default action

eager_blocks = 0  # NumPy ``suppress_warnings`` blocks open now (shoal.warning_contexts)
_MADE_UNDER = "shoal filters"  # a registry's key for the filters its entries were made under
_cache: tuple[Any, int, Any, str, Filters] = (None, 0, None, "", ((), "default"))


def filters_now() -> Filters:
    """The warnings filters in force now, the same object while they have not changed (a
    changed list, length, first filter or default action counts as a change)."""
    global _cache
    filters = warnings.filters
    last = _cache
    default = warnings.defaultaction
    if last[0] is filters and last[1] == len(filters) and (not filters or last[2] is filters[0]) and last[3] == default:
        return last[4]
    snapshot: Filters = (tuple(filters), default)
    _cache = (filters, len(filters), filters[0] if filters else None, default, snapshot)
    return snapshot


def warn_under(snapshot: Filters, text: str, filename: str, lineno: int, module_globals: dict[str, Any]) -> None:
    """``RuntimeWarning(text)`` from that line of that module, filtered as the filters of
    ``snapshot`` would have filtered it. An ``error`` action cannot come here: where the filters
    may raise, the operation ran at the call (:func:`shoal.fp_warnings.raises`)."""
    category = RuntimeWarning
    module = module_globals.get("__name__", "<string>")
    filters, action = snapshot
    for candidate, message, kind, module_pattern, line in filters:
        if (message is None or message.match(text)) and issubclass(category, kind) and (module_pattern is None or module_pattern.match(module)) and (line == 0 or line == lineno):
            action = candidate
            break
    if action == "ignore":
        return
    registry = module_globals.setdefault("__warningregistry__", {})
    if registry.get(_MADE_UNDER) is not snapshot:  # every filter change resets the registries
        registry.clear()
        registry[_MADE_UNDER] = snapshot
    key = (text, category, lineno)
    if action != "always":
        if registry.get(key):
            return
        registry[key] = 1
    if action == "once":
        if warnings.onceregistry.get((text, category)):
            return
        warnings.onceregistry[(text, category)] = 1
    elif action == "module":
        if registry.get((text, category, 0)):
            return
        registry[(text, category, 0)] = 1
    warnings._showwarnmsg(warnings.WarningMessage(category(text), category, filename, lineno))  # type: ignore[attr-defined]
