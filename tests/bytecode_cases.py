"""Hand-built batches for the bytecode tests, derived from the opcode table where possible."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from shoal.bytecode import (
    OPCODES,
    BaseDecl,
    Batch,
    Const,
    Instruction,
    Kind,
    OpSpec,
    View,
    make_attrs,
)
from shoal.bytecode.dtypes import is_supported
from shoal.engine.reference import ReferenceEngine

F8 = np.dtype("f8")

# A sample value for every attribute name the table uses; a new name falls back to a tuple.
SAMPLE_ATTRS: dict[str, Any] = {
    "axis": 0,
    "keepdims": True,
    "dtype": np.dtype("f4"),
    "ddof": 1,
    "start": 0,
    "stop": 10,
    "step": 2,
    "num": 5,
    "endpoint": False,
    "k": -1,
    "ufunc": "add",
    "key": (("slice", 0, None, 2), ("int", -1), ("array", 0), ("newaxis",), ("ellipsis",)),
    "base": 0,
}


def contiguous(base: int, dtype: np.dtype | str, shape: tuple[int, ...], offset: int = 0) -> View:
    """A C-contiguous view of ``shape`` at byte ``offset`` of ``base``."""
    dtype = np.dtype(dtype)
    strides = []
    step = dtype.itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return View(base, dtype, offset, tuple(shape), tuple(reversed(strides)))


def sample_instruction(entry: OpSpec, first_base: int) -> Instruction:
    """A structurally valid instruction for ``entry`` over 2x3 float64 views of bases
    ``first_base``, ``first_base + 1``, ... (not meant to run)."""
    nin = 2 if entry.arity == -1 else entry.arity
    bases = iter(range(first_base, first_base + entry.nout + nin))
    outputs = tuple(contiguous(next(bases), F8, (2, 3)) for _ in range(entry.nout))
    inputs = tuple(contiguous(next(bases), F8, (2, 3)) for _ in range(nin))
    attrs = {name: SAMPLE_ATTRS.get(name, ("x", 1, 2.5, None)) for name in entry.attrs}
    return Instruction(entry.name, outputs, inputs, make_attrs(**attrs))


def every_opcode_batch() -> Batch:
    """One batch with a sample instruction of every opcode; base 0 is released last."""
    batch = Batch(bases=[BaseDecl(0, F8, 6)])
    next_base = 1
    for entry in OPCODES:
        if entry.name == "release":
            continue
        instruction = sample_instruction(entry, next_base)
        count = len(instruction.outputs) + len(instruction.inputs)
        batch.bases.extend(BaseDecl(base, F8, 6) for base in range(next_base, next_base + count))
        batch.instructions.append(instruction)
        next_base += count
    batch.data[1] = np.arange(6.0)
    release = next(entry for entry in OPCODES if entry.name == "release")
    batch.instructions.append(sample_instruction(release, next_base))
    return batch


def same_batch(left: Batch, right: Batch) -> bool:
    """Equal bases, data (dtype and bytes) and instructions, with value types compared too."""
    if left.bases != right.bases or list(left.data) != list(right.data):
        return False
    for base, array in left.data.items():
        other = right.data[base]
        if array.dtype != other.dtype or array.shape != other.shape:
            return False
        if array.tobytes() != other.tobytes():
            return False
    # repr tells True from 1, 1.0 from np.float64(1.0) and compares NaN as equal
    return repr(left.instructions) == repr(right.instructions)


# ---------------------------------------------------------------- executable examples


def _loop_types(ufunc: np.ufunc) -> tuple[list[np.dtype], list[np.dtype]]:
    """The input and output dtypes of the ufunc loop that the example uses."""
    candidates = []
    for signature in ufunc.types:
        ins, outs = signature.split("->")
        try:
            dtypes = [np.dtype(char) for char in ins + outs]
        except TypeError:
            continue
        if all(is_supported(dtype) for dtype in dtypes):
            candidates.append((dtypes[: len(ins)], dtypes[len(ins) :]))

    def preference(candidate: tuple[list[np.dtype], list[np.dtype]]) -> int:
        kinds = {dtype.char for dtype in candidate[0]}
        return 0 if kinds == {"d"} else 1 if "d" in kinds else 2 if kinds & {"l", "q"} else 3

    return min(candidates, key=preference)


def _sample_data(dtype: np.dtype, size: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype.kind == "b":
        return rng.integers(0, 2, size).astype(dtype)
    if dtype.kind in "iu":
        return rng.integers(1, 5, size).astype(dtype)
    values = rng.uniform(0.5, 3.0, size)
    if dtype.kind == "c":
        values = values + 1j * rng.uniform(-1.0, 1.0, size)
    return values.astype(dtype)


def _weak_scalar(dtype: np.dtype) -> bool | int | float | complex:
    return {"b": True, "i": 2, "u": 2, "f": 2.0, "c": complex(2.0, 1.0)}[dtype.kind]


class ExampleBuilder:
    """Builds a batch whose inputs carry data and whose outputs are fresh bases."""

    def __init__(self) -> None:
        self.batch = Batch()
        self.outputs: list[View] = []

    def data(self, array: np.ndarray) -> View:
        base = len(self.batch.bases)
        flat = np.ascontiguousarray(array).reshape(-1)
        self.batch.bases.append(BaseDecl(base, flat.dtype, flat.size))
        self.batch.data[base] = flat
        return contiguous(base, flat.dtype, array.shape)

    def output(self, dtype: np.dtype | str, shape: tuple[int, ...]) -> View:
        base = len(self.batch.bases)
        dtype = np.dtype(dtype)
        self.batch.bases.append(BaseDecl(base, dtype, int(np.prod(shape, dtype=np.int64))))
        view = contiguous(base, dtype, shape)
        self.outputs.append(view)
        return view

    def add(self, op: str, outputs: tuple[View, ...], inputs: tuple[Any, ...], **attrs: Any) -> None:
        self.batch.instructions.append(Instruction(op, outputs, inputs, make_attrs(**attrs)))


def ufunc_example(entry: OpSpec, weak_last: bool) -> ExampleBuilder:
    """``entry``'s ufunc over 3x4 arrays; with ``weak_last`` the last input is a Python scalar."""
    in_dtypes, out_dtypes = _loop_types(entry.ufunc)
    build = ExampleBuilder()
    inputs: list[Any] = [build.data(_sample_data(dt, 12, i).reshape(3, 4)) for i, dt in enumerate(in_dtypes)]
    if weak_last and len(inputs) > 1:
        inputs[-1] = Const(_weak_scalar(in_dtypes[-1]))
    outputs = tuple(build.output(dt, (3, 4)) for dt in out_dtypes)
    build.add(entry.name, outputs, tuple(inputs))
    return build


