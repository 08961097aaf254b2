"""Whether a component verifies each batch at ``execute``, and with which limits.

A component's configuration is built from these (``NodeConfig.verify``, ``ReferenceConfig.verify``):

* ``verify``: ``on`` or ``off`` (environment ``SHOAL_VERIFY_EXECUTE`` when the option is
  absent; each component picks its own default). Components that receive batches from outside
  the process (the proxy server, MPI ranks) pass ``on``.
* ``max_batch_bytes``, ``max_live_bytes``, ``max_work``: the :class:`VerifyLimits` a boundary
  puts on each client's batches (no bound when absent).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from shoal.bytecode.verify import VerifyLimits
from shoal.settings import VERIFY_EXECUTE, choice_setting, integer_setting

VARIABLE = "SHOAL_VERIFY_EXECUTE"


class VerifyAtExecute(enum.Enum):
    """Whether ``execute`` verifies the batch it is given."""

    ON = "on"
    OFF = "off"


def execute_limits(options: Mapping[str, str], default: VerifyAtExecute, environ: Mapping[str, str] | None = None) -> VerifyLimits | None:
    """The limits to verify every batch with at ``execute``, or None if it is not verified."""
    text = options.get("verify") or VERIFY_EXECUTE.value(environ=environ)
    mode = default if not text else choice_setting(VerifyAtExecute, "verify", text)
    if mode is VerifyAtExecute.OFF:
        return None
    bounds = {
        name: integer_setting(name, str(options[name]), minimum=0)
        for name in ("max_batch_bytes", "max_live_bytes", "max_work")
        if options.get(name) not in (None, "")
    }
    return VerifyLimits(**bounds)
