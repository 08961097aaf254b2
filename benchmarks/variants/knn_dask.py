"""k-nearest-neighbours classification (examples/knn.py): the broadcast distance array as a Dask
array chunked over training points (threaded scheduler), the selection in NumPy.

Distances come from one broadcast (queries x training points x features) array;
each query takes the majority label of its k nearest training points. The
checksum is the sum of the distances to those neighbours.

Usage: python knn_dask.py [SIZE] [--queries Q] [--features D] [-k K] [--seed S] [--chunk C]
"""

import argparse
import time

import dask
import dask.array as da
import numpy as np
from _example import load_example

example = load_example("knn")


def nearest_neighbours(
    queries: np.ndarray, training: np.ndarray, k: int, chunk: int
) -> tuple[np.ndarray, np.ndarray]:
    """Indices and distances of the k nearest training points of every query, nearest first."""
    points = da.from_array(training, chunks=(chunk, training.shape[1]))
    differences = queries[:, np.newaxis, :] - points[np.newaxis, :, :]
    distances = da.sqrt(da.sum(differences**2, axis=2)).compute()
    candidates = np.argpartition(distances, k - 1, axis=1)[:, :k]
    candidate_distances = np.take_along_axis(distances, candidates, axis=1)
    order = np.argsort(candidate_distances, axis=1)
    return (
        np.take_along_axis(candidates, order, axis=1),
        np.take_along_axis(candidate_distances, order, axis=1),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=10_000, help="training points")
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--features", type=int, default=8)
    parser.add_argument("-k", type=int, default=7)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--chunk", type=int, default=1000, help="training points per chunk")
    args = parser.parse_args()
    dask.config.set(scheduler="threads")

    rng = np.random.default_rng(args.seed)
    centres = rng.uniform(-3.0, 3.0, (example.CLASSES, args.features))
    labels = rng.integers(0, example.CLASSES, args.size)
    training = centres[labels] + rng.standard_normal((args.size, args.features))
    query_labels = rng.integers(0, example.CLASSES, args.queries)
    queries = centres[query_labels] + rng.standard_normal((args.queries, args.features))

    start = time.perf_counter()
    neighbours, distances = nearest_neighbours(queries, training, args.k, args.chunk)
    predicted = example.classify(labels[neighbours])
    checksum = float(np.sum(distances))
    accuracy = float(np.mean(predicted == query_labels))
    elapsed = time.perf_counter() - start

    print(f"accuracy: {accuracy:.4f}")
    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()
