"""Every ``SHOAL_*`` setting, declared once: its name, type, default and meaning.

A setting's value is an explicit argument if one is given, else the environment variable, else
the default (:meth:`Setting.value`). This module is the only part of Shoal that reads the
environment for its settings; components receive theirs through their configuration.

``python -m shoal.settings`` prints the settings table that the README carries, and
``python -m shoal info`` prints the effective values.
"""

from __future__ import annotations

import enum
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

Choice = TypeVar("Choice", bound=enum.Enum)

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")


def integer_setting(name: str, text: str, minimum: int = 0) -> int:
    """``text`` (the value of setting ``name``) as an integer of at least ``minimum``."""
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{name} must be an integer of at least {minimum}, got {text!r}") from None
    if value < minimum:
        raise ValueError(f"{name} must be an integer of at least {minimum}, got {text!r}")
    return value


def choice_setting(kind: type[Choice], name: str, text: str) -> Choice:
    """``text`` (the value of setting ``name``) as the member of ``kind`` with that value, in any case."""
    try:
        return kind(text.strip().lower())
    except ValueError:
        known = ", ".join(str(member.value) for member in kind)
        raise ValueError(f"{name} must be one of {known}, got {text!r}") from None


class Kind(enum.Enum):
    """How a setting's text is read."""

    INTEGER = "integer"
    FLAG = "flag"
    CHOICE = "choice"
    TEXT = "text"


@dataclass(frozen=True)
class Setting:
    """One ``SHOAL_*`` environment variable.

    ``default`` None means "not set": the component that uses it decides (``default_text``
    says what it then does). A choice's value is the chosen word in lower case; the component
    turns it into its own enum.
    """

    name: str
    kind: Kind
    default: Any
    meaning: str
    minimum: int = 0
    choices: tuple[str, ...] = ()
    default_text: str = ""
    secret: bool = False  # its value is never shown (``effective`` says only that it is set)

    def parse(self, text: str) -> Any:
        """The value that ``text`` spells; a ValueError naming the setting if it spells none."""
        if self.kind is Kind.INTEGER:
            return integer_setting(self.name, text.strip(), self.minimum)
        if self.kind is Kind.FLAG:
            word = text.strip().lower()
            if word in _TRUE:
                return True
            if word in _FALSE:
                return False
            raise ValueError(f"{self.name} must be one of 1, 0 (or true, false, yes, no, on, off), got {text!r}")
        if self.kind is Kind.CHOICE:
            word = text.strip().lower()
            if word not in self.choices:
                raise ValueError(f"{self.name} must be one of {', '.join(self.choices)}, got {text!r}")
            return word
        return text

    def is_set(self, environ: Mapping[str, str] | None = None) -> bool:
        """True if the environment gives this setting a value (an empty one counts as unset)."""
        return bool((os.environ if environ is None else environ).get(self.name, ""))

    def value(self, explicit: Any = None, environ: Mapping[str, str] | None = None) -> Any:
        """``explicit`` if not None (parsed if it is text), else the environment's value, else
        the default."""
        if explicit is not None:
            return self.parse(explicit) if isinstance(explicit, str) else explicit
        text = (os.environ if environ is None else environ).get(self.name, "")
        return self.parse(text) if text else self.default

    @property
    def type_text(self) -> str:
        """The setting's type as the settings table shows it."""
        if self.kind is Kind.INTEGER:
            return f"integer ≥ {self.minimum}"
        if self.kind is Kind.CHOICE:
            return " \\| ".join(self.choices)
        return self.kind.value

    @property
    def shown_default(self) -> str:
        """The default as the settings table shows it."""
        if self.default_text:
            return self.default_text
        if self.kind is Kind.FLAG:
            return "1" if self.default else "0"
        return str(self.default)


def _integer(name: str, default: int | None, meaning: str, minimum: int = 0, default_text: str = "") -> Setting:
    return Setting(name, Kind.INTEGER, default, meaning, minimum=minimum, default_text=default_text)


def _flag(name: str, meaning: str) -> Setting:
    return Setting(name, Kind.FLAG, False, meaning)


def _choice(name: str, choices: tuple[str, ...], meaning: str, default: str | None = None, default_text: str = "") -> Setting:
    return Setting(name, Kind.CHOICE, choices[0] if default is None and not default_text else default, meaning, choices=choices, default_text=default_text)


def _text(name: str, meaning: str, default_text: str) -> Setting:
    return Setting(name, Kind.TEXT, None, meaning, default_text=default_text)


