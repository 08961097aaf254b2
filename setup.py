"""The compiled indexing slots of the lazy ndarray (``shoal/numpy/_held_slots.c``), the makers
of slotted objects that recording builds (``shoal/_slot_makers.c``) and the comparison of a
replayed batch with the previous one (``shoal/engine/node/schedule/_repeat_walk.c``).

Everything else about the package is in ``pyproject.toml``. The extensions are optional: where no
C compiler is found the install goes on without them and the same work runs in Python
(``shoal/numpy/_slots.py``, ``shoal/frozen_values.py``, ``shoal/engine/node/schedule/repeat.py``).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("shoal.numpy._held_slots", ["shoal/numpy/_held_slots.c"], optional=True),
        Extension("shoal._slot_makers", ["shoal/_slot_makers.c"], depends=["shoal/_slot_offset.h"], optional=True),
        Extension(
            "shoal.engine.node.schedule._repeat_walk",
            ["shoal/engine/node/schedule/_repeat_walk.c"],
            depends=["shoal/_slot_offset.h"],
            optional=True,
        ),
    ]
)
