"""k-nearest-neighbours classification (examples/knn.py) with the distances evaluated by numexpr.

Distances come from one broadcast (queries x training points x features) array;
each query takes the majority label of its k nearest training points. The
checksum is the sum of the distances to those neighbours.

Usage: python knn_numexpr.py [SIZE] [--queries Q] [--features D] [-k K] [--seed S]
"""

import numexpr as ne
import numpy as np
from _example import load_example

example = load_example("knn")


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


if __name__ == "__main__":
    example.nearest_neighbours = nearest_neighbours
    example.main()
