"""How large an array is against the runtime's thresholds: in elements, and in bytes.

The eager and settled thresholds (``SHOAL_EAGER_THRESHOLD``, ``SHOAL_SETTLED_THRESHOLD``) are
counts of elements; an array below one stays NumPy's, or is computed by NumPy at once, because
NumPy's cost for it is below what recording and planning it would cost. NumPy's cost follows the
bytes an operation streams, so an array of a smaller dtype counts by its bytes too: below the
threshold if it has fewer elements, or fewer bytes than that many 8-byte elements. A 1024 x 1024
``int8`` grid (1 MiB) then stays NumPy's as a 256 x 512 ``float64`` array does; Conway's game of
life on it with ``np.roll`` ran 5-8x NumPy's time lazily (docs/decisions.md).
"""

from __future__ import annotations

REFERENCE_ITEMSIZE = 8  # bytes of the elements a threshold counts


def below(size: int, itemsize: int, threshold: int) -> bool:
    """True if an array of ``size`` elements of ``itemsize`` bytes is below ``threshold``."""
    return size < threshold or size * itemsize < threshold * REFERENCE_ITEMSIZE