def reduction_example(entry: OpSpec) -> ExampleBuilder:
    build = ExampleBuilder()
    source = build.data(_sample_data(F8, 20, 7).reshape(4, 5))
    out_dtype = {"argmin": "i8", "argmax": "i8", "any": "?", "all": "?"}.get(entry.name, "f8")
    attrs: dict[str, Any] = {"axis": 0}
    if entry.name == "reduce":
        attrs["ufunc"] = "multiply"
    if "ddof" in entry.attrs:
        attrs["ddof"] = 1
    build.add(entry.name, (build.output(out_dtype, (5,)),), (source,), **attrs)
    return build


def scan_example(entry: OpSpec) -> ExampleBuilder:
    build = ExampleBuilder()
    source = build.data(_sample_data(F8, 20, 8).reshape(4, 5))
    build.add(entry.name, (build.output(F8, (4, 5)),), (source,), axis=1)
    return build


def _copy() -> ExampleBuilder:
    build = ExampleBuilder()
    source = build.data(np.arange(5, dtype=np.int32))
    build.add("copy", (build.output("f8", (3, 5)),), (source,))
    return build


def _fill() -> ExampleBuilder:
    build = ExampleBuilder()
    build.add("fill", (build.output("f4", (7,)),), (Const(np.float32(1.25)),))
    return build


def _arange() -> ExampleBuilder:
    build = ExampleBuilder()
    build.add("arange", (build.output("i8", (5,)),), (), start=0, stop=10, step=2)
    return build


def _linspace() -> ExampleBuilder:
    build = ExampleBuilder()
    build.add("linspace", (build.output("f8", (6,)),), (), start=0.0, stop=1.0, num=6, endpoint=False)
    return build


def _eye() -> ExampleBuilder:
    build = ExampleBuilder()
    build.add("eye", (build.output("f8", (3, 4)),), (), k=1)
    return build


def _where() -> ExampleBuilder:
    build = ExampleBuilder()
    condition = build.data(np.array([True, False, True, False]))
    x = build.data(np.arange(4.0))
    build.add("where", (build.output("f8", (4,)),), (condition, x, Const(-1.0)))
    return build


def _gather() -> ExampleBuilder:
    build = ExampleBuilder()
    source = build.data(np.arange(20.0).reshape(4, 5))
    index = build.data(np.array([3, 0, 3], dtype=np.int64))
    key = (("array", 0), ("slice", 1, None, 2))
    build.add("gather", (build.output("f8", (3, 2)),), (source, index), key=key)
    return build


def _scatter() -> ExampleBuilder:
    build = ExampleBuilder()
    target = build.output("f8", (4, 5))
    build.add("fill", (target,), (Const(0.0),))
    index = build.data(np.array([2, 0], dtype=np.int64))
    build.add("scatter", (target,), (Const(7.5), index), key=(("array", 0), ("int", -1)))
    return build


def _linalg(op: str) -> Callable[[], ExampleBuilder]:
    def make() -> ExampleBuilder:
        build = ExampleBuilder()
        left = build.data(_sample_data(F8, 6, 1).reshape(2, 3))
        right = build.data(_sample_data(F8, 12, 2).reshape(3, 4))
        build.add(op, (build.output("f8", (2, 4)),), (left, right))
        return build

    return make


def _release() -> ExampleBuilder:
    build = ExampleBuilder()
    source = build.data(np.arange(4.0))
    build.add("negative", (build.output("f8", (4,)),), (source,))
    build.add("release", (), (), base=source.base)
    return build


