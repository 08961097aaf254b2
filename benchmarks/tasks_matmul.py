"""Blocked matrix multiplication (paper 001 Algorithm 2): A and B RRO off / on / automatic.

    .venv/bin/python -m benchmarks.tasks_matmul [--blocks 8] [--sizes 256 512] [--reps 5]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import shoal.tasks as tasks
from benchmarks.tasks_stats import TABLE_HEADER, table_row
from shoal.tasks import IN, INOUT, task, wait_on


def multiply_block(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    c += a @ b


matmul_block = task(returns=0, c=INOUT)(multiply_block)
matmul_block_rro = task(
    returns=0, a={"direction": IN, "rro": True}, b={"direction": IN, "rro": True}, c=INOUT
)(multiply_block)


def _run(mode: str, a, b, blocks: int, size: int) -> tuple[float, np.ndarray]:
    tasks.start(auto_share=(mode == "auto"))
    try:
        step = matmul_block_rro if mode == "on" else matmul_block
        c = [[np.zeros((size, size)) for _ in range(blocks)] for _ in range(blocks)]
        start = time.perf_counter()
        for r in range(blocks):
            for col in range(blocks):
                for i in range(blocks):
                    step(a[r][i], b[i][col], c[r][col])
        result = np.block([[wait_on(c[r][col]) for col in range(blocks)] for r in range(blocks)])
        return time.perf_counter() - start, result
    finally:
        tasks.shutdown()
        for row in a + b:
            for block in row:
                block.flags.writeable = True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--blocks", type=int, nargs="+", default=[8])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512])
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    rows = []
    for blocks in args.blocks:
        for size in args.sizes:
            rng = np.random.default_rng(size)
            a = [[rng.standard_normal((size, size)) for _ in range(blocks)] for _ in range(blocks)]
            b = [[rng.standard_normal((size, size)) for _ in range(blocks)] for _ in range(blocks)]
            expected = np.block(a) @ np.block(b)
            times: dict[str, list[float]] = {"off": [], "on": [], "auto": []}
            for _ in range(args.reps):
                for mode in times:
                    elapsed, result = _run(mode, a, b, blocks, size)
                    np.testing.assert_allclose(result, expected, rtol=1e-9, atol=1e-9)
                    times[mode].append(elapsed)
            label = f"{blocks} blocks of {size}^2"
            rows.append(table_row(f"{label}, RRO on vs off", times["on"], times["off"]))
            rows.append(table_row(f"{label}, auto vs off", times["auto"], times["off"]))
            print("\n".join(rows[-2:]), flush=True)
    print(f"\nblocked matmul, {args.reps} alternating repetitions")
    print(TABLE_HEADER)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
