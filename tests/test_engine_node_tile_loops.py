"""Fused groups through NumPy's own inner loops over small tiles (``run/tile_loops.py``).

Before a kernel is compiled, a group of element-wise ufuncs whose operands already have their
loops' dtypes runs through those loops in C. Programs of every numeric dtype, strided,
transposed and broadcast views, in-place updates, copies and constants run on a node engine
without compiled kernels and are compared bit for bit with NumPy, and the engine's count of
block operations run through the loops shows that the loops ran them. Warnings and errors of
the conditions the loops meet are NumPy's, at the user's line. Groups the loops do not take
(casts, reductions, integer powers) keep to the NumPy tile path, and an operand that is not
aligned to its items sends a block there too.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from fp_engines import count_stat
from numpy_fixtures import needs_runtime

from shoal.engine.node.run import tile_loops

pytestmark = pytest.mark.skipif(not tile_loops.available(), reason="built without the tile loops")

RNG = np.random.default_rng(11)


def node_engine(loops: str = "on") -> Any:
    """A node engine without compiled kernels, in view-blocks of 4096 elements, on two threads."""
    from shoal.engine.node.config import NodeConfig
    from shoal.engine.node.engine import NodeEngine

    return NodeEngine(NodeConfig(compile="off", block_size=1 << 12, direct_work=0, threads=2, tile_loops=loops))


def through_shoal(program: Callable[[ModuleType, list[np.ndarray]], Any], inputs: list[np.ndarray], loops: str = "on") -> tuple[Any, int]:
    """``program``'s result with every array lazy on a node engine, and the loops' block operations."""
    needs_runtime()
    import shoal.numpy as snp
    from shoal import runtime

    engine = node_engine(loops)
    counts = count_stat(engine, "loop_block_ops")
    with runtime.configure(engine=engine, eager_threshold=0, settled_threshold=0):
        result = np.asarray(program(snp, [snp.array(array) for array in inputs]))
    return result, sum(counts)


def floats(*shape: int, dtype: str = "float64") -> np.ndarray:
    return (RNG.standard_normal(shape) * 3).astype(dtype)


def ints(*shape: int, dtype: str = "int64", high: int = 100) -> np.ndarray:
    return RNG.integers(-high if np.dtype(dtype).kind == "i" else 0, high, shape).astype(dtype)


def with_nans(array: np.ndarray) -> np.ndarray:
    array = array.copy()
    array.flat[:: 7] = np.nan
    return array


def chain(np: ModuleType, v: list) -> Any:
    a, b, c = v
    return (a * 2.5 + b) / (c - 0.5) - np.sqrt(np.abs(a)) * np.exp(-b * b)


def float32_weak_scalars(np: ModuleType, v: list) -> Any:
    a, b = v
    return np.tanh(a * 0.1 + 1e-3) - b / 3.0


def integers(np: ModuleType, v: list) -> Any:
    i, j = v
    return (i * 3 + j) // 7 % 5 - np.abs(i - j) + np.maximum(i, j)


def bits(np: ModuleType, v: list) -> Any:
    i, j = v
    return ((i & 0xF) | (j << 2)) ^ ~i


def small_unsigned(np: ModuleType, v: list) -> Any:
    u, w = v
    return u * 3 + w - 7


def logic(np: ModuleType, v: list) -> Any:
    a, b, c = v
    return ((a > 0.5) & (b < 0.2)) | ~(c > 0) ^ np.isnan(a)


def complex_numbers(np: ModuleType, v: list) -> Any:
    z, w = v
    return z * z + w * 1j - np.conjugate(w) / (z + 2)


def nan_selection(np: ModuleType, v: list) -> Any:
    a, b = v
    return np.maximum(a, b) + np.fmin(a, b) * np.minimum(b, 0.0)


def strided_views(np: ModuleType, v: list) -> Any:
    a, b = v
    return a[::2, 1::3] * 2 + b[1::2, ::3] - a.T[::3, 1::2].T


def broadcast_operands(np: ModuleType, v: list) -> Any:
    a, row, column = v
    return a * row[None, :] + column[:, None] - row


def three_axes(np: ModuleType, v: list) -> Any:
    a, b = v
    return np.hypot(a, b) + np.arctan2(b[:, ::-1], a) * 0.5


def in_place(np: ModuleType, v: list) -> Any:
    a, b = v
    a += b * 2
    np.multiply(a, 3, out=a)
    a -= np.floor(b)
    return a


def copies_into_slices(np: ModuleType, v: list) -> Any:
    a, b = v
    b[1:-1] = (a[:-2] + a[1:-1] + a[2:]) / 3.0
    b[0] = 7.0
    return b * 1


def long_rows(np: ModuleType, v: list) -> Any:
    (a,) = v
    return np.clip(a * a - 2, -1.5, 4.0) + np.rint(a)


def mixed_dtypes(np: ModuleType, v: list) -> Any:
    a, f = v
    return a + f * 2  # float32 cast into float64 before the add


def game_of_life_rule(np: ModuleType, v: list) -> Any:
    grid, neighbours = v
    return ((neighbours == 3) | ((grid == 1) & (neighbours == 2))).astype(np.int8)  # bool into int8


def masks_into_numbers(np: ModuleType, v: list) -> Any:
    a, b = v
    return a + (b > 0.5) * 2.0 - (a < b)  # bools into float64 as ufunc inputs


def integers_into_floats(np: ModuleType, v: list) -> Any:
    i, u, f = v
    return (i * 0.5 + u) / (f + 3.0) + i.astype(np.float32)  # int64 and uint8 into float64, int64 into float32


def narrowing_integers(np: ModuleType, v: list) -> Any:
    i, j = v
    wide = i * j  # int64 products beyond int8 and uint16, cast as NumPy wraps them
    return wide.astype(np.int8).astype(np.int64) + wide.astype(np.uint16) + np.not_equal(wide, 0).astype(np.uint32)


def output_casts(np: ModuleType, v: list) -> Any:
    a, b, small = v
    np.less(a, b, out=small)  # a bool result into int16 memory
    np.add(small, 7, out=small)
    return small * 3


def floats_into_integers(np: ModuleType, v: list) -> Any:
    (a,) = v
    return (a * 1e10).astype(np.int32) + 1  # out of range: NumPy's "invalid value" from its cast


def floats_narrowed(np: ModuleType, v: list) -> Any:
    (a,) = v
    return (a * 1e300).astype(np.float32) * 2  # overflow in NumPy's cast


PROGRAMS: list[tuple[Callable[..., Any], Callable[[], list[np.ndarray]], bool]] = [
    (chain, lambda: [floats(64, 200), floats(64, 200), floats(64, 200)], True),
    (float32_weak_scalars, lambda: [floats(90, 130, dtype="float32"), floats(90, 130, dtype="float32")], True),
    (integers, lambda: [ints(50, 300), ints(50, 300)], True),
    (bits, lambda: [ints(40, 333, dtype="int32"), ints(40, 333, dtype="int32", high=8)], True),
    (small_unsigned, lambda: [ints(70, 150, dtype="uint8", high=256), ints(70, 150, dtype="uint8", high=256)], True),
    (logic, lambda: [with_nans(floats(80, 170)), floats(80, 170), floats(80, 170)], True),
    (complex_numbers, lambda: [floats(60, 100) + 1j * floats(60, 100), floats(60, 100) + 1j * floats(60, 100)], True),
    (nan_selection, lambda: [with_nans(floats(100, 101)), with_nans(floats(100, 101))[::-1].copy()], True),
    (strided_views, lambda: [floats(300, 303), floats(301, 303)], True),
    (broadcast_operands, lambda: [floats(120, 97), floats(97), floats(120)], True),
    (three_axes, lambda: [floats(7, 33, 129), floats(7, 33, 129)], True),
    (in_place, lambda: [floats(128, 257), floats(128, 257)], True),
    (copies_into_slices, lambda: [floats(100_003), floats(100_003)], True),
    (long_rows, lambda: [floats(3, 50_001)], True),
    (mixed_dtypes, lambda: [floats(64, 200), floats(64, 200, dtype="float32")], True),
    (game_of_life_rule, lambda: [ints(90, 130, dtype="int8", high=2), ints(90, 130, dtype="int64", high=9)], True),
    (masks_into_numbers, lambda: [floats(77, 211), floats(77, 211)], True),
    (integers_into_floats, lambda: [ints(60, 150) * 10**15, ints(60, 150, dtype="uint8", high=256), floats(60, 150)], True),
    (narrowing_integers, lambda: [ints(50, 170, high=3000), ints(50, 170, high=3000)], True),
    (output_casts, lambda: [floats(40, 99), floats(40, 99), ints(40, 99, dtype="int16")], True),
]


@pytest.mark.parametrize(("program", "inputs", "looped"), PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_programs_give_numpys_values_through_the_loops(program, inputs, looped) -> None:
    arrays = inputs()
    expected = np.asarray(program(np, [array.copy() for array in arrays]))
    got, loop_blocks = through_shoal(program, arrays)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected, strict=True)
    assert (loop_blocks > 0) == looped


def test_off_runs_the_numpy_tile_path() -> None:
    arrays = [floats(64, 200), floats(64, 200), floats(64, 200)]
    got, loop_blocks = through_shoal(chain, arrays, loops="off")
    np.testing.assert_array_equal(got, chain(np, arrays))
    assert loop_blocks == 0


def warning_program(np: ModuleType, v: list) -> Any:
    a, b, c = v
    quiet = a * 2 + 1
    logs = np.log(b)  # divide by zero where b is 0
    ratio = c / b  # divide by zero and invalid (0 / 0)
    big = a * 1e308 * 10.0  # overflow where |a| > 1
    np.sqrt(c, out=c)  # invalid where c < 0, in place
    return quiet + logs + ratio + c + big


def warning_inputs() -> list[np.ndarray]:
    a, b, c = floats(64, 128), floats(64, 128), floats(64, 128)
    b[::5] = 0.0
    c[::10] = 0.0
    return [a, b, c]


def shown(run: Callable[[], Any]) -> tuple[list[tuple[Any, ...]], Any]:
    """(category, message, file, line) of each warning ``run()`` makes, and its result."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = np.asarray(run())
    return [(w.category, str(w.message), w.filename, w.lineno) for w in caught], result


