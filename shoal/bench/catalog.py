"""The benchmarked examples: sizes, fixed arguments, the variant programs and minimal traffic.

Each entry names the example program (``examples/<name>.py``), its numexpr and Dask variants
(``benchmarks/variants/<name>_<tool>.py``, or ``None`` where the kernel is not expressible with
that tool) and the bytes a minimal fused implementation must move through memory at a given size:
every array read once and written once per sweep, temporaries never materialised. Dividing those
bytes by the measured time gives the effective bandwidth reported against the STREAM roof.
Compute-bound examples (transcendentals, O(N^2) interactions) still get the figure, labelled.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

FLOAT64 = 8
COMPLEX128 = 16


@dataclass(frozen=True)
class Example:
    """One benchmarked program and how to size it."""

    name: str
    default_size: int
    quick_size: int
    arguments: tuple[str, ...]  # fixed arguments after SIZE, the same for every tool
    minimal_bytes: Callable[[int], float]  # SIZE -> bytes a minimal fused implementation moves
    elements: Callable[[int], int]  # SIZE -> elements of the largest array, for the table
    bound: str  # "memory" or "compute"
    variants: dict[str, str | None] = field(default_factory=dict)  # tool -> variant file or None

    def variant(self, tool: str) -> str | None:
        """File name of the ``tool`` variant under benchmarks/variants, or None if not expressible."""
        return self.variants.get(tool)


def _both(name: str) -> dict[str, str | None]:
    return {"numexpr": f"{name}_numexpr.py", "dask": f"{name}_dask.py"}


JACOBI_SWEEPS = 10
HEAT_SWEEPS = 10
BLACK_SCHOLES_DAYS = 5
SHALLOW_WATER_STEPS = 10
LATTICE_BOLTZMANN_STEPS = 5
MANDELBROT_ITERATIONS = 30
NBODY_STEPS = 5

EXAMPLES: tuple[Example, ...] = (
    Example(
        # Each sweep reads the grid and writes its interior; the final sum reads it once more.
        name="jacobi_stencil",
        default_size=4096,
        quick_size=300,
        arguments=("--iterations", str(JACOBI_SWEEPS)),
        minimal_bytes=lambda n: FLOAT64 * n * n * (2 * JACOBI_SWEEPS + 1),
        elements=lambda n: n * n,
        bound="memory",
        variants=_both("jacobi_stencil"),
    ),
    Example(
        # The (n+2)^2 grid is written once (zeros), then each sweep reads it and writes it back
        # (the convergence test rides along); the checksum reads it once more.
        name="heat_equation",
        default_size=4094,
        quick_size=300,
        arguments=("--epsilon", "0", "--max-iterations", str(HEAT_SWEEPS)),
        minimal_bytes=lambda n: FLOAT64 * (n + 2) ** 2 * (2 * HEAT_SWEEPS + 2),
        elements=lambda n: (n + 2) ** 2,
        bound="memory",
        variants=_both("heat_equation"),
    ),
    Example(
        # Each day reads spot, strike and years; both prices are reduced to means, never stored.
        name="black_scholes",
        default_size=4_000_000,
        quick_size=100_000,
        arguments=("--days", str(BLACK_SCHOLES_DAYS)),
        minimal_bytes=lambda n: FLOAT64 * 3 * n * BLACK_SCHOLES_DAYS,
        elements=lambda n: n,
        bound="compute",
        variants=_both("black_scholes"),
    ),
    Example(
        # Each step reads and writes the three (n+2)^2 fields; the checksum reads them once more.
        name="shallow_water",
        default_size=1022,
        quick_size=200,
        arguments=("--steps", str(SHALLOW_WATER_STEPS)),
        minimal_bytes=lambda n: FLOAT64 * 3 * (n + 2) ** 2 * (2 * SHALLOW_WATER_STEPS + 1),
        elements=lambda n: (n + 2) ** 2,
        bound="memory",
        variants=_both("shallow_water"),
    ),
    Example(
        # nx = SIZE, ny = SIZE // 2 cells, 9 populations: written once at the start, read and
        # written once per step (plus the one-byte obstacle mask), read once for the checksum.
        name="lattice_boltzmann",
        default_size=1024,
        quick_size=200,
        arguments=("--steps", str(LATTICE_BOLTZMANN_STEPS)),
        minimal_bytes=lambda n: n * max(n // 2, 8) * (
            FLOAT64 * 9 * (2 * LATTICE_BOLTZMANN_STEPS + 2) + LATTICE_BOLTZMANN_STEPS
        ),
        elements=lambda n: 9 * n * max(n // 2, 8),
        bound="memory",
        variants=_both("lattice_boltzmann"),
    ),
    Example(
        # The whole escape loop fuses into one pass: read c, write the counts.
        name="mandelbrot",
        default_size=1024,
        quick_size=200,
        arguments=("--iterations", str(MANDELBROT_ITERATIONS)),
        minimal_bytes=lambda n: (COMPLEX128 + FLOAT64) * n * n,
        elements=lambda n: n * n,
        bound="compute",
        variants=_both("mandelbrot"),
    ),
    Example(
        # O(N^2) pair interactions per step, but only the (N, 3) positions and velocities must
        # move: read and written once per step.
        name="nbody",
        default_size=2000,
        quick_size=200,
        arguments=("--steps", str(NBODY_STEPS)),
        minimal_bytes=lambda n: FLOAT64 * 3 * n * 4 * (NBODY_STEPS + 1),
        elements=lambda n: n * n,
        bound="compute",
        variants=_both("nbody"),
    ),
    Example(
        # Every training point (8 features and a label) is read once; the queries fit in cache.
        name="knn",
        default_size=10_000,
        quick_size=1_000,
        arguments=(),
        minimal_bytes=lambda n: FLOAT64 * 9 * n,
        elements=lambda n: 500 * n * 8,
        bound="compute",
        variants=_both("knn"),
    ),
)


def find(name: str) -> Example:
    """The catalog entry called ``name``; a ValueError naming the known ones otherwise."""
    for example in EXAMPLES:
        if example.name == name:
            return example
    known = ", ".join(example.name for example in EXAMPLES)
    raise ValueError(f"unknown example {name!r}; known examples: {known}")
