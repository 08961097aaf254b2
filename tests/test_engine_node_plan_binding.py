"""Binding a cached plan to a batch checks base identity, liveness and aliasing.

The plan cache keys everything planning reads, so these checks never fail when the key is
right; each test here builds the situation a wrong key would let through and asserts that the
binding, not a kernel, reports it.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_engine_node_repeat import walk  # noqa: F401  (every case with the compiled loops and with the Python ones)

from shoal.bytecode import BaseDecl, Batch, Const, Instruction, View, make_attrs
from shoal.engine.component import EngineError
from shoal.engine.node.run.storage import Storage
from shoal.engine.node.schedule.plan_cache import batch_shape, check_binding

F8 = np.dtype("float64")


def whole(base: int, size: int) -> View:
    return View(base, F8, 0, (size,), (8,))


def doubling(source: int, target: int, size: int = 4, declare_target: bool = True) -> Batch:
    """``target = source * 2``, ``source`` from an earlier batch."""
    bases = [BaseDecl(target, F8, size)] if declare_target else []
    instruction = Instruction("multiply", (whole(target, size),), (whole(source, size), Const(2.0)), make_attrs())
    return Batch(bases=bases, instructions=[instruction])


def live_storage(*decls: BaseDecl) -> Storage:
    storage = Storage()
    for decl in decls:
        storage.declare(decl, None)
    return storage


def test_a_right_binding_passes():
    storage = live_storage(BaseDecl(1, F8, 4), BaseDecl(2, F8, 4))
    shape = batch_shape(doubling(1, 2), storage.decls)
    check_binding((2, 1), shape, storage)


def test_two_planned_bases_bound_to_one_base_are_refused():
    storage = live_storage(BaseDecl(1, F8, 4), BaseDecl(2, F8, 4))
    shape = dataclasses.replace(batch_shape(doubling(1, 2), storage.decls), ids=(1, 1))
    with pytest.raises(EngineError, match="one to one"):
        check_binding((2, 1), shape, storage)


def test_a_base_that_is_no_longer_live_is_refused():
    storage = live_storage(BaseDecl(1, F8, 4), BaseDecl(2, F8, 4))
    shape = batch_shape(doubling(1, 2), storage.decls)
    storage.decls.pop(1)
    with pytest.raises(EngineError, match=r"base 1 .* is not live"):
        check_binding((2, 1), shape, storage)


def test_a_base_of_another_size_is_refused():
    storage = live_storage(BaseDecl(1, F8, 4), BaseDecl(2, F8, 4))
    shape = batch_shape(doubling(1, 2), storage.decls)
    storage.decls[1] = BaseDecl(1, F8, 8)
    with pytest.raises(EngineError, match=r"base 1 is float64\[8\], planned as float64\[4\]"):
        check_binding((2, 1), shape, storage)


def test_an_alias_the_plan_reads_is_refused():
    storage = live_storage(BaseDecl(1, F8, 4), BaseDecl(3, F8, 8), BaseDecl(2, F8, 4))
    storage.alias(1, View(3, F8, 0, (4,), (8,)))
    shape = batch_shape(doubling(1, 2), storage.decls)
    with pytest.raises(EngineError, match="base 1 is an alias of a view of base 3"):
        check_binding((2, 1), shape, storage)


def test_an_alias_whose_region_the_plan_writes_is_refused():
    storage = live_storage(BaseDecl(1, F8, 4), BaseDecl(3, F8, 4), BaseDecl(5, F8, 4))
    storage.alias(5, View(3, F8, 0, (4,), (8,)))  # base 5's contents live in base 3
    shape = batch_shape(doubling(1, 3, declare_target=False), storage.decls)
    with pytest.raises(EngineError, match="base 5 is an alias"):
        check_binding((1, 3), shape, storage)


def test_an_alias_released_before_it_is_touched_is_fine():
    storage = live_storage(BaseDecl(1, F8, 4), BaseDecl(3, F8, 8), BaseDecl(2, F8, 4))
    storage.alias(1, View(3, F8, 0, (4,), (8,)))
    batch = Batch(bases=[], instructions=[Instruction("release", (), (), make_attrs(base=1))])
    shape = batch_shape(batch, storage.decls)
    check_binding((1,), shape, storage)
