"""Hypothesis strategies for adversarial batches, and running them on the engines.

A drawn :class:`Plan` describes a batch: a few small bases that all carry data, sometimes one
declared with a huge size, and a few instructions. Each instruction starts consistent (views
inside their bases, shapes that agree) and is then often corrupted: a view replaced by one with
overflowing extents, huge or negative strides, an offset at or past the edge of its base, a
stride-0 giant, or a count that lies (``arange``/``linspace`` making more elements than the
output holds, index arrays out of range).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st

from shoal.bytecode import BaseDecl, Batch, Const, Instruction, View, make_attrs

DTYPES = [np.dtype(name) for name in ("f8", "f4", "i8", "i4", "u1", "?", "c16")]
HUGE_EXTENTS = [1 << 31, 1 << 32, 1 << 33, 1 << 34, 1 << 62, (1 << 63) - 1, 1 << 64]
HUGE_STRIDES = [1 << 32, 1 << 40, -(1 << 40), 1 << 62, -(1 << 63), (1 << 63) - 8]
HUGE_SIZES = [1 << 31, 1 << 40, 1 << 45]


@dataclass
class Plan:
    """A batch as plain data, so every engine gets a fresh copy of it."""

    bases: list[BaseDecl]
    data: dict[int, np.ndarray]
    instructions: list[Instruction] = field(default_factory=list)

    def batch(self) -> Batch:
        return Batch(list(self.bases), {base: array.copy() for base, array in self.data.items()}, list(self.instructions))


def _values(dtype: np.dtype, size: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype.kind == "b":
        return rng.integers(0, 2, size).astype(dtype)
    if dtype.kind in "iu":
        return rng.integers(-3 if dtype.kind == "i" else 0, 9, size).astype(dtype)
    values = rng.uniform(-4.0, 4.0, size)
    if dtype.kind == "c":
        values = values + 1j * rng.uniform(-4.0, 4.0, size)
    return values.astype(dtype)


@st.composite
def fitting_view(draw: Any, decl: BaseDecl, shape: tuple[int, ...], dtype: np.dtype, output: bool) -> View | None:
    """A view of ``shape`` inside ``decl``: NumPy-like (an axis order, flips and steps) for an
    output, any strides (stride 0 too) for an input; None if the base is too small."""
    itemsize = dtype.itemsize
    if output:
        order = draw(st.permutations(range(len(shape))))
        steps = [draw(st.sampled_from([1, 1, 2])) for _ in shape]
        strides = [0] * len(shape)
        span = itemsize
        for axis in reversed(order):
            strides[axis] = span * steps[axis] * draw(st.sampled_from([1, -1]))
            span *= max(1, shape[axis]) * steps[axis]
    else:
        strides = [itemsize * draw(st.sampled_from([0, 1, 1, -1, 2, 3, -2])) for _ in shape]
    low = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides) if n > 0)
    high = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides) if n > 0) + itemsize
    empty = 0 in shape
    first, last = (0, decl.nbytes) if empty else (-low, decl.nbytes - high)
    if last < first:
        return None
    offset = draw(st.integers(first // itemsize if first >= 0 else 0, last // itemsize)) * itemsize
    if offset < first:
        return None
    return View(decl.id, dtype, offset, tuple(shape), tuple(strides))


@st.composite
def wild_view(draw: Any, decl: BaseDecl) -> View:
    """A view chosen to break the rules: overflowing extents, huge strides, edge offsets."""
    dtype = draw(st.sampled_from([decl.dtype, *DTYPES]))
    itemsize, nbytes = dtype.itemsize, decl.nbytes
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.one_of(st.integers(0, 4), st.sampled_from(HUGE_EXTENTS))) for _ in range(ndim))
    stride = st.one_of(st.sampled_from([0, itemsize, -itemsize, 2 * itemsize]), st.sampled_from(HUGE_STRIDES))
    strides = tuple(draw(stride) for _ in range(ndim))
    edges = [0, itemsize, nbytes - itemsize, nbytes, nbytes + itemsize, -itemsize, 1 << 62, (1 << 63) - 8, 1 << 64]
    offset = draw(st.sampled_from(edges))
    return View(decl.id, dtype, offset, shape, strides)


def _small_shape(draw: Any, ndim: int) -> tuple[int, ...]:
    return tuple(draw(st.integers(0, 4)) for _ in range(ndim))


@st.composite
def instruction(draw: Any, bases: list[BaseDecl], data: dict[int, np.ndarray]) -> Instruction | None:
    """One instruction over ``bases``: consistent first, then perhaps corrupted."""
    op = draw(st.sampled_from(["copy", "add", "negative", "sum", "cumsum", "arange", "linspace", "fill", "gather", "matmul"]))
    out_decl = draw(st.sampled_from(bases))
    in_decl = draw(st.sampled_from(bases))
    if op in ("sum", "matmul"):  # results that differ in the last bits are compared as floats
        floats = [decl for decl in bases if decl.dtype.kind in "fc"]
        if not floats:
            return None
        out_decl = draw(st.sampled_from(floats))
    out_dtype = out_decl.dtype  # outputs write their base's type, so results compare in it
    in_dtype = draw(st.sampled_from([in_decl.dtype, in_decl.dtype, *DTYPES]))
    shape = _small_shape(draw, draw(st.integers(0, 3)))
    attrs: dict[str, Any] = {}
    inputs: list[Any] = []
    if op in ("copy", "add", "negative"):
        out = draw(fitting_view(out_decl, shape, out_dtype, True))
        in_shape = shape
        if op == "copy":  # the input broadcasts to the output
            in_shape = tuple(1 if draw(st.booleans()) else n for n in shape[draw(st.integers(0, len(shape))) :])
        inputs.append(draw(fitting_view(in_decl, in_shape, in_dtype, False)))
        if op == "add":
            inputs.append(Const(draw(st.sampled_from([1, 2.5, np.float32(-1.5), True]))))
    elif op in ("sum", "cumsum"):
        in_shape = shape or (3,)
        axis = draw(st.sampled_from([None, 0, -1]))
        if op == "sum":
            out_shape = () if axis is None else tuple(n for d, n in enumerate(in_shape) if d != axis % len(in_shape))
        else:
            out_shape = (math.prod(in_shape),) if axis is None else in_shape
        out = draw(fitting_view(out_decl, out_shape, out_dtype, True))
        inputs.append(draw(fitting_view(in_decl, in_shape, in_dtype, False)))
        attrs["axis"] = axis
    elif op == "arange":
        start, step = draw(st.integers(-5, 5)), draw(st.sampled_from([1, 2, -1, 0.5, 3]))
        count = draw(st.integers(0, 6))
        stop = start + count * step
        if draw(st.booleans()):
            stop = draw(st.sampled_from([1 << 26, 1 << 40, 10**30, float("inf"), float("nan"), stop + 7 * step]))
        attrs.update(start=start, stop=stop, step=step)
        out = draw(fitting_view(out_decl, (count,), out_dtype, True))
    elif op == "linspace":
        count = draw(st.integers(0, 6))
        num = count if draw(st.booleans()) else draw(st.sampled_from([1 << 26, 1 << 40, -1, count + 1]))
        attrs.update(start=-1.0, stop=2.0, num=num, endpoint=draw(st.booleans()))
        out = draw(fitting_view(out_decl, (count,), out_dtype, True))
    elif op == "fill":
        out = draw(fitting_view(out_decl, shape, out_dtype, True))
        inputs.append(Const(draw(st.sampled_from([0, -1.25, 3, True]))))
    elif op == "gather":
        index_decls = [decl for decl in bases if decl.dtype == np.dtype("i8")]
        if not index_decls:
            return None
        index_decl = draw(st.sampled_from(index_decls))
        rows = draw(st.integers(1, 4))
        source_shape = (rows, *_small_shape(draw, draw(st.integers(0, 1))))
        index_shape = (draw(st.integers(0, 3)),)
        inputs.append(draw(fitting_view(in_decl, source_shape, in_dtype, False)))
        inputs.append(draw(fitting_view(index_decl, index_shape, np.dtype("i8"), False)))
        attrs["key"] = (("array", 0),)
        out = draw(fitting_view(out_decl, index_shape + source_shape[1:], out_dtype, True))
    else:  # matmul
        m, k, n = (draw(st.integers(1, 3)) for _ in range(3))
        inputs.append(draw(fitting_view(in_decl, (m, k), in_dtype, False)))
        inputs.append(draw(fitting_view(in_decl, (k, n), in_dtype, False)))
        out = draw(fitting_view(out_decl, (m, n), out_dtype, True))
    if out is None or any(operand is None for operand in inputs):
        return None
    corruption = draw(st.sampled_from(["none", "none", "output", "input", "extent"]))
    if corruption == "output":
        out = draw(wild_view(out_decl))
    elif corruption == "input" and inputs and isinstance(inputs[0], View):
        inputs[0] = draw(wild_view(in_decl))
    elif corruption == "extent":
        giant = draw(st.sampled_from(HUGE_EXTENTS))
        out = View(out.base, out.dtype, out.offset, (giant, *out.shape), (0, *out.strides))
    return Instruction(op, (out,), tuple(inputs), make_attrs(**attrs))


@st.composite
def plans(draw: Any) -> Plan:
    """A batch of 1 to 3 small bases with data (an ``i8`` index base among them), perhaps a
    huge declared base, and 1 to 3 instructions."""
    seed = draw(st.integers(0, 2**16))
    bases: list[BaseDecl] = [BaseDecl(0, np.dtype("i8"), draw(st.integers(1, 6)))]
    for _ in range(draw(st.integers(0, 2))):
        bases.append(BaseDecl(len(bases), draw(st.sampled_from(DTYPES)), draw(st.sampled_from([0, 1, 2, 3, 5, 8, 16, 33]))))
    data = {decl.id: _values(decl.dtype, decl.size, seed + decl.id) for decl in bases}
    data[0] = np.random.default_rng(seed).integers(-8, 8, bases[0].size)
    if draw(st.integers(0, 4)) == 0:
        bases.append(BaseDecl(len(bases), draw(st.sampled_from(DTYPES)), draw(st.sampled_from(HUGE_SIZES))))
    plan = Plan(bases, data)
    for _ in range(draw(st.integers(1, 3))):
        step = draw(instruction(bases, data))
        if step is not None:
            plan.instructions.append(step)
            plan.instructions.extend(draw(chain(bases, step)))
    return plan


@st.composite
def chain(draw: Any, bases: list[BaseDecl], first: Instruction) -> list[Instruction]:
    """Element-wise instructions that read ``first``'s output, perhaps ending in a sum: a run
    the node engine fuses into one kernel."""
    steps: list[Instruction] = []
    if first.op not in ("add", "negative", "copy") or not draw(st.booleans()):
        return steps
    source = first.outputs[0]
    for _ in range(draw(st.integers(1, 3))):
        decl = draw(st.sampled_from(bases))
        out = draw(fitting_view(decl, tuple(source.shape), decl.dtype, True))
        if out is None:
            break
        op = draw(st.sampled_from(["multiply", "add", "subtract", "absolute", "sqrt"]))
        inputs = (source,) if op in ("absolute", "sqrt") else (source, Const(draw(st.sampled_from([2.0, -1, 3]))))
        steps.append(Instruction(op, (out,), inputs, ()))
        source = out
    floats = [decl for decl in bases if decl.dtype.kind in "fc"]
    if steps and floats and draw(st.booleans()):
        decl = draw(st.sampled_from(floats))
        total = draw(fitting_view(decl, (), decl.dtype, True))
        if total is not None:
            steps.append(Instruction("sum", (total,), (source,), make_attrs(axis=None)))
    return steps