def test_the_loops_conditions_warn_as_numpy_at_the_users_line() -> None:
    arrays = warning_inputs()
    expected, values = shown(lambda: warning_program(np, [array.copy() for array in arrays]))
    messages = {message for _, message, _, _ in expected}
    assert messages >= {"divide by zero encountered in log", "invalid value encountered in sqrt", "overflow encountered in multiply"}
    loop_blocks: list[int] = []

    def lazy() -> Any:
        result, count = through_shoal(warning_program, arrays)
        loop_blocks.append(count)
        return result

    got, got_values = shown(lazy)
    assert got == expected
    np.testing.assert_array_equal(got_values, values)
    assert loop_blocks[0] > 0


def casts_then_conditions(np: ModuleType, v: list) -> Any:
    i, f = v
    return np.log(i) + (f > 0) / i  # int64 and bool cast into float64; log(0), 1 / 0 and 0 / 0


def test_conditions_of_steps_with_casts_name_the_steps() -> None:
    i, f = ints(64, 128, high=4), floats(64, 128)
    expected = shown(lambda: casts_then_conditions(np, [i.copy(), f.copy()]))
    assert {str(message) for _, message, _, _ in expected[0]} == {
        "divide by zero encountered in log",
        "divide by zero encountered in divide",
        "invalid value encountered in divide",
        "invalid value encountered in log",
        "invalid value encountered in add",
    }
    loop_blocks: list[int] = []

    def lazy() -> Any:
        result, count = through_shoal(casts_then_conditions, [i, f])
        loop_blocks.append(count)
        return result

    got = shown(lazy)
    assert [w[:2] for w in got[0]] == [w[:2] for w in expected[0]]
    np.testing.assert_array_equal(got[1], expected[1])
    assert loop_blocks[0] > 0


