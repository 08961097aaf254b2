"""A tiny bytecode recorder for engine tests: builds batches the way the frontend does.

Every operation result is a new base (a temporary) that the caller may ``release``; views are
made by indexing a dummy ndarray laid over the base, so offsets and strides are NumPy's own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shoal.bytecode import BaseDecl, Batch, Const, Instruction, View, make_attrs, spec


class Recorder:
    """Records one batch; ``known`` carries base sizes between batches."""

    def __init__(self, known: dict[int, BaseDecl] | None = None, first_id: int = 1) -> None:
        self.batch = Batch()
        self.known: dict[int, BaseDecl] = {} if known is None else known
        self.next_id = max([first_id, *[b + 1 for b in self.known]])

    def new_batch(self) -> Batch:
        """Hand over the recorded batch and start a new one (bases stay known)."""
        batch, self.batch = self.batch, Batch()
        return batch

    def _declare(self, dtype: np.dtype, size: int, data: np.ndarray | None = None) -> int:
        base = self.next_id
        self.next_id += 1
        decl = BaseDecl(base, np.dtype(dtype), size)
        self.batch.bases.append(decl)
        self.known[base] = decl
        if data is not None:
            self.batch.data[base] = np.ascontiguousarray(data, dtype=dtype).reshape(-1)
        return base

    def array(self, values: Any, dtype: Any = None) -> View:
        data = np.asarray(values, dtype=dtype)
        base = self._declare(data.dtype, data.size, data)
        return full_view(base, data.dtype, data.shape)

    def empty(self, shape: tuple[int, ...], dtype: Any) -> View:
        dtype = np.dtype(dtype)
        base = self._declare(dtype, int(np.prod(shape, dtype=np.int64)))
        return full_view(base, dtype, shape)

    def index(self, view: View, key: Any) -> View:
        """The view ``view[key]`` (basic indexing only)."""
        nbytes = self.known[view.base].nbytes
        dummy = np.empty(max(nbytes, 1), np.uint8)
        array = np.ndarray(view.shape, view.dtype, buffer=dummy, offset=view.offset, strides=view.strides)
        sub = array[key]
        offset = sub.__array_interface__["data"][0] - dummy.__array_interface__["data"][0]
        return View(view.base, sub.dtype, offset, sub.shape, sub.strides)

    def transpose(self, view: View) -> View:
        return View(view.base, view.dtype, view.offset, view.shape[::-1], view.strides[::-1])

    def emit(self, op: str, outputs: tuple[View, ...], inputs: tuple[Any, ...], **attrs: Any) -> None:
        operands = tuple(x if isinstance(x, View) else Const(x) for x in inputs)
        self.batch.instructions.append(Instruction(op, outputs, operands, make_attrs(**attrs)))

    def ufunc(self, name: str, *inputs: Any, dtype: Any = None) -> View:
        """A new temporary holding ``name(*inputs)``, with NumPy's result shape and dtype."""
        ufunc = spec(name).ufunc
        probes = [np.ones(x.shape, x.dtype) if isinstance(x, View) else x for x in inputs]
        with np.errstate(all="ignore"):
            result = ufunc(*probes)
        results = result if isinstance(result, tuple) else (result,)
        outs = tuple(self.empty(np.shape(r), dtype or np.asarray(r).dtype) for r in results)
        self.emit(name, outs, inputs)
        return outs[0] if len(outs) == 1 else outs

    def where(self, condition: View, x: Any, y: Any) -> View:
        probes = [np.ones(v.shape, v.dtype) if isinstance(v, View) else v for v in (condition, x, y)]
        result = np.where(*probes)
        out = self.empty(result.shape, result.dtype)
        self.emit("where", (out,), (condition, x, y))
        return out

    def reduce(self, op: str, source: View, dtype: Any = None, **attrs: Any) -> View:
        probe = np.ones(source.shape, source.dtype)
        function = getattr(np, op)
        extra = {} if dtype is None else {"dtype": dtype}
        result = np.asarray(function(probe, **extra, **attrs))
        out = self.empty(result.shape, result.dtype)
        if dtype is not None:
            attrs["dtype"] = np.dtype(dtype)
        self.emit(op, (out,), (source,), **attrs)
        return out

    def copy(self, target: View, source: Any) -> None:
        self.emit("copy", (target,), (source,))

    def fill(self, target: View, value: Any) -> None:
        self.emit("fill", (target,), (value,))

    def release(self, *views: View) -> None:
        for view in views:
            self.emit("release", (), (), base=view.base)


def full_view(base: int, dtype: Any, shape: tuple[int, ...]) -> View:
    dtype = np.dtype(dtype)
    strides = []
    stride = dtype.itemsize
    for n in reversed(shape):
        strides.append(stride)
        stride *= max(n, 1)
    return View(base, dtype, 0, tuple(shape), tuple(reversed(strides)))


def direct_against_reference(batch: Batch, checked: list[View], threads: int = 2) -> None:
    """Run ``batch`` on a node engine that runs every batch directly (no compiler) and on the
    reference engine, and compare the ``checked`` views bit for bit, dtypes included."""
    from shoal.engine import ReferenceEngine
    from shoal.engine.node import NodeConfig, NodeEngine

    node = NodeEngine(NodeConfig(threads=threads, compile="off", direct_work=1 << 40))
    reference = ReferenceEngine()
    try:
        reference.execute(batch)
        reference.flush()
        node.execute(batch)
        assert node.last_stats.direct
        for view in checked:
            np.testing.assert_array_equal(node.fetch(view), reference.fetch(view))
            assert node.fetch(view).dtype == reference.fetch(view).dtype
    finally:
        node.shutdown()
        reference.shutdown()
