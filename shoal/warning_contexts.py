"""``warnings.catch_warnings`` blocks see the warnings of the lazy operations inside them.

A lazy operation's ``RuntimeWarning`` is given when its batch runs (:mod:`shoal.fp_warnings`),
under the warnings state in force then. A program that records warnings in a block (``with
warnings.catch_warnings(record=True) as w:``, ``pytest.warns``, ``np.testing.assert_warns``)
reads them right after it, and one that silences them in a block (``catch_warnings()`` with
``simplefilter("ignore")``) expects them gone; a warning pending from before the block belongs
outside it. So a ``catch_warnings`` block's start and end first run the recorded work that may
warn and give its warnings: before the block under the state outside it, at its end under its
own. A block costs nothing more where no warning is pending.
"""

from __future__ import annotations

import warnings
from typing import Any

from shoal import runtime

_installed = False


def install() -> None:
    """Make every ``warnings.catch_warnings`` block (and its subclasses') give the pending
    warnings as it begins and ends (once per process)."""
    global _installed
    if _installed:
        return
    _installed = True
    block = warnings.catch_warnings
    enter, leave = block.__enter__, block.__exit__

    def __enter__(self: warnings.catch_warnings) -> Any:
        _give_pending()
        return enter(self)

    def __exit__(self: warnings.catch_warnings, *exc_info: Any) -> None:
        try:
            _give_pending()
        finally:
            leave(self, *exc_info)

    block.__enter__ = __enter__  # type: ignore[method-assign]
    block.__exit__ = __exit__  # type: ignore[method-assign]


def _give_pending() -> None:
    current = runtime.active()
    if current is not None and not current.closed:
        current.give_pending_warnings()
