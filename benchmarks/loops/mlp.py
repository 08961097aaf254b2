"""Forward pass of a small multi-layer perceptron over a batch, repeated for several batches.

Three dense layers (64 -> 256 -> 256 -> 10) with ReLU, then a softmax over each row.

Usage: python mlp.py [SIZE] [--steps N] [--seed S]   (SIZE: rows per batch; N: batches)
"""

import argparse
import time

import numpy as np


def forward(x: np.ndarray, params: list[np.ndarray]) -> np.ndarray:
    w1, b1, w2, b2, w3, b3 = params
    h = np.maximum(x @ w1 + b1, 0.0)
    h = np.maximum(h @ w2 + b2, 0.0)
    logits = h @ w3 + b3
    e = np.exp(logits - np.max(logits, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=4000, help="rows per batch")
    parser.add_argument("--steps", type=int, default=5, help="batches")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    params = [
        rng.standard_normal((64, 256)) / 8.0, rng.standard_normal(256) * 0.1,
        rng.standard_normal((256, 256)) / 16.0, rng.standard_normal(256) * 0.1,
        rng.standard_normal((256, 10)) / 16.0, rng.standard_normal(10) * 0.1,
    ]
    batches = rng.random((args.steps, args.size, 64))

    float(batches[0, 0, 0])  # the set-up runs before the timer also where it is lazy
    start = time.perf_counter()
    checksum = 0.0
    for t in range(args.steps):
        probabilities = forward(batches[t], params)
        checksum += float(np.sum(probabilities * np.arange(10)))
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()
