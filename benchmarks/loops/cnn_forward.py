"""Forward pass of a small convolutional network written with slices and ``np.sum`` over windows.

Two 5x5 convolution layers (each kernel offset a slice of the input, summed over the input
channels), ReLU, 2x2 max pooling through strided slices, a global average and a dense layer.

Usage: python cnn_forward.py [SIZE] [--batch B] [--seed S]
"""

import argparse
import time

import numpy as np


def conv(x: np.ndarray, weights: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """Valid convolution of ``x`` (batch, h, w, c_in) with ``weights`` (k, k, c_in, c_out)."""
    k = weights.shape[0]
    h, w = x.shape[1] - k + 1, x.shape[2] - k + 1
    out = np.zeros((x.shape[0], h, w, weights.shape[3])) + bias
    for di in range(k):
        for dj in range(k):
            window = x[:, di : di + h, dj : dj + w, :, np.newaxis]
            out += np.sum(window * weights[di, dj], axis=3)
    return out


def pool(x: np.ndarray) -> np.ndarray:
    """2x2 max pooling (odd trailing rows and columns dropped)."""
    h, w = x.shape[1] // 2 * 2, x.shape[2] // 2 * 2
    return np.maximum(
        np.maximum(x[:, 0:h:2, 0:w:2], x[:, 1:h:2, 0:w:2]),
        np.maximum(x[:, 0:h:2, 1:w:2], x[:, 1:h:2, 1:w:2]),
    )


def forward(x: np.ndarray, params: list[np.ndarray]) -> np.ndarray:
    w1, b1, w2, b2, w3, b3 = params
    a = pool(np.maximum(conv(x, w1, b1), 0.0))
    a = pool(np.maximum(conv(a, w2, b2), 0.0))
    features = np.mean(a, axis=(1, 2))
    return features @ w3 + b3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=128, help="image pixels per side")
    parser.add_argument("--batch", type=int, default=4, help="images per batch")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    x = rng.random((args.batch, args.size, args.size, 3))
    params = [
        rng.standard_normal((5, 5, 3, 6)) * 0.2, rng.standard_normal(6) * 0.1,
        rng.standard_normal((5, 5, 6, 16)) * 0.1, rng.standard_normal(16) * 0.1,
        rng.standard_normal((16, 10)) * 0.3, rng.standard_normal(10) * 0.1,
    ]

    float(x[0, 0, 0, 0])  # the set-up runs before the timer also where it is lazy
    start = time.perf_counter()
    logits = forward(x, params)
    checksum = float(np.sum(logits))
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()
