"""Small copies of large arrays for looking at them (paper 004 §5: downsampling).

``preview(a, (H, W))`` shrinks the last two axes of ``a`` to at most ``H x W`` by averaging,
taking every k-th element, or taking the maximum over blocks; leading axes are kept. It runs
where the array lives, so a remote program receives only the small copy.
"""

from __future__ import annotations

import numpy as np

from shoal.proxy.protocol import Reduction


def factors(shape: tuple[int, ...], target: tuple[int, int]) -> tuple[int, int]:
    """Block sizes along the last two axes (of at least two) so the result fits in ``target``."""
    return max(1, -(-shape[-2] // target[0])), max(1, -(-shape[-1] // target[1]))


def downsample(array: np.ndarray, target: tuple[int, int], reduction: Reduction) -> np.ndarray:
    """``array`` with its last two axes shrunk to at most ``target`` (see the module docstring)."""
    if array.ndim == 0:
        return array.copy()
    if array.ndim == 1:
        return downsample(array.reshape(1, -1), (1, target[1]), reduction)[0]
    fy, fx = factors(array.shape, target)
    if reduction == Reduction.STRIDE:
        return np.ascontiguousarray(array[..., ::fy, ::fx])
    rows, columns = array.shape[-2] // fy * fy, array.shape[-1] // fx * fx
    if rows == 0 or columns == 0:  # fewer rows or columns than one block: reduce what there is
        fy, fx = max(1, array.shape[-2]), max(1, array.shape[-1])
        rows, columns = array.shape[-2], array.shape[-1]
    cropped = array[..., :rows, :columns]
    blocks = cropped.reshape(*array.shape[:-2], rows // fy, fy, columns // fx, fx)
    if reduction == Reduction.MAX:
        return blocks.max(axis=(-3, -1))
    if array.dtype.kind in "biu":
        return blocks.mean(axis=(-3, -1))
    return blocks.mean(axis=(-3, -1), dtype=np.result_type(array.dtype, np.float32)).astype(array.dtype, copy=False)
