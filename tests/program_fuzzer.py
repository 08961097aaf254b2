"""Random NumPy programs in the styles users write, for differential runs of whole programs.

:func:`write_program` turns a seed into the source of a small program over square ``(S, S)``
matrices and length-``S`` vectors: loops over rows, columns and triangular slices
(``C[i, i + 1:] = A[:, i] @ B[:, i + 1:]``), chained and in-place assignments, boolean-mask and
integer-array assignments (masks that select nothing included), views of views, reductions read
as Python floats inside the loop, arrays created and dropped inside the loop, and ``@`` of
slices. Every value is kept in [-1, 1] by ``tanh`` so that loops do not overflow.

Shapes are tracked symbolically: inside ``for i in ...`` the slice ``i + 1:`` has length
``S - i - 1`` (``"T"``) and ``:i + 1`` has ``i + 1`` (``"H"``); a statement combines only
operands of one symbolic shape, so every program is valid NumPy at every iteration. Outside a
loop ``i`` is a fixed number. The program calls ``read(x)`` where it reads a value; the harness
logs every read, so runs can be compared read by read.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

# symbolic length -> slice producing it (i is the loop variable; 0 <= i <= S - 2)
SLICES = {"S": (":", "::-1", "::1"), "T": ("i + 1:",), "H": (":i + 1",)}
SCALAR_INDEX = ("i", "0", "-1", "S - 1 - i")
THRESHOLDS = ("-2.0", "-0.3", "0.0", "0.3", "2.0")  # +-2.0: a mask that selects nothing or all


@dataclass
class ProgramWriter:
    """Writes one program; ``matrices`` and ``vectors`` are the live variable names."""

    rng: random.Random
    size: int
    matrices: list[str] = field(default_factory=list)
    vectors: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    indent: str = ""
    counter: int = 0

    def emit(self, line: str) -> None:
        self.lines.append(self.indent + line)

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    # ----------------------------------------------------------------- operands of one shape

    def dims(self) -> str:
        return self.rng.choice(("S", "S", "T", "H"))

    def sl(self, dim: str) -> str:
        return self.rng.choice(SLICES[dim])

    def view(self, shape: tuple[str, ...]) -> str:
        """A view of a live variable with symbolic ``shape`` (one or two axes)."""
        pick = self.rng.choice
        if len(shape) == 1:
            if self.vectors and self.rng.random() < 0.3:
                return f"{pick(self.vectors)}[{self.sl(shape[0])}]"
            matrix, index = pick(self.matrices), pick(SCALAR_INDEX)
            if self.rng.random() < 0.5:
                return f"{matrix}[{index}, {self.sl(shape[0])}]"
            return f"{matrix}[{self.sl(shape[0])}, {index}]"
        rows, cols = shape
        matrix = pick(self.matrices)
        if self.rng.random() < 0.3:
            return f"{matrix}[{self.sl(cols)}, {self.sl(rows)}].T"
        return f"{matrix}[{self.sl(rows)}, {self.sl(cols)}]"

    def expression(self, shape: tuple[str, ...], depth: int = 2) -> str:
        """An expression of symbolic ``shape`` with values of moderate size."""
        roll = self.rng.random()
        if depth == 0 or roll < 0.25:
            return self.view(shape)
        if roll < 0.45:
            op = self.rng.choice(("+", "-", "*"))
            return f"({self.expression(shape, depth - 1)} {op} {self.expression(shape, depth - 1)})"
        if roll < 0.55:
            function = self.rng.choice(("np.tanh", "np.sin", "np.abs", "np.negative"))
            return f"{function}({self.expression(shape, depth - 1)})"
        if roll < 0.62:
            return f"{self.rng.choice(('0.5', '2.0', '-1.5'))} * {self.expression(shape, depth - 1)}"
        if roll < 0.68:
            return f"np.maximum({self.expression(shape, depth - 1)}, {self.rng.choice(THRESHOLDS)})"
        if roll < 0.84:
            return self.product(shape)
        return self.reduction(shape)

    def product(self, shape: tuple[str, ...]) -> str:
        """``@`` of slices giving ``shape``, scaled back to moderate values."""
        pick = self.rng.choice
        if len(shape) == 1:
            if self.vectors and self.rng.random() < 0.4:
                return f"({pick(self.matrices)}[{self.sl(shape[0])}, :] @ {pick(self.vectors)}) / S"
            return f"({pick(self.matrices)}[:, {pick(SCALAR_INDEX)}] @ {pick(self.matrices)}[:, {self.sl(shape[0])}]) / S"
        rows, cols = shape
        return f"({pick(self.matrices)}[{self.sl(rows)}, :] @ {pick(self.matrices)}[:, {self.sl(cols)}]) / S"

    def reduction(self, shape: tuple[str, ...]) -> str:
        """A reduction along an axis that leaves ``shape``."""
        pick = self.rng.choice
        reduce = pick(("sum", "mean", "max", "min"))
        if len(shape) == 1:
            matrix = pick(self.matrices)
            if self.rng.random() < 0.5:
                return f"np.{reduce}({matrix}[{self.sl(shape[0])}, :], axis=1) / S"
            return f"{matrix}[:, {self.sl(shape[0])}].{reduce}(axis=0) / S"
        return f"np.{reduce}({self.view(shape)}, keepdims=True) * 0.5 + {self.view(shape)}"

    # ------------------------------------------------------------------------- statements

    def target(self, shape: tuple[str, ...]) -> str:
        """A view of ``shape`` to assign to (a transposed one is written through ``[...]``)."""
        view = self.view(shape)
        return f"{view}[...]" if view.endswith(".T") else view

    def statement(self, in_loop: bool) -> None:
        """One random statement (several lines for some kinds)."""
        roll = self.rng.random()
        shape: tuple[str, ...] = (self.dims(),) if self.rng.random() < 0.6 else (self.dims(), self.dims())
        if roll < 0.22:
            self.emit(f"{self.target(shape)} = np.tanh({self.expression(shape)})")
        elif roll < 0.34:
            op = self.rng.choice(("+=", "-=", "*="))
            self.emit(f"{self.target(shape)} {op} 0.5 * np.tanh({self.expression(shape)})")
        elif roll < 0.44:
            line = (self.dims(),)
            self.emit(f"{self.target(line)} = {self.target(line)} = np.tanh({self.expression(line)})")
        elif roll < 0.54:
            self.mask_assignment(shape)
        elif roll < 0.61:
            self.index_assignment()
        elif roll < 0.70:
            self.read_reduction()
        elif roll < 0.78:
            self.temporary(shape, in_loop)
        elif roll < 0.86 and not in_loop:
            self.new_variable()
        elif roll < 0.90 and not in_loop and len(self.matrices) > 2:
            name = self.rng.choice(self.matrices[1:])
            self.matrices.remove(name)
            self.emit(f"del {name}")
        else:
            self.emit(f"read({self.view(shape)})")

    def mask_assignment(self, shape: tuple[str, ...]) -> None:
        threshold = self.rng.choice(THRESHOLDS)
        kind = self.rng.random()
        if kind < 0.4:
            name = self.rng.choice(self.matrices + self.vectors)
            self.emit(f"{name}[{name} > {threshold}] = {self.rng.choice(('1.0', '-0.25', '0.0'))}")
        elif kind < 0.7:
            view = self.target(shape)
            self.emit(f"{view}[{view} <= {threshold}] = 0.5")
        else:
            mask = self.fresh("m")
            self.emit(f"{mask} = {self.view(shape)} < {threshold}")
            self.emit(f"{self.target(shape)}[{mask}] = np.tanh({self.expression(shape, 1)})[{mask}]")
            self.emit(f"del {mask}")

    def index_assignment(self) -> None:
        rows = sorted(self.rng.sample(range(self.size), self.rng.randint(1, min(3, self.size))))
        name = self.rng.choice(self.matrices)
        if self.rng.random() < 0.5:
            self.emit(f"{name}[{rows}] = np.tanh({name}[{rows}] * 2.0 + {self.view(('S',))})")
        else:
            self.emit(f"{name}[:, {rows}] *= {self.rng.choice(('0.5', '-1.0'))}")

    def read_reduction(self) -> None:
        value = self.fresh("s")
        reduce = self.rng.choice(("sum", "max", "min", "mean"))
        self.emit(f"{value} = float(np.{reduce}({self.view((self.dims(), self.dims()))}))")
        self.emit(f"read({value})")
        if self.rng.random() < 0.5:
            self.emit(f"if {value} > 0.0:")
            self.emit(f"    {self.target(('S',))} *= 0.5")
        else:
            self.emit(f"{self.target(('S',))} += 0.01 * {value}")

    def temporary(self, shape: tuple[str, ...], in_loop: bool) -> None:
        temp = self.fresh("t")
        self.emit(f"{temp} = {self.expression(shape)}")
        self.emit(f"{self.target(shape)} = np.tanh({temp} * 0.5)")
        if in_loop or self.rng.random() < 0.5:
            self.emit(f"del {temp}")

    def new_variable(self) -> None:
        name = self.fresh("A")
        source = self.rng.choice(self.matrices)
        self.emit(
            f"{name} = "
            + self.rng.choice(
                (
                    f"{source}[::-1]",
                    f"{source}.T",
                    f"{source}[:, ::-1][::-1]",
                    f"{source}.copy()",
                    f"np.tanh({source} @ {self.rng.choice(self.matrices)} / S)",
                )
            )
        )
        self.matrices.append(name)

    def loop(self) -> None:
        header = self.rng.choice(("for i in range(S - 1):", "for i in range(S - 2, -1, -1):"))
        self.emit(header)
        self.indent = "    "
        for _ in range(self.rng.randint(1, 4)):
            self.statement(in_loop=True)
        self.indent = ""


def write_program(seed: int) -> str:
    """The source of a random program; it uses ``np``, ``D`` (input arrays) and ``read``."""
    rng = random.Random(seed)
    size = rng.randint(3, 14)
    writer = ProgramWriter(rng, size)
    writer.emit(f"S = {size}")
    writer.emit(f"i = {rng.randint(0, size - 2)}")
    for k in range(3):
        writer.emit(f"A{k} = np.array(D[{k}])")
        writer.matrices.append(f"A{k}")
    for k in range(2):
        writer.emit(f"v{k} = np.array(D[{3 + k}])")
        writer.vectors.append(f"v{k}")
    writer.counter = 10
    for _ in range(rng.randint(3, 8)):
        if rng.random() < 0.5:
            writer.loop()
        else:
            writer.statement(in_loop=False)
    for name in writer.matrices + writer.vectors:
        writer.emit(f"read({name})")
    return "\n".join(writer.lines) + "\n"


def program_inputs(seed: int, size: int) -> list:
    """The input arrays of program ``seed``: three (S, S) matrices and two vectors in [-1, 1]."""
    import numpy

    generator = numpy.random.default_rng(seed)
    return [generator.uniform(-1, 1, (size, size)) for _ in range(3)] + [generator.uniform(-1, 1, size) for _ in range(2)]


def program_size(source: str) -> int:
    """The ``S`` that program ``source`` sets on its first line."""
    return int(source.splitlines()[0].split("=")[1])