# ---------------------------------------------------------------- the stack and the frontend
ENGINE = _text("SHOAL_ENGINE", "The bottom component of the stack: `node` or `reference` (the plain-NumPy oracle).", "`node`")
STACK = _text(
    "SHOAL_STACK",
    "The component stack, top first, e.g. `pass:node`; a stack that ends in a middle layer gets `SHOAL_ENGINE` below it.",
    "`SHOAL_ENGINE`",
)
# Arrays below 2^19 elements stay NumPy arrays: a batch of them runs instruction by instruction in
# the node engine anyway (``direct.py``), so recording them only added overhead (1.4-2.7x NumPy's time
# at 10^5-3*10^5 elements, ``python -m benchmarks.size_sweep``).
EAGER_THRESHOLD = _integer("SHOAL_EAGER_THRESHOLD", 1 << 19, "Arrays with fewer elements, or fewer bytes than that many 4-byte elements, stay plain NumPy arrays.")
# Small views of a base that no recorded instruction still changes are read (and written) in the
# component's memory and their results computed by NumPy at once (``shoal/numpy/_settled.py``).
SETTLED_THRESHOLD = _integer(
    "SHOAL_SETTLED_THRESHOLD",
    1 << 19,
    "Views of fewer elements (or bytes than that many 4-byte elements) of a base with no pending writes are read and written in place and computed at once by NumPy (0: never).",
)
COMPILED_INDEXING = _choice(
    "SHOAL_COMPILED_INDEXING",
    ("on", "off"),
    "Index arrays whose base is held through the compiled slots where they were built at install (`off`: the same rules in Python; read at import).",
)
TILE_LOOPS = _choice(
    "SHOAL_TILE_LOOPS",
    ("on", "off"),
    "Before its kernel is compiled, a fused group of element-wise ufuncs runs through NumPy's own inner loops over small tiles, without the interpreter lock (`off`: one NumPy call per step and tile).",
)
ROLLED_READS = _choice(
    "SHOAL_ROLLED_READS",
    ("on", "off"),
    "Rolls of one array in a batch read views of one copy of it padded cyclically (`shoal/rolled_reads.py`; `off`: each roll copied on its own).",
)
FLUSH_THRESHOLD = _integer("SHOAL_FLUSH_THRESHOLD", 2048, "Instructions per batch before it is handed to the stack.", minimum=1)
# A loop that updates a lazy array from large NumPy arrays (``a += np.outer(u, v)``) carries each
# one into the batch, where NumPy frees it after the call: without a bound, 300 updates of a 1000²
# array held 2.3 GB (NumPy: 16 MB). 100 such updates: 8, 16, 32, 64, 256 MiB gave 0.137, 0.137,
# 0.148, 0.16, 0.21 s (NumPy 0.07 s): temporaries kept alive make NumPy take fresh memory. Only
# data of arrays that died counts: bounding all carried data cut the batch after a drawn grid's
# first use (Jacobi 4096² x 10: 0.065 -> 0.30-0.51 s).
FLUSH_BYTES = _integer(
    "SHOAL_FLUSH_BYTES",
    16 << 20,
    "Bytes of NumPy data a batch may carry for arrays that died before it is handed to the stack.",
    minimum=1,
)
DUMP = _flag("SHOAL_DUMP", "Print every batch's disassembly to standard error.")
VERIFY = _flag("SHOAL_VERIFY", "Verify every batch and round-trip it through the wire format before it runs.")
VERIFY_EXECUTE = _choice(
    "SHOAL_VERIFY_EXECUTE",
    ("on", "off"),
    "Whether the engines verify every batch at execute, before it touches memory.",
    default_text="on",
)
FULL_TRACEBACK = _flag("SHOAL_FULL_TRACEBACK", "Keep Shoal's own frames in tracebacks of `python -m shoal`.")
STATS = _flag("SHOAL_STATS", "Print the node engine's totals (batches, block operations, compiled ones) at exit.")
TRACE = _text(
    "SHOAL_TRACE",
    "Write a Chrome trace-event JSON of the run to this file at exit (opens in Perfetto; `python -m shoal trace-summary FILE`).",
    "unset: no trace",
)

