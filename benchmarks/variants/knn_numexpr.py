"""k-nearest-neighbours classification (examples/knn.py) with the distances evaluated by numexpr.

Distances come from one broadcast (queries x training points x features) array;
each query takes the majority label of its k nearest training points. The
checksum is the sum of the distances to those neighbours.

Usage: python knn_numexpr.py [SIZE] [--queries Q] [--features D] [-k K] [--seed S]
"""

import argparse
import time

import numexpr as ne
import numpy as np

CLASSES = 4


def nearest_neighbours(
    queries: np.ndarray, training: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Indices and distances of the k nearest training points of every query, nearest first."""
    # numexpr reduces only over the last axis of the whole expression, on one thread, so the
    # threaded element-wise part is numexpr and the feature sum NumPy.
    pair = {"q": queries[:, np.newaxis, :], "t": training[np.newaxis, :, :]}
    squared = ne.evaluate("(q - t) ** 2", local_dict=pair)
    distances = ne.evaluate("sqrt(total)", local_dict={"total": np.sum(squared, axis=2)})
    candidates = np.argpartition(distances, k - 1, axis=1)[:, :k]
    candidate_distances = np.take_along_axis(distances, candidates, axis=1)
    order = np.argsort(candidate_distances, axis=1)
    return (
        np.take_along_axis(candidates, order, axis=1),
        np.take_along_axis(candidate_distances, order, axis=1),
    )


def classify(neighbour_labels: np.ndarray) -> np.ndarray:
    """Majority label of every row (ties go to the smallest label)."""
    votes = np.sum(neighbour_labels[:, :, np.newaxis] == np.arange(CLASSES), axis=1)
    return np.argmax(votes, axis=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=10_000, help="training points")
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--features", type=int, default=8)
    parser.add_argument("-k", type=int, default=7)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    centres = rng.uniform(-3.0, 3.0, (CLASSES, args.features))
    labels = rng.integers(0, CLASSES, args.size)
    training = centres[labels] + rng.standard_normal((args.size, args.features))
    query_labels = rng.integers(0, CLASSES, args.queries)
    queries = centres[query_labels] + rng.standard_normal((args.queries, args.features))

    start = time.perf_counter()
    neighbours, distances = nearest_neighbours(queries, training, args.k)
    predicted = classify(labels[neighbours])
    checksum = float(np.sum(distances))
    accuracy = float(np.mean(predicted == query_labels))
    elapsed = time.perf_counter() - start

    print(f"accuracy: {accuracy:.4f}")
    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()