def test_raise_mode_raises_numpys_error_from_the_loops() -> None:
    arrays = warning_inputs()

    def run(xp: ModuleType, inputs: list) -> Any:
        a, b, _ = inputs
        with np.errstate(divide="raise"):
            return np.asarray(xp.log(b) + a)

    with pytest.raises(FloatingPointError, match="divide by zero encountered in log"):
        run(np, [array.copy() for array in arrays])
    with pytest.raises(FloatingPointError, match="divide by zero encountered in log"):
        through_shoal(run, arrays)


def integer_power(np: ModuleType, v: list) -> Any:
    i, j = v
    return i**j + 1


def reduction(np: ModuleType, v: list) -> Any:
    (a,) = v
    return np.sum(a * 2 + 1)


@pytest.mark.parametrize(
    ("program", "inputs"),
    [
        (integer_power, lambda: [ints(64, 100, high=5), ints(64, 100, dtype="int64", high=3) + 3]),
        (reduction, lambda: [floats(64, 100)]),
        (floats_into_integers, lambda: [floats(64, 100)]),
        (floats_narrowed, lambda: [floats(64, 100)]),
    ],
    ids=["integer_power", "reduction", "floats_into_integers", "floats_narrowed"],
)
def test_groups_the_loops_do_not_take_keep_to_the_tile_path(program, inputs) -> None:
    arrays = inputs()
    expected = shown(lambda: program(np, [array.copy() for array in arrays]))
    loop_blocks: list[int] = []

    def lazy() -> Any:
        result, count = through_shoal(program, arrays)
        loop_blocks.append(count)
        return result

    got = shown(lazy)
    if program in (floats_into_integers, floats_narrowed):
        assert any(str(message).endswith("encountered in cast") for _, message, _, _ in expected[0])
    assert [w[:2] for w in got[0]] == [w[:2] for w in expected[0]]
    np.testing.assert_allclose(got[1], expected[1], rtol=1e-12)  # a sum adds in blocks
    assert loop_blocks == [0]