# ---------------------------------------------------------------- the node engine
NUM_THREADS = _integer("SHOAL_NUM_THREADS", None, "Cores Shoal uses (engine threads, task workers, thread budget).", minimum=1, default_text="the CPU affinity mask")
BLOCK_SIZE = _integer("SHOAL_BLOCK_SIZE", 1 << 19, "Elements per block of the node engine, counted as 8-byte ones: a fused group of narrower dtypes gets as many bytes (measured in docs/decisions.md).", minimum=1)
TILE_ELEMENTS = _integer("SHOAL_TILE_ELEMENTS", 1 << 18, "Elements per NumPy call on the tile path that runs fused groups before their kernels are compiled, counted as 8-byte ones like the block size (measured in docs/decisions.md).", minimum=1)
COMPILE = _choice("SHOAL_COMPILE", ("background", "sync", "off"), "Compile fused kernels in the background (NumPy tiles until ready), before first use, or never.")
COMPILE_EXIT = _choice(
    "SHOAL_COMPILE_EXIT",
    ("detach", "wait", "kill"),
    "At exit, let the compile worker finish queued kernels alone, wait for it, or drop the work.",
)
SCHEDULE = _choice(
    "SHOAL_SCHEDULE",
    ("program", "reverse"),
    "Which ready block operation runs first: the earliest, or the latest (a legal order tests use to show no dependency is missing).",
)
DIRECT_WORK = _integer(
    "SHOAL_DIRECT_WORK",
    1 << 23,
    "Element operations below which a batch runs instruction by instruction without blocks (0 = never).",
)
# Jacobi 4096², 10 sweeps: 2 per pass 0.25 s, 3: 0.20 s, 4: 0.175 s, 1: 0.29 s.
SWEEPS_PER_PASS = _integer("SHOAL_SWEEPS_PER_PASS", 4, "Consecutive in-place stencil sweeps a compiled kernel runs per pass over memory.", minimum=1)
CACHE_DIR = _text("SHOAL_CACHE_DIR", "Folder of the compiled-kernel cache (kernels are kept in its `kernels/`).", "`~/.cache/shoal`")

# ---------------------------------------------------------------- the remote proxy (docs/proxy.md)
REMOTE = _text("SHOAL_REMOTE", "`HOST:PORT` of a `shoal serve`: array work runs there instead of in this process.", "unset: work runs here")
TOKEN_FILE = _text("SHOAL_TOKEN_FILE", "File holding the server's token (a regular file of the user, mode 0600).", "none")
TOKEN = Setting("SHOAL_TOKEN", Kind.TEXT, None, "The server's token itself, instead of a file; never shown.", default_text="none", secret=True)
TLS_CA = _text("SHOAL_TLS_CA", "Certificate to trust when the server uses TLS.", "the system's authorities")
PROXY_COMPRESSION = _choice("SHOAL_PROXY_COMPRESSION", ("on", "off"), "Accept zstd-compressed arrays from the server where compressing pays.")

# ---------------------------------------------------------------- the cluster (docs/cluster.md)
CLUSTER = _choice("SHOAL_CLUSTER", ("auto", "off"), "Under `mpiexec`, run the program across the ranks (`auto`) or as separate copies (`off`).")
CLUSTER_MIN_BYTES = _integer("SHOAL_CLUSTER_MIN_BYTES", 1 << 16, "Bases of at least this many bytes are split over the ranks; smaller ones stay on rank 0.")
CLUSTER_REPLICATE_BYTES = _integer(
    "SHOAL_CLUSTER_REPLICATE_BYTES",
    1 << 12,
    "Bases of at most this many bytes that a batch brings with data and does not write are kept whole on every rank (0: on rank 0 only).",
    minimum=0,
)
CLUSTER_MAX_PIECES = _integer("SHOAL_CLUSTER_MAX_PIECES", 4096, "Pieces one instruction may split into on the cluster before it runs on gathered data.", minimum=1)
CLUSTER_HALO = _integer("SHOAL_CLUSTER_HALO", 8, "Rows of its neighbours each rank keeps of a base split by rows (0: none, one message per piece).", minimum=0)
CLUSTER_LAYOUT = _choice(
    "SHOAL_CLUSTER_LAYOUT",
    ("rows", "block-cyclic"),
    "How a distributed base is split: one range of whole rows per rank, or N-dimensional blocks dealt cyclically over a process grid (no halo rows).",
)
CLUSTER_BLOCK = _text(
    "SHOAL_CLUSTER_BLOCK",
    "Block shape of the block-cyclic layout: extents of the leading axes such as `64` or `64x64` (the other axes whole; arrays with fewer axes get `auto`), or `auto`.",
    "`auto`: whole rows, 4 blocks per rank",
)
CLUSTER_HALO_SWEEPS = _choice(
    "SHOAL_CLUSTER_HALO_SWEEPS",
    ("auto", "own", "redundant"),
    "Ranks compute only their own rows, exchanging halos before each sweep (`own`), or also the current halo rows, exchanging once per halo depth (`redundant`); `auto` picks by a measured round trip: on a slow link own rows with their interiors first (with latency hiding; else redundant rows), on a fast one own rows, but halo rows too in a loop of one in-place sweep (whose shrinking sweeps fuse).",
)
CLUSTER_INTERIOR_FIRST = _choice(
    "SHOAL_CLUSTER_INTERIOR_FIRST",
    ("auto", "on", "off"),
    "With latency hiding and own rows, compute the rows of a sweep that need no halo while the halo travels (`on`), or the whole sweep once it arrived (`off`); `auto` does so where the measured round trip says the link is slow.",
)
CLUSTER_WAIT = _choice(
    "SHOAL_CLUSTER_WAIT",
    ("auto", "spin", "yield"),
    "How a rank waits for messages: in MPI's busy loop (`spin`), or testing and giving the processor up between tests (`yield`), so ranks sharing a core run; `auto` yields where a host has more ranks than cores.",
)
LATENCY_HIDING = _choice("SHOAL_LATENCY_HIDING", ("on", "off"), "Start communication first and wait last (paper 003 §5.7), or wait for each message where it stands.")

