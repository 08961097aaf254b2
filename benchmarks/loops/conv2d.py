"""2-D convolution of an image with a 5x5 filter written with slices, applied several times.

Every filter tap adds a weighted, shifted slice of the image to the output.

Usage: python conv2d.py [SIZE] [--steps N] [--seed S]   (N: filter applications)
"""

import argparse
import time

import numpy as np

K = 5


def convolve(image: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Valid 2-D correlation of ``image`` with ``weights``, zero-padded back to the input's shape."""
    h, w = image.shape[0] - K + 1, image.shape[1] - K + 1
    out = np.zeros_like(image)
    for di in range(K):
        for dj in range(K):
            out[K // 2 : K // 2 + h, K // 2 : K // 2 + w] += weights[di, dj] * image[di : di + h, dj : dj + w]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=1000, help="pixels per side")
    parser.add_argument("--steps", type=int, default=3, help="filter applications")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    image = rng.random((args.size, args.size))
    weights = rng.random((K, K))
    weights /= np.sum(weights)

    float(image[0, 0])  # the set-up runs before the timer also where it is lazy
    start = time.perf_counter()
    for _ in range(args.steps):
        image = convolve(image, weights)
    checksum = float(np.sum(image))
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()