def test_integer_power_to_a_negative_power_raises_as_numpy() -> None:
    arrays = [ints(64, 100, high=5), np.full((64, 100), -1, dtype=np.int64)]
    with pytest.raises(ValueError, match="Integers to negative integer powers"):
        integer_power(np, arrays)
    with pytest.raises(ValueError, match="Integers to negative integer powers"):
        through_shoal(integer_power, arrays)


def loop(ufunc: np.ufunc, *dtypes: str) -> tuple[int, int]:
    found = tile_loops.loop_of(ufunc, tuple(np.dtype(d).num for d in dtypes))
    assert found is not None
    return found


def test_a_misaligned_operand_is_refused() -> None:
    add = loop(np.add, "f8", "f8", "f8")
    memory = np.zeros(8 * 100 + 1, np.uint8)
    out = np.zeros(100)
    aligned = (0, memory, 0, 8, (8,))
    shifted = (0, memory, 1, 8, (8,))
    target = (0, out, 0, 8, (8,))
    steps = ((*add, (0, 0, 1)),)
    assert tile_loops.run_loops(steps, (aligned, target), (100,), 64) == (0,)
    assert tile_loops.run_loops(steps, (shifted, target), (100,), 64) == -1


def test_loop_of_finds_only_exact_loops() -> None:
    assert tile_loops.loop_of(np.add, (np.dtype("f4").num, np.dtype("f8").num, np.dtype("f8").num)) is None
    assert tile_loops.loop_of(np.add, (np.dtype("f8").num,) * 2) is None
    with pytest.raises(TypeError):
        tile_loops.loop_of(len, (1, 1, 1))


CAST_TYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64", "float16", "complex128"]


def cast_sources(dtype: np.dtype) -> np.ndarray:
    """Values of ``dtype`` with its extremes, bools stored as bytes other than 0 and 1, integers
    where float32 rounds, and NaNs, infinities, signed zeros and subnormals."""
    rng = np.random.default_rng(dtype.num)
    if dtype.kind == "b":
        return np.frombuffer(rng.integers(0, 256, 5000, dtype=np.uint8).tobytes(), dtype=bool).copy()
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        values = rng.integers(info.min, info.max, 5000, dtype=dtype, endpoint=True)
        values[:5] = [info.min, info.max, 0, 1, info.max // 2 + 1]
        values[5:1005] = rng.integers(0, min(info.max, 2**25), 1000)
        return values
    values = rng.standard_normal(5000) * 10.0 ** rng.integers(-30, 30, 5000)
    values[:6] = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-310]
    with np.errstate(all="ignore"):
        return values.astype(dtype)


