"""The opcode table: the one place an operation is defined.

Each entry gives the name, the stable wire code, the kind, the number of inputs and outputs,
the attributes it accepts, a NumPy reference implementation, whether it joins a fused kernel,
and for reductions and scans the ufunc that combines two partial results and the value an
accumulation starts from. Dispatch, the wire format, the verifier, the disassembler, the engines
and the frontend all read this table; :class:`GroupOp` holds the sets of names derived from it,
and ``docs/opcodes.md`` is generated from it (``python -m shoal.bytecode.opcode_docs --write``).
Codes are append-only: never renumber an existing entry.

A reference implementation has the signature ``ref(outs, ins, attrs)``: ``outs`` are writable
ndarrays, ``ins`` are ndarrays or scalars, ``attrs`` a dict; it writes its result into ``outs``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


class Kind(enum.Enum):
    ELEMENTWISE = "elementwise"
    REDUCTION = "reduction"
    SCAN = "scan"
    MOVEMENT = "movement"
    CREATION = "creation"
    INDEXING = "indexing"
    LINALG = "linalg"
    COMMUNICATION = "communication"
    SYSTEM = "system"
    SORTING = "sorting"


Reference = Callable[[Sequence[np.ndarray], Sequence[Any], Mapping[str, Any]], None]


@dataclass(frozen=True)
class OpSpec:
    """One row of the opcode table. ``arity`` -1 means a variable number of inputs.

    ``attrs`` are the attributes the operation accepts; ``required`` those it cannot run without.
    ``fuses``: the operation may join a fused kernel, computed element by element (or, for a
    reduction, accumulated element by element). ``combine`` (reductions and scans): the binary
    ufunc that combines two partial results, as NumPy reduces with it; ``identity``: the value an
    accumulation starts from (None: there is none, the first element starts it).
    """

    name: str
    code: int
    kind: Kind
    arity: int
    nout: int
    reference: Reference
    attrs: frozenset[str] = frozenset()
    ufunc: np.ufunc | None = None
    required: frozenset[str] = frozenset()
    fuses: bool = False
    combine: str | None = None
    identity: bool | int | None = None


# Element-wise NumPy ufuncs, by canonical name. Order fixes the wire codes: append only.
UFUNC_NAMES: tuple[str, ...] = (
    # arithmetic
    "add", "subtract", "multiply", "divide", "floor_divide", "power", "float_power",
    "remainder", "fmod", "divmod", "negative", "positive", "absolute", "fabs", "sign",
    "reciprocal", "conjugate", "square", "sqrt", "cbrt",
    "maximum", "minimum", "fmax", "fmin", "heaviside", "gcd", "lcm",
    # exponential and logarithmic
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "logaddexp", "logaddexp2",
    # trigonometric and hyperbolic
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "hypot",
    "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh",
    "deg2rad", "rad2deg", "degrees", "radians",
    # rounding and floating point
    "floor", "ceil", "trunc", "rint", "copysign", "nextafter", "spacing", "ldexp",
    "frexp", "modf", "signbit", "isnan", "isinf", "isfinite",
    # comparison and logic
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not",
    # bitwise
    "bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift",
    # ternary
    "clip",
)  # fmt: skip


def ufunc_named(name: str) -> np.ufunc:
    if name == "clip":
        return np._core.umath.clip
    return getattr(np, name)


def _ufunc_reference(ufunc: np.ufunc) -> Reference:
    def run(outs: Sequence[np.ndarray], ins: Sequence[Any], attrs: Mapping[str, Any]) -> None:
        dtype = attrs.get("dtype")
        if dtype is None:
            ufunc(*ins, out=tuple(outs), casting="unsafe")
        else:
            ufunc(*ins, out=tuple(outs), casting="unsafe", dtype=dtype)

    return run


def _through_contiguous(ufunc: np.ufunc) -> Reference:
    """``ufunc``'s reference; into a strided output through a contiguous result. NumPy 2.4's loops
    of two unary ufuncs write a strided output wrongly: ``negative`` where the input's step is 64
    bytes for 8-byte numbers or 16 for 4-byte ones (``np.negative(a[::8], out=b[::2])``; float64,
    int64, uint64, float32, int32), ``isfinite`` of float32 and float64 into any strided boolean
    output (every other unary and binary ufunc was right on every dtype and step tried)."""
    direct = _ufunc_reference(ufunc)

    def run(outs: Sequence[np.ndarray], ins: Sequence[Any], attrs: Mapping[str, Any]) -> None:
        out = outs[0]
        if out.flags.c_contiguous or np.ndim(ins[0]) == 0:
            direct(outs, ins, attrs)
            return
        dtype = attrs.get("dtype")
        result = ufunc(ins[0]) if dtype is None else ufunc(ins[0], dtype=dtype)
        np.copyto(out, result, casting="unsafe")

    return run


MISCOMPUTED_INTO_STRIDES = frozenset({"negative", "isfinite"})


def _real_if_discarded(out: np.ndarray, value: Any) -> Any:
    """``value``'s real part where storing it into ``out`` discards the imaginary part: the same
    values, without the ``ComplexWarning`` that the frontend already gave at the user's line."""
    if np.iscomplexobj(value) and out.dtype.kind not in "cOb":  # to bool: nonzero in either part
        return np.real(value)
    return value