# ---------------------------------------------------------------- threads
COMPOSABILITY = _choice(
    "SHOAL_COMPOSABILITY",
    ("exclusive", "counting"),
    "Large linear-algebra calls and parallel regions take tokens from a node-wide semaphore.",
    default_text="off",
)
SEMAPHORE_PATH = _text("SHOAL_SEMAPHORE_PATH", "File of the node-wide thread semaphore.", "one per user in /dev/shm")

# ---------------------------------------------------------------- the test suite
TESTS_AGAINST_NUMPY = _flag("SHOAL_TESTS_AGAINST_NUMPY", "Test suite only: put NumPy on both sides of the differential tests.")

SETTINGS: tuple[Setting, ...] = tuple(value for value in dict(globals()).values() if isinstance(value, Setting))


def setting(name: str) -> Setting:
    """The declared setting called ``name`` (``SHOAL_...``)."""
    for declared in SETTINGS:
        if declared.name == name:
            return declared
    raise KeyError(f"no Shoal setting is called {name!r}")


def effective(environ: Mapping[str, str] | None = None) -> list[tuple[Setting, Any, str]]:
    """Every setting with its value now and where the value comes from (environment or default).

    A bad value is shown as the error it causes instead of raising."""
    rows = []
    for declared in SETTINGS:
        source = "environment" if declared.is_set(environ) else "default"
        try:
            value = declared.value(environ=environ)
        except ValueError as error:
            value, source = f"invalid: {error}", "environment"
        if declared.secret and declared.is_set(environ):
            value = "set (not shown)"
        elif value is None:
            value = declared.shown_default.strip("`")
        elif isinstance(value, bool):
            value = int(value)
        rows.append((declared, value, source))
    return rows


TABLE_BEGIN = "<!-- settings table: generated by `python -m shoal.settings --write-readme` -->"
TABLE_END = "<!-- end of settings table -->"


def markdown_table() -> str:
    """The settings table of the README, between its two marker lines."""
    lines = [TABLE_BEGIN, "", "| Variable | Type | Default | Meaning |", "|---|---|---|---|"]
    for declared in SETTINGS:
        default = declared.shown_default
        default = default if default.startswith("`") or " " in default else f"`{default}`"
        lines.append(f"| `{declared.name}` | {declared.type_text} | {default} | {declared.meaning} |")
    lines += ["", TABLE_END]
    return "\n".join(lines)


def with_table(readme: str) -> str:
    """``readme`` with the text between the table's markers replaced by :func:`markdown_table`."""
    start, end = readme.find(TABLE_BEGIN), readme.find(TABLE_END)
    if start < 0 or end < start:
        raise ValueError("the README has no settings table markers")
    return readme[:start] + markdown_table() + readme[end + len(TABLE_END) :]


def main(arguments: list[str]) -> int:
    """``python -m shoal.settings [--write-readme [README.md]]``: print or write the table."""
    if not arguments:
        print(markdown_table())
        return 0
    if arguments[0] == "--write-readme" and len(arguments) <= 2:
        path = arguments[1] if len(arguments) == 2 else "README.md"
        with open(path, encoding="utf-8") as file:
            text = file.read()
        updated = with_table(text)
        if updated != text:
            with open(path, "w", encoding="utf-8") as file:
                file.write(updated)
        return 0
    print("usage: python -m shoal.settings [--write-readme [README.md]]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
