"""How the lazy ``ndarray`` class answers questions about types.

``isinstance(x, np.ndarray)`` and ``issubclass(t, np.ndarray)`` hold for NumPy's arrays too, so
programs that check types keep working with the arrays that stay NumPy's. A program's own
subclass of ``np.ndarray`` becomes a subclass of NumPy's class: its arrays are NumPy's,
computed at once (a subclass of the lazy class had NumPy treat it as a dtype in ``view``).
"""

from __future__ import annotations

from typing import Any

import numpy as np


class NdarrayType(type):
    """The metaclass of the lazy ``ndarray``."""

    def __new__(mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any) -> Any:
        if any(type(base) is mcls for base in bases):  # a program's subclass of np.ndarray: NumPy's, eager
            return type(name, tuple(np.ndarray if type(base) is mcls else base for base in bases), namespace, **kwargs)
        return super().__new__(mcls, name, bases, namespace, **kwargs)

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, np.ndarray) or type(instance) is cls

    def __subclasscheck__(cls, subclass: type) -> bool:
        return subclass is cls or issubclass(subclass, np.ndarray)