def _where(outs, ins, attrs):
    condition, x, y = ins
    np.copyto(outs[0], _real_if_discarded(outs[0], np.where(condition, x, y)), casting="unsafe")


def _copy(outs, ins, attrs):
    np.copyto(outs[0], _real_if_discarded(outs[0], ins[0]), casting="unsafe")


def _fill(outs, ins, attrs):
    outs[0].fill(_real_if_discarded(outs[0], ins[0]))


def _arange(outs, ins, attrs):
    values = np.arange(attrs["start"], attrs["stop"], attrs["step"], dtype=outs[0].dtype)
    np.copyto(outs[0], values)


def _linspace(outs, ins, attrs):
    values = np.linspace(
        attrs["start"], attrs["stop"], attrs["num"], endpoint=attrs["endpoint"], dtype=outs[0].dtype
    )
    np.copyto(outs[0], values)


def _eye(outs, ins, attrs):
    rows, cols = outs[0].shape
    np.copyto(outs[0], np.eye(rows, cols, attrs["k"], dtype=outs[0].dtype))


def _reduction(function: Callable[..., Any], *extra: str) -> Reference:
    def run(outs, ins, attrs):
        options = {name: attrs[name] for name in extra if name in attrs}
        if attrs.get("dtype") is not None:
            options["dtype"] = attrs["dtype"]
        result = function(ins[0], axis=attrs.get("axis"), keepdims=attrs.get("keepdims", False), **options)
        np.copyto(outs[0], result, casting="unsafe")

    return run


def _ufunc_reduce(outs, ins, attrs):
    ufunc = ufunc_named(attrs["ufunc"])
    options = {} if attrs.get("dtype") is None else {"dtype": attrs["dtype"]}
    ufunc.reduce(ins[0], axis=attrs.get("axis"), out=outs[0], keepdims=attrs.get("keepdims", False), **options)


def _arg_reduction(function: Callable[..., Any]) -> Reference:
    def run(outs, ins, attrs):
        function(ins[0], axis=attrs.get("axis"), out=outs[0], keepdims=attrs.get("keepdims", False))

    return run


def _scan(function: Callable[..., Any]) -> Reference:
    def run(outs, ins, attrs):
        source = ins[0]
        axis = attrs.get("axis")
        if axis is None:
            source, axis = source.reshape(-1), 0
        function(source, axis=axis, dtype=attrs.get("dtype"), out=outs[0])

    return run


def _index_key(attrs: Mapping[str, Any], index_arrays: Sequence[Any]) -> tuple[Any, ...]:
    key: list[Any] = []
    for item in attrs["key"]:
        tag = item[0]
        if tag == "slice":
            key.append(slice(item[1], item[2], item[3]))
        elif tag == "int":
            key.append(item[1])
        elif tag == "array":
            key.append(index_arrays[item[1]])
        elif tag == "newaxis":
            key.append(None)
        elif tag == "ellipsis":
            key.append(Ellipsis)
        else:
            raise ValueError(f"unknown index key item {item!r}")
    return tuple(key)


def _gather(outs, ins, attrs):
    out, source = outs[0], ins[0]
    if attrs["key"] == (("array", 0),) and _takes_in_place(out, source, ins[1]):
        # ``take`` writes the rows straight into ``out``; indexing first made a whole temporary
        # the size of the result (lattice_boltzmann's ``populations[OPPOSITE]``: 8 MB per step).
        np.take(source, ins[1], axis=0, out=out, mode="wrap")
        return
    np.copyto(out, source[_index_key(attrs, ins[1:])], casting="unsafe")


