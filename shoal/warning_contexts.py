"""``warnings.catch_warnings`` blocks see the warnings of the lazy operations inside them.

A lazy operation's ``RuntimeWarning`` is given when its batch runs (:mod:`shoal.fp_warnings`),
under the warnings state in force then. A program that records warnings in a block (``with
warnings.catch_warnings(record=True) as w:``, ``pytest.warns``, ``np.testing.assert_warns``)
reads them right after it (NumPy's ``suppress_warnings`` is one more such block), and one
that silences them in a block (``catch_warnings()`` with
``simplefilter("ignore")``) expects them gone; a warning pending from before the block belongs
outside it. So a ``catch_warnings`` block's start and end first run the recorded work that may
warn and give its warnings: before the block under the state outside it, at its end under its
own. A block costs nothing more where no warning is pending.

A warning given at once (NumPy's own for an array in NumPy memory, a fallback's, the program's
``warnings.warn``) first gives those pending from earlier lines, so that they come in the order
of the lines, as NumPy gives them (:func:`install` wraps the function that shows a warning).
"""

from __future__ import annotations

import functools
import sys
import warnings
from collections.abc import Callable
from typing import Any

from shoal import runtime, warning_filters


def install() -> None:
    """Make every ``warnings.catch_warnings`` block (and its subclasses') give the pending
    warnings as it begins and ends (once per process); NumPy's ``suppress_warnings`` too, once
    ``numpy.testing`` is loaded (:func:`install_for_numpy_testing`)."""
    _wrap(warnings.catch_warnings)
    install_for_numpy_testing()
    _wrap_show()


def _wrap_show() -> None:
    """Make ``warnings``' display of a warning (``_showwarnmsg``, which Python's warnings call
    for every warning they show) give the pending warnings of earlier lines first (once)."""
    show = getattr(warnings, "_showwarnmsg", None)
    if show is None or getattr(show, _WRAPPED, False):
        return

    def _showwarnmsg(message: Any) -> None:
        runtime.give_warnings_before_another()
        show(message)

    setattr(_showwarnmsg, _WRAPPED, True)
    warnings._showwarnmsg = _showwarnmsg  # type: ignore[attr-defined]


def install_for_numpy_testing() -> None:
    """The same for ``numpy.testing.suppress_warnings`` (``np.testing.assert_warns`` records
    with it), if ``numpy.testing`` is loaded."""
    utilities = sys.modules.get("numpy.testing._private.utils")
    block = getattr(utilities, "suppress_warnings", None)
    if block is not None:
        _wrap(block, eager=True)


_WRAPPED = "_shoal_gives_pending_warnings"


def _wrap(block: type, eager: bool = False) -> None:
    """Wrap ``block``'s ``__enter__`` and ``__exit__`` (once). ``eager``: while such a block is
    open, operations that may warn run at the call (``np.testing.assert_warns`` counts the
    warnings inside its block, before it ends)."""
    if getattr(block, _WRAPPED, False):
        return
    enter, leave = block.__enter__, block.__exit__  # type: ignore[attr-defined]

    def __enter__(self: Any) -> Any:
        runtime.give_pending_warnings()
        entered = enter(self)
        if type(entered) is list and getattr(self, "_record", False) and hasattr(self, "_module"):
            entered = RecordedWarnings()  # ``catch_warnings(record=True)``: the block's log
            self._module._showwarnmsg_impl = entered.append
        if eager:
            warning_filters.eager_blocks += 1
        return entered

    def __exit__(self: Any, *exc_info: Any) -> Any:
        try:
            if exc_info[0] is None:  # a block left by an exception keeps it as its own
                runtime.give_pending_warnings()
        finally:
            if eager:
                warning_filters.eager_blocks -= 1
            result = leave(self, *exc_info)
        return result

    block.__enter__ = __enter__  # type: ignore[attr-defined]
    block.__exit__ = __exit__  # type: ignore[attr-defined]
    setattr(block, _WRAPPED, True)


class RecordedWarnings(list):
    """The log of a ``catch_warnings(record=True)`` block, which gives the pending warnings of
    lazy operations whenever the program reads or empties it (:data:`_READS`): ``len(w)`` right
    after ``np.log(a)`` inside the block counts its warning, as under NumPy, though the operation
    has not run yet; ``w.clear()`` clears a warning pending before it."""


_READS = ("__len__", "__getitem__", "__iter__", "__reversed__", "__contains__", "__eq__", "__repr__", "__delitem__", "pop", "clear", "copy")


def _giving_pending_warnings_first(name: str) -> Callable[..., Any]:
    """``list``'s method ``name``, called once the pending warnings are given."""
    method = getattr(list, name)

    @functools.wraps(method)
    def read(self: list, *args: Any) -> Any:
        runtime.give_pending_warnings()
        return method(self, *args)

    return read


for _name in _READS:
    setattr(RecordedWarnings, _name, _giving_pending_warnings_first(_name))
