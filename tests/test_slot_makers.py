"""Objects recording builds without their classes' ``__init__`` (``shoal/frozen_values.py``,
``shoal/_slot_makers.c``): the same objects as the constructors give, in C where it was built
and in Python elsewhere, no reference leaked, and a clear error for what a maker cannot build."""

from __future__ import annotations

import gc
import shutil
import sys
import weakref

import numpy as np
import pytest

from shoal import frozen_values
from shoal.base_lives import LazyBase, make_base
from shoal.bytecode import BaseDecl, Const, Instruction, View
from shoal.numpy._lazy import NO_QUIET_STORES, make_lazy_array, ndarray
from tests.test_compiled_indexing import importable

F8 = np.dtype("f8")
VIEW = View(3, F8, 8, (2, 3), (24, 8))


class Other:
    __slots__ = ("x",)


class Host:
    """A class whose attribute is another class's slot."""

    __slots__ = ("y",)
    x = Other.x  # type: ignore[attr-defined]


@pytest.fixture(params=["compiled", "python"])
def makers(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each maker as the install built it, and as Python builds it where no compiler was found."""
    if request.param == "compiled" and not frozen_values.COMPILED:
        pytest.skip("shoal/_slot_makers.c was not built here")
    if request.param == "python":
        monkeypatch.setattr(frozen_values, "_slot_makers", None)
    return request.param


def fields(value: object) -> dict[str, object]:
    return {name: getattr(value, name) for name in type(value).__slots__ if name != "__weakref__"}


def test_bytecode_values_equal_and_hash_as_the_dataclasses_own(makers: str) -> None:
    view = frozen_values.slot_maker(View, ("base", "dtype", "offset", "shape", "strides"))
    made = view(3, F8, 8, (2, 3), (24, 8))
    assert type(made) is View and made == VIEW and hash(made) == hash(VIEW) and repr(made) == repr(VIEW)
    instruction = frozen_values.slot_maker(Instruction, ("op", "outputs", "inputs", "attrs"))
    expected = Instruction("add", (VIEW,), (VIEW, Const(1.0)), (("axis", 0),))
    assert instruction("add", (VIEW,), (VIEW, Const(1.0)), (("axis", 0),)) == expected
    decl = frozen_values.slot_maker(BaseDecl, ("id", "dtype", "size"))
    assert decl(7, F8, 12) == BaseDecl(7, F8, 12) and hash(decl(7, F8, 12)) == hash(BaseDecl(7, F8, 12))
    with pytest.raises(AttributeError):  # still frozen
        made.base = 4  # type: ignore[misc]


def test_the_module_makers_build_what_the_constructors_build() -> None:
    assert frozen_values.new_view(3, F8, 8, (2, 3), (24, 8)) == VIEW
    assert frozen_values.new_instruction("release", (), (), (("base", 3),)) == Instruction("release", (), (), (("base", 3),))
    assert frozen_values.new_instruction("negative", (VIEW,), (VIEW,)) == Instruction("negative", (VIEW,), (VIEW,))  # attrs left to ()
    assert frozen_values.new_decl(5, F8, 6) == BaseDecl(5, F8, 6)
    built, made = LazyBase(None, 5, F8, 6), make_base(None, 5, F8, 6, [])  # type: ignore[arg-type]
    assert fields(made) == fields(built) and made.holders is not built.holders
    lazy = make_lazy_array(built, VIEW, None, False, False, None, NO_QUIET_STORES)
    assert type(lazy) is ndarray and fields(lazy) == {"_base": built, "_owner": None, "_readonly": False, "_scalar": False, "_view": VIEW}
    assert (lazy._held, lazy._quiet) == (None, NO_QUIET_STORES)


def test_no_reference_is_leaked_or_kept_too_long(makers: str) -> None:
    view = frozen_values.slot_maker(View, ("base", "dtype", "offset", "shape", "strides"))
    shape = (2, 3)
    before = sys.getrefcount(shape)
    made = [view(3, F8, 8, shape, (24, 8)) for _ in range(1000)]
    assert sys.getrefcount(shape) == before + 1000
    del made
    assert sys.getrefcount(shape) == before


def test_slots_left_out_take_the_defaults(makers: str) -> None:
    instruction = frozen_values.slot_maker(Instruction, ("op", "outputs", "inputs", "attrs"), ((),))
    assert instruction("negative", (VIEW,), (VIEW,)) == Instruction("negative", (VIEW,), (VIEW,))
    assert instruction("sum", (VIEW,), (VIEW,), (("axis", 0),)).attrs == (("axis", 0),)
    with pytest.raises(TypeError, match="takes 3 to 4 arguments \\(2 given\\)"):
        instruction("negative", (VIEW,))


def test_objects_made_take_part_in_garbage_collection(makers: str) -> None:
    base = frozen_values.slot_maker(LazyBase, ("runtime", "id", "dtype", "size", "held", "holders", "accesses", "large"))
    holders: list[object] = []
    made = base(None, 5, F8, 6, None, holders, 0, 0)
    holders.append(made)  # a cycle through a slot
    dead = weakref.ref(made)
    del made, holders
    gc.collect()
    assert dead() is None


@pytest.mark.skipif(not frozen_values.COMPILED, reason="shoal/_slot_makers.c was not built here")
def test_a_maker_refuses_what_it_cannot_build() -> None:
    from shoal import _slot_makers

    view = _slot_makers.maker(View, ("base", "dtype", "offset", "shape", "strides"))
    with pytest.raises(TypeError, match="takes 5 to 5 arguments \\(2 given\\)"):
        view(1, F8)
    with pytest.raises(TypeError, match="takes no keyword arguments"):
        view(1, F8, 0, (), (), base=2)
    with pytest.raises(AttributeError, match="nowhere"):
        _slot_makers.maker(View, ("nowhere",))
    with pytest.raises(TypeError, match="'__repr__' is not a slot of View"):
        _slot_makers.maker(View, ("__repr__",))
    for cls, name in ((complex, "real"), (slice, "start")):  # a C double; a read-only object
        with pytest.raises(TypeError, match="does not hold a Python object or is read-only"):
            _slot_makers.maker(cls, (name,))
    with pytest.raises(TypeError, match="slot 'x' is not one of Host's"):
        _slot_makers.maker(Host, ("x",))
    with pytest.raises(ValueError, match="more defaults than slots"):
        _slot_makers.maker(View, ("base",), (1, 2))
    with pytest.raises(TypeError, match="slot names must be strings"):
        _slot_makers.maker(View, (1,))
    instruction = _slot_makers.maker(Instruction, ("op", "outputs", "inputs", "attrs"), ((),))
    assert instruction("add", (), ()).attrs == () and "Instruction" in repr(instruction)


@pytest.mark.full
@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler: the makers are not built")
def test_the_install_built_the_makers() -> None:
    assert importable("shoal._slot_makers"), "pip install -e . should have compiled shoal/_slot_makers.c"
