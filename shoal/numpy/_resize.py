"""``a.resize(new_shape)``: a lazy array given new memory of another size, in place.

NumPy reallocates the array's own memory: the elements keep their order in memory, the new
ones are zeros, and the array takes the new shape with the strides of its order (Fortran order
stays Fortran). It refuses to for a view, for an array that is not one block of memory, and,
unless ``refcheck=False``, for an array something else refers to (a view of it, another name).
The lazy array takes a new base holding the elements in that order.
"""

from __future__ import annotations

import math
import operator
import sys
from typing import Any

from shoal.numpy import _shape
from shoal.numpy._lazy import fortran_only, ndarray
from shoal.numpy._numpy_data import new_array

# References to the array inside ``resize`` when nothing else holds it: the caller's name, the
# argument, and ``sys.getrefcount``'s own (NumPy counts two: the name and the call's).
_OWN_REFERENCES = 3

_REFERENCED = (
    "cannot resize an array that references or is referenced\n"
    "by another object in this way.\n"
    "Use the np.resize function to get a new resized copy or\n"
    " set refcheck=False to disable this check"
)


def _new_shape(args: tuple[Any, ...]) -> tuple[int, ...] | None:
    """The shape asked for, as NumPy reads ``resize``'s arguments (``None``: leave the array)."""
    if not args:
        return None
    if len(args) == 1:
        if args[0] is None:
            return None
        if not isinstance(args[0], (list, tuple)) and hasattr(args[0], "__index__"):
            args = (args[0],)
        else:
            args = tuple(args[0])
    shape = tuple(operator.index(n) for n in args)
    if any(n < 0 for n in shape):
        raise ValueError("negative dimensions not allowed")
    return shape


def resize_in_place(self: ndarray, /, *new_shape: Any, refcheck: bool = True) -> None:
    """``ndarray.resize``: change the array's shape and size in place (NumPy's checks and errors);
    for a result that stands for a scalar, the scalar's (which resizes a copy)."""
    if self._scalar:
        return self._value()[()].resize(*new_shape, refcheck=refcheck)
    shape = _new_shape(new_shape)
    if shape is None:
        return
    view = self._view
    fortran = fortran_only(self)
    if not (view.is_contiguous() or fortran):
        raise ValueError("resize only works on single-segment arrays")
    size = math.prod(shape)
    if size != self.size:
        if self._owner is not None:
            raise ValueError("cannot resize this array: it does not own its data")
        if refcheck and sys.getrefcount(self) > _OWN_REFERENCES:
            raise ValueError(_REFERENCED)
    order = "F" if fortran else "C"
    layout = shape[::-1] if fortran else shape  # the memory order's shape, C-contiguous
    fresh = new_array(view.dtype, layout)
    flat = _shape.reshape(fresh, (size,))
    kept = min(size, self.size)
    if kept < size:
        flat[kept:] = 0
    if kept:
        flat[:kept] = _shape.ravel(self, order)[:kept]
    if fortran:
        fresh = _shape.transpose(fresh)
    self._base, self._view, self._held = fresh._base, fresh._view, None