def _takes_in_place(out: np.ndarray, source: np.ndarray, index: Any) -> bool:
    """True if ``take`` along the first axis may fill ``out`` directly: same dtype, no shared
    memory, and every index in range (``mode="wrap"`` then maps negative ones as indexing does,
    where the checking ``mode="raise"`` would buffer the whole result)."""
    if not isinstance(index, np.ndarray) or index.dtype.kind not in "iu" or source.ndim == 0:
        return False
    if out.dtype != source.dtype or not out.flags.c_contiguous or np.may_share_memory(out, source):
        return False
    rows = source.shape[0]
    return index.size == 0 or (rows > 0 and int(index.min()) >= -rows and int(index.max()) < rows)


def _scatter(outs, ins, attrs):
    target = outs[0]
    value, index_arrays = ins[0], ins[1:]
    target[_index_key(attrs, index_arrays)] = value


def _matmul(outs, ins, attrs):
    np.matmul(ins[0], ins[1], out=outs[0])


def _dot(outs, ins, attrs):
    np.copyto(outs[0], np.dot(ins[0], ins[1]), casting="unsafe")


def _sort(outs, ins, attrs):
    np.copyto(outs[0], np.sort(ins[0], axis=attrs["axis"], kind=attrs.get("kind")))


def _argsort(outs, ins, attrs):
    np.copyto(outs[0], np.argsort(ins[0], axis=attrs["axis"], kind=attrs.get("kind")))


def _partition(outs, ins, attrs):
    np.copyto(outs[0], np.partition(ins[0], attrs["kth"], axis=attrs["axis"]))


def _argpartition(outs, ins, attrs):
    np.copyto(outs[0], np.argpartition(ins[0], attrs["kth"], axis=attrs["axis"]))


def _take_along_axis(outs, ins, attrs):
    np.copyto(outs[0], np.take_along_axis(ins[0], ins[1], axis=attrs["axis"]))


# The transforms of ``np.fft`` that take one axis (``n``, ``axis``); the others take ``s``, ``axes``.
FFT_ONE_AXIS = frozenset({"fft", "ifft", "rfft", "irfft", "hfft", "ihfft"})
FFT_FUNCTIONS = FFT_ONE_AXIS | {"fftn", "ifftn", "fft2", "ifft2", "rfftn", "irfftn", "rfft2", "irfft2"}
# ``np.linalg`` functions by how many arrays they return.
LINALG_SINGLE = frozenset({"det", "inv", "solve", "cholesky", "eigvalsh", "svdvals", "pinv", "qr"})
LINALG_PAIR = frozenset({"eigh", "slogdet", "qr"})
LINALG_TRIPLE = frozenset({"svd"})
# ``qr``'s modes by how many arrays they return ("economic": the deprecated mode's one array).
QR_SINGLE_MODES = frozenset({"r", "economic"})
QR_PAIR_MODES = frozenset({"reduced", "complete", "raw"})


def _fft(outs, ins, attrs):
    """One ``np.fft`` transform (pocketfft) with explicit lengths ``n`` and ``axes``."""
    function = attrs["function"]
    transform = getattr(np.fft, function)
    if function in FFT_ONE_AXIS:
        result = transform(ins[0], n=attrs["n"][0], axis=attrs["axes"][0], norm=attrs.get("norm"))
    else:
        result = transform(ins[0], s=attrs["n"], axes=attrs["axes"], norm=attrs.get("norm"))
    np.copyto(outs[0], result, casting="unsafe")


def _linalg_call(ins, attrs):
    function = attrs["function"]
    options = {}
    if function in ("eigh", "eigvalsh"):
        options["UPLO"] = attrs.get("uplo", "L")
    elif function == "cholesky":
        options["upper"] = bool(attrs.get("upper", False))
    elif function == "pinv":
        options["hermitian"] = bool(attrs.get("hermitian", False))
        options["rcond"] = attrs.get("rcond")
    elif function == "svdvals" and attrs.get("hermitian"):
        return np.linalg.svd(ins[0], compute_uv=False, hermitian=True)
    elif function == "qr":
        mode = attrs.get("mode", "reduced")
        if mode == "economic":  # the factored matrix as LAPACK leaves it: "raw" without the transpose
            return np.swapaxes(np.linalg.qr(ins[0], mode="raw")[0], -1, -2)
        options["mode"] = mode
    elif function == "svd":
        options["full_matrices"] = bool(attrs.get("full_matrices", True))
        options["hermitian"] = bool(attrs.get("hermitian", False))
    return getattr(np.linalg, function)(*ins, **options)


