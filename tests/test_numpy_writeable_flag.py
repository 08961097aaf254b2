"""``a.flags.writeable = False``, ``a.flags["WRITEABLE"]`` and ``a.setflags(write=...)`` on lazy
arrays: later writes raise NumPy's error, views follow NumPy's rules. Before, the flag was set on a
snapshot of the flags and writes went through."""

from __future__ import annotations

import numpy
import pytest
from numpy_fixtures import needs_runtime


def _program(np) -> list:
    outcomes = []

    def attempt(write) -> None:
        try:
            write()
            outcomes.append("written")
        except ValueError as error:
            outcomes.append(f"ValueError: {error}")

    a = np.arange(12.0).reshape(3, 4) * 2.0
    early = a[1:]  # made before the base turns read-only: stays writeable, as in NumPy
    a.flags.writeable = False
    late = a[1:]
    attempt(lambda: a.__setitem__(0, 5.0))
    attempt(lambda: a.__iadd__(1.0))
    attempt(lambda: np.add(a, 1.0, out=a))
    attempt(lambda: late.__setitem__(0, 1.0))
    attempt(lambda: early.__setitem__(0, 1.0))
    attempt(lambda: setattr(late.flags, "writeable", True))
    b = np.ones(8) * 3.0
    b.setflags(write=False)
    attempt(lambda: b.__setitem__(slice(0, 2), 0.0))
    b.setflags(write=True)
    b[0] = 7.0
    c = np.ones(8) * 4.0
    c.flags["WRITEABLE"] = False
    attempt(lambda: c.fill(0.0))
    outcomes += [a.flags.writeable, late.flags.writeable, early.flags.writeable, b.flags["W"], c.flags.writeable]
    outcomes += [numpy.asarray(a).tolist(), numpy.asarray(early).tolist(), numpy.asarray(b).tolist()]
    return outcomes


@pytest.mark.parametrize("engine", ["node", "reference"])
def test_read_only_lazy_arrays_refuse_writes_as_numpy_does(engine: str) -> None:
    needs_runtime()
    import shoal.numpy as snp
    from shoal import runtime

    with runtime.configure(engine=engine, eager_threshold=0):
        assert _program(snp) == _program(numpy)
