"""How large an array is against the runtime's thresholds: in elements, and for 1- and 2-byte
elements in bytes.

The eager and settled thresholds (``SHOAL_EAGER_THRESHOLD``, ``SHOAL_SETTLED_THRESHOLD``) are
counts of elements; an array below one stays NumPy's, or is computed by NumPy at once, because
NumPy's cost for it is below what recording and planning it would cost. NumPy streams 1- and
2-byte elements at a fraction of the cost of wider ones, so such an array also counts as below
a threshold with fewer bytes than that many 4-byte elements: a 1024 x 1024 ``int8`` grid (1 MiB)
stays NumPy's, and Conway's game of life on it with ``np.roll`` no longer runs 7.5x NumPy's time
lazily. 4-byte elements count by their number: a float32 stencil on 1000² arrays runs 1.6x
faster lazily (fused sweeps) than computed at once (docs/decisions.md).
"""

from __future__ import annotations

REFERENCE_ITEMSIZE = 4  # bytes of the elements a threshold counts, for narrower ones


def below(size: int, itemsize: int, threshold: int) -> bool:
    """True if an array of ``size`` elements of ``itemsize`` bytes is below ``threshold``."""
    return size < threshold or size * itemsize < threshold * REFERENCE_ITEMSIZE