def test_cast_loops_give_numpys_bits_and_no_conditions() -> None:
    offered = 0
    for source_name in CAST_TYPES:
        source = cast_sources(np.dtype(source_name))
        for target_name in CAST_TYPES:
            target = np.dtype(target_name)
            found = tile_loops._cast(source.dtype, target)
            if found is None:
                continue
            offered += 1
            with np.errstate(all="raise"):
                expected = source.astype(target)
            out = np.empty(source.size, target)
            operands = ((0, source, 0, source.itemsize, (source.itemsize,)), (0, out, 0, target.itemsize, (target.itemsize,)))
            assert tile_loops.run_loops(((*found, (0, 1)),), operands, (source.size,), 512) == (0,)
            assert out.tobytes() == expected.tobytes(), (source_name, target_name)
    assert offered == 93
    assert tile_loops._cast(np.dtype("int8"), np.dtype("int8")) is None
    assert tile_loops._cast(np.dtype("bool"), np.dtype("bool")) is None
    assert tile_loops._cast(np.dtype("float64"), np.dtype("float32")) is None
    assert tile_loops._cast(np.dtype("float64"), np.dtype("int64")) is None
    assert tile_loops._cast(np.dtype(">f8"), np.dtype("<f8")) is None


def test_run_reports_each_steps_conditions_in_numpys_bits() -> None:
    divide = loop(np.divide, "f8", "f8", "f8")
    add = loop(np.add, "f8", "f8", "f8")
    zeros, out, scratch = np.zeros(50), np.empty(50), np.empty(64)
    operands = ((0, zeros, 0, 8, (8,)), (1, scratch, 0, 8, ()), (0, out, 0, 8, (8,)), (2, np.array(1.0), 0, 8, ()))
    steps = ((*add, (0, 3, 1)), (*divide, (3, 0, 2)), (*divide, (0, 0, 2)))
    assert tile_loops.run_loops(steps, operands, (50,), 16) == (0, 1, 8)


RANDOM_DTYPES = ["float64", "float32", "int64", "int32", "uint8", "bool", "complex128"]
UNARY = {"f": ["negative", "absolute", "sqrt", "exp", "sin", "floor", "square"], "i": ["negative", "absolute", "square"], "u": ["square"], "b": ["logical_not"], "c": ["negative", "square", "conjugate"]}
BINARY = {
    "f": ["add", "subtract", "multiply", "divide", "maximum", "minimum", "fmax", "arctan2", "copysign"],
    "i": ["add", "subtract", "multiply", "floor_divide", "remainder", "bitwise_and", "bitwise_xor", "maximum"],
    "u": ["add", "subtract", "multiply", "bitwise_or", "minimum"],
    "b": ["logical_and", "logical_or", "logical_xor", "bitwise_and"],
    "c": ["add", "subtract", "multiply"],
}


def random_program(seed: int) -> tuple[Callable[[ModuleType, list], Any], list[np.ndarray]]:
    """Element-wise steps of one dtype over three arrays and scalars, some views strided."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(RANDOM_DTYPES[seed % len(RANDOM_DTYPES)])
    shape = (int(rng.integers(20, 90)), int(rng.integers(30, 200)))
    if dtype.kind == "b":
        arrays = [rng.random(shape) > 0.5 for _ in range(3)]
    elif dtype.kind in "iu":
        arrays = [rng.integers(0 if dtype.kind == "u" else -50, 50, shape).astype(dtype) for _ in range(3)]
    else:
        arrays = [(rng.standard_normal(shape) * 2 + (1j * rng.standard_normal(shape) if dtype.kind == "c" else 0)).astype(dtype) for _ in range(3)]
    plan = [(str(rng.choice(UNARY[dtype.kind])), None) if rng.random() < 0.3 else (str(rng.choice(BINARY[dtype.kind])), int(rng.integers(0, 4))) for _ in range(int(rng.integers(2, 7)))]
    scalar = {"b": True, "i": 3, "u": 2, "f": 0.75, "c": 0.5 - 0.25j}[dtype.kind]
    flip = bool(rng.random() < 0.5)

    def program(xp: ModuleType, v: list) -> Any:
        a, b, c = v
        if flip:
            b = b[::-1, ::-1]
        value = a
        for name, other in plan:
            ufunc = getattr(xp, name)
            if other is None:
                value = ufunc(value)
            else:
                value = ufunc(value, (a, b, c, scalar)[other])
        return value

    return program, arrays


@pytest.mark.parametrize("seed", range(42))
def test_random_programs_give_numpys_values_and_warnings(seed: int) -> None:
    program, arrays = random_program(seed)
    expected = shown(lambda: program(np, [array.copy() for array in arrays]))
    got = shown(lambda: through_shoal(program, arrays)[0])
    assert [w[:2] for w in got[0]] == [w[:2] for w in expected[0]]
    np.testing.assert_array_equal(got[1], expected[1], strict=True)