def _linalg(outs, ins, attrs):
    """One ``np.linalg`` function (LAPACK) over whole views; every result into its output."""
    results = _linalg_call(ins, attrs)
    results = (results,) if len(outs) == 1 else tuple(results)
    for out, result in zip(outs, results):
        np.copyto(out, result, casting="unsafe")


def _accumulate(outs, ins, attrs):
    """``ufunc.accumulate`` of a binary ufunc named by ``ufunc``."""
    source, axis = ins[0], attrs.get("axis")
    if axis is None:
        source, axis = source.reshape(-1), 0
    getattr(np, attrs["ufunc"]).accumulate(source, axis=axis, dtype=attrs.get("dtype"), out=outs[0])


def _reduceat(outs, ins, attrs):
    """``ufunc.reduceat`` over the segments that start at the indices (input 1)."""
    result = getattr(np, attrs["ufunc"]).reduceat(ins[0], ins[1], axis=attrs["axis"], dtype=attrs.get("dtype"))
    np.copyto(outs[0], result, casting="unsafe")


def _release(outs, ins, attrs):
    """Handled by the engine itself; the reference has nothing to compute."""


_REDUCE_ATTRS = frozenset({"axis", "keepdims", "dtype"})


def _build_table() -> tuple[OpSpec, ...]:
    rows: list[OpSpec] = []

    def add(name, kind, arity, nout, reference, attrs=(), ufunc=None, required=(), fuses=False, combine=None, identity=None):
        accepted = frozenset(attrs) | frozenset(required)
        code = len(rows) + 1
        rows.append(OpSpec(name, code, kind, arity, nout, reference, accepted, ufunc, frozenset(required), fuses, combine, identity))

    add("release", Kind.SYSTEM, 0, 0, _release, required=("base",))
    add("copy", Kind.MOVEMENT, 1, 1, _copy, fuses=True)
    add("fill", Kind.CREATION, 1, 1, _fill, fuses=True)
    add("arange", Kind.CREATION, 0, 1, _arange, required=("start", "stop", "step"))
    add("linspace", Kind.CREATION, 0, 1, _linspace, required=("start", "stop", "num", "endpoint"))
    add("eye", Kind.CREATION, 0, 1, _eye, required=("k",))
    add("where", Kind.ELEMENTWISE, 3, 1, _where, fuses=True)
    add("sum", Kind.REDUCTION, 1, 1, _reduction(np.sum), _REDUCE_ATTRS, fuses=True, combine="add", identity=0)
    add("prod", Kind.REDUCTION, 1, 1, _reduction(np.prod), _REDUCE_ATTRS, fuses=True, combine="multiply", identity=1)
    add("min", Kind.REDUCTION, 1, 1, _reduction(np.min), _REDUCE_ATTRS - {"dtype"}, fuses=True, combine="minimum")
    add("max", Kind.REDUCTION, 1, 1, _reduction(np.max), _REDUCE_ATTRS - {"dtype"}, fuses=True, combine="maximum")
    add("any", Kind.REDUCTION, 1, 1, _reduction(np.any), _REDUCE_ATTRS - {"dtype"}, fuses=True, combine="logical_or", identity=False)
    add("all", Kind.REDUCTION, 1, 1, _reduction(np.all), _REDUCE_ATTRS - {"dtype"}, fuses=True, combine="logical_and", identity=True)
    add("mean", Kind.REDUCTION, 1, 1, _reduction(np.mean), _REDUCE_ATTRS, fuses=True, combine="add", identity=0)
    add("var", Kind.REDUCTION, 1, 1, _reduction(np.var, "ddof"), _REDUCE_ATTRS | {"ddof"}, combine="add")
    add("std", Kind.REDUCTION, 1, 1, _reduction(np.std, "ddof"), _REDUCE_ATTRS | {"ddof"}, combine="add")
    add("argmin", Kind.REDUCTION, 1, 1, _arg_reduction(np.argmin), ("axis", "keepdims"))
    add("argmax", Kind.REDUCTION, 1, 1, _arg_reduction(np.argmax), ("axis", "keepdims"))
    add("reduce", Kind.REDUCTION, 1, 1, _ufunc_reduce, _REDUCE_ATTRS, required=("ufunc",))
    add("cumsum", Kind.SCAN, 1, 1, _scan(np.cumsum), ("axis", "dtype"), combine="add", identity=0)
    add("cumprod", Kind.SCAN, 1, 1, _scan(np.cumprod), ("axis", "dtype"), combine="multiply", identity=1)
    add("gather", Kind.INDEXING, -1, 1, _gather, required=("key",))
    add("scatter", Kind.INDEXING, -1, 1, _scatter, required=("key",))
    add("matmul", Kind.LINALG, 2, 1, _matmul)
    add("dot", Kind.LINALG, 2, 1, _dot)
    for name in UFUNC_NAMES:
        ufunc = ufunc_named(name)
        add(name, Kind.ELEMENTWISE, ufunc.nin, ufunc.nout, _through_contiguous(ufunc) if name in MISCOMPUTED_INTO_STRIDES else _ufunc_reference(ufunc), ("dtype",), ufunc, fuses=True)
    add("sort", Kind.SORTING, 1, 1, _sort, ("kind",), required=("axis",))
    add("argsort", Kind.SORTING, 1, 1, _argsort, ("kind",), required=("axis",))
    add("partition", Kind.SORTING, 1, 1, _partition, required=("kth", "axis"))
    add("argpartition", Kind.SORTING, 1, 1, _argpartition, required=("kth", "axis"))
    add("take_along_axis", Kind.INDEXING, 2, 1, _take_along_axis, required=("axis",))
    add("fft", Kind.LINALG, 1, 1, _fft, ("norm",), required=("function", "n", "axes"))
    add("linalg", Kind.LINALG, -1, 1, _linalg, ("uplo", "upper", "hermitian", "rcond", "mode"), required=("function",))
    add("linalg_pair", Kind.LINALG, 1, 2, _linalg, ("uplo", "mode"), required=("function",))
    add("accumulate", Kind.SCAN, 1, 1, _accumulate, ("axis", "dtype"), required=("ufunc",))
    add("reduceat", Kind.INDEXING, 2, 1, _reduceat, ("dtype",), required=("ufunc", "axis"))
    add("linalg_triple", Kind.LINALG, 1, 3, _linalg, ("full_matrices", "hermitian"), required=("function",))
    return tuple(rows)


