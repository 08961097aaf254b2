"""The loops over a replayed batch that run in C where ``_repeat_walk.c`` was built.

A batch whose structure the engine has seen is compared with the previous one
(:mod:`~shoal.engine.node.schedule.repeat`), its ids are checked by verification
(:meth:`~shoal.engine.node.schedule.verified.VerifiedShapes.admits`) and bound to the cached plan
(:func:`~shoal.engine.node.schedule.plan_cache.check_binding`): three loops over every
instruction or base of the batch, most of a replayed batch's planning in Python. :data:`CHECKS`
is the compiled module, told here which classes' slots it reads, or None where it was not built
(no C compiler at install): the callers then run their Python loops, which decide alike.
"""

from __future__ import annotations

from types import ModuleType

from shoal.bytecode import BaseDecl, Const, Instruction, View

CHECKS: ModuleType | None
try:
    import shoal.engine.node.schedule._repeat_walk as CHECKS
except ImportError:  # built at install where a C compiler is found
    CHECKS = None
else:
    CHECKS.configure_types(View, Instruction, Const, BaseDecl)