def _ordering(op: str, **attrs: object) -> Callable[[], ExampleBuilder]:
    def make() -> ExampleBuilder:
        build = ExampleBuilder()
        source = build.data(np.array([[3.0, 1.0, 2.0], [0.5, 9.0, -1.0]]))
        dtype = "f8" if op in ("sort", "partition") else "i8"
        build.add(op, (build.output(dtype, (2, 3)),), (source,), **attrs)
        return build

    return make


def _take_along_axis() -> ExampleBuilder:
    build = ExampleBuilder()
    source = build.data(np.arange(6.0).reshape(2, 3))
    index = build.data(np.array([[2, 0], [1, 1]], dtype=np.int64))
    build.add("take_along_axis", (build.output("f8", (2, 2)),), (source, index), axis=1)
    return build


def _fft() -> ExampleBuilder:
    build = ExampleBuilder()
    source = build.data(_sample_data(F8, 12, 3).reshape(3, 4))
    build.add("fft", (build.output("c16", (3, 3)),), (source,), function="rfftn", n=(3, 4), axes=(0, 1), norm="ortho")
    return build


def _linalg_function() -> ExampleBuilder:
    build = ExampleBuilder()
    matrix = build.data(np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]]))
    right = build.data(np.arange(6.0).reshape(3, 2))
    build.add("linalg", (build.output("f8", (3, 2)),), (matrix, right), function="solve")
    return build


def _linalg_pair() -> ExampleBuilder:
    build = ExampleBuilder()
    matrix = build.data(np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]]))
    build.add("linalg_pair", (build.output("f8", (3,)), build.output("f8", (3, 3))), (matrix,), function="eigh", uplo="U")
    return build


def _linalg_triple() -> ExampleBuilder:
    build = ExampleBuilder()
    matrix = build.data(_sample_data(F8, 6, 4).reshape(3, 2))
    outputs = (build.output("f8", (3, 2)), build.output("f8", (2,)), build.output("f8", (2, 2)))
    build.add("linalg_triple", outputs, (matrix,), function="svd", full_matrices=False)
    return build


def _accumulate() -> ExampleBuilder:
    build = ExampleBuilder()
    source = build.data(np.array([[3.0, 1.0, 2.0], [0.5, 9.0, -1.0]]))
    build.add("accumulate", (build.output("f8", (2, 3)),), (source,), ufunc="minimum", axis=1)
    return build


def _reduceat() -> ExampleBuilder:
    build = ExampleBuilder()
    source = build.data(np.arange(12.0).reshape(3, 4))
    index = build.data(np.array([0, 2, 1], dtype=np.int64))
    build.add("reduceat", (build.output("f8", (3, 3)),), (source, index), ufunc="add", axis=1)
    return build


HAND_EXAMPLES: dict[str, Callable[[], ExampleBuilder]] = {
    "accumulate": _accumulate,
    "reduceat": _reduceat,
    "fft": _fft,
    "linalg": _linalg_function,
    "linalg_pair": _linalg_pair,
    "linalg_triple": _linalg_triple,
    "sort": _ordering("sort", axis=1),
    "argsort": _ordering("argsort", axis=0, kind="stable"),
    "partition": _ordering("partition", kth=1, axis=1),
    "argpartition": _ordering("argpartition", kth=(0, 2), axis=1),
    "take_along_axis": _take_along_axis,
    "release": _release,
    "copy": _copy,
    "fill": _fill,
    "arange": _arange,
    "linspace": _linspace,
    "eye": _eye,
    "where": _where,
    "gather": _gather,
    "scatter": _scatter,
    "matmul": _linalg("matmul"),
    "dot": _linalg("dot"),
}


def executable_examples() -> list[tuple[str, Callable[[], ExampleBuilder]]]:
    """(id, builder) for every opcode: ufuncs, reductions and scans are derived from the table."""
    examples: list[tuple[str, Callable[[], ExampleBuilder]]] = []
    for entry in OPCODES:
        if entry.ufunc is not None:
            examples.append((entry.name, lambda e=entry: ufunc_example(e, weak_last=False)))
            if entry.ufunc.nin > 1:
                examples.append((f"{entry.name}-weak", lambda e=entry: ufunc_example(e, weak_last=True)))
        elif entry.name in HAND_EXAMPLES:
            examples.append((entry.name, HAND_EXAMPLES[entry.name]))
        elif entry.kind is Kind.REDUCTION:
            examples.append((entry.name, lambda e=entry: reduction_example(e)))
        elif entry.kind is Kind.SCAN:
            examples.append((entry.name, lambda e=entry: scan_example(e)))
    return examples


def run_on_reference(batch: Batch, outputs: list[View]) -> list[np.ndarray] | type[BaseException]:
    """The contents of ``outputs`` after running ``batch``, or the type of the error it raised."""
    engine = ReferenceEngine()
    try:
        engine.execute(batch)
        return [engine.fetch(view) for view in outputs]
    except Exception as error:
        return type(error)
    finally:
        engine.shutdown()