OPCODES: tuple[OpSpec, ...] = _build_table()
BY_NAME: dict[str, OpSpec] = {spec.name: spec for spec in OPCODES}
BY_CODE: dict[int, OpSpec] = {spec.code: spec for spec in OPCODES}


def _names(keep: Callable[[OpSpec], bool]) -> frozenset[str]:
    return frozenset(entry.name for entry in OPCODES if keep(entry))


class GroupOp:
    """Sets of opcode names, all derived from the table's columns (in the style of tinygrad's
    ``GroupOp``); code that asks "is this a ..." asks one of these, never a list of its own."""

    ELEMENTWISE = _names(lambda e: e.kind is Kind.ELEMENTWISE)
    REDUCTION = _names(lambda e: e.kind is Kind.REDUCTION)
    SCAN = _names(lambda e: e.kind is Kind.SCAN)
    # what joins a fused kernel: computed per element, or a reduction accumulated per element
    FUSED_ELEMENTWISE = _names(lambda e: e.fuses and e.kind is not Kind.REDUCTION)
    FUSED_REDUCTION = _names(lambda e: e.fuses and e.kind is Kind.REDUCTION)
    # element-wise without a ufunc of their own: the one input, cast to the output (copy, fill)
    COPIES = _names(lambda e: e.fuses and e.ufunc is None and e.arity == 1 and e.kind is not Kind.REDUCTION)
    # reductions whose combining ufunc selects one operand: no identity, the first value starts
    SELECTING = _names(lambda e: e.combine in ("minimum", "maximum"))
    # reductions whose combining ufunc is logical: they accumulate truth values
    LOGICAL = _names(lambda e: e.combine in ("logical_or", "logical_and"))


def spec(name: str) -> OpSpec:
    """The table entry for ``name``; a clear error for an unknown opcode."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown opcode {name!r}") from None


def ufunc_opcode(ufunc: np.ufunc) -> str | None:
    """The opcode name of a NumPy ufunc, or None if the table has no entry for it."""
    name = ufunc.__name__
    entry = BY_NAME.get(name)
    return name if entry is not None and entry.ufunc is ufunc else None
