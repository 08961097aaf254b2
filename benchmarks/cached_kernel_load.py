"""What loading a cached kernel's shared library costs, with its checks and without.

Fills a fresh kernel cache by running examples with ``SHOAL_COMPILE=sync``, then, in a new process
for each variant (so that every library is opened and linked for the first time), loads every
library of the cache and prints the time of the first library of a process (which also pays
for imports) and the median and largest time of each other library:

* ``checked``: ``native.load`` as Shoal runs it (record and library opened without following
  links, owner and modes checked with ``fstat``, SHA-256 of the library, ``dlopen`` through
  /proc/self/fd);
* ``unchecked``: reading the record and ``ctypes.CDLL`` by path, what loading cost before the
  checks;
* ``hash only``: the SHA-256 of the library's bytes.

    python benchmarks/cached_kernel_load.py [--examples black_scholes.py,mandelbrot.py] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

MEASURE = r"""
import ctypes, hashlib, json, statistics, sys, time
from pathlib import Path
from shoal.engine.node.compile import native
variant, libraries = sys.argv[1], [Path(p) for p in sys.argv[2:]]
times = []
for library in libraries:
    started = time.perf_counter()
    if variant == "checked":
        assert native.load(library) is not None, library
    elif variant == "unchecked":
        description = json.loads(library.with_suffix(".json").read_text())
        ctypes.CDLL(str(library))[description["symbol"]]
    else:
        hashlib.sha256(library.read_bytes()).hexdigest()
    times.append(time.perf_counter() - started)
print(json.dumps(times))
"""


def fill_cache(cache: Path, examples: list[str]) -> list[Path]:
    environment = {**os.environ, "SHOAL_CACHE_DIR": str(cache), "SHOAL_COMPILE": "sync", "SHOAL_COMPILE_EXIT": "wait"}
    for example in examples:
        subprocess.run([sys.executable, "-m", "shoal", str(EXAMPLES / example)], env=environment, check=True, capture_output=True)
    return sorted((cache / "kernels").glob("*.so"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", default="black_scholes.py,mandelbrot.py")
    parser.add_argument("--rounds", type=int, default=5)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        libraries = fill_cache(Path(scratch), arguments.examples.split(","))
        sizes = [library.stat().st_size for library in libraries]
        print(f"{len(libraries)} libraries, {min(sizes)}-{max(sizes)} bytes (median {statistics.median(sizes):.0f})")
        for variant in ("checked", "unchecked", "hash only"):
            first: list[float] = []  # the first library of a process also pays imports (hashlib)
            others: list[float] = []
            for _ in range(arguments.rounds):
                done = subprocess.run([sys.executable, "-c", MEASURE, variant, *map(str, libraries)],
                                      check=True, capture_output=True, text=True)  # fmt: skip
                times = json.loads(done.stdout)
                first.append(times[0])
                others += times[1:]
            print(f"{variant:>10}: first library {statistics.median(first) * 1e6:7.1f} us, each other "
                  f"median {statistics.median(others) * 1e6:6.1f} us (max {max(others) * 1e6:6.1f} us)")  # fmt: skip


if __name__ == "__main__":
    main()
