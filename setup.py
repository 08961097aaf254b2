"""The compiled indexing slots of the lazy ndarray (``shoal/numpy/_held_slots.c``), the makers
of slotted objects that recording builds (``shoal/_slot_makers.c``), the runtime's bookkeeping
for a remembered element-wise call, a base's release, the warning site's lookup and NumPy calls
on settled memory (``shoal/_record_calls.c``, ``shoal/_base_release.c``, ``shoal/_call_sites.c``,
``shoal/_settled_calls.c``), a direct batch's chunked pair of element-wise calls
(``shoal/engine/node/run/_pair_rows.c``), a fused group's tiles through NumPy's own inner loops
(``shoal/engine/node/run/_tile_loops.c``) and the
comparison of a replayed batch with the previous one (``shoal/engine/node/schedule/_repeat_walk.c``).

Everything else about the package is in ``pyproject.toml``. The extensions are optional: where no
C compiler is found the install goes on without them and the same work runs in Python
(``shoal/numpy/_slots.py``, ``shoal/frozen_values.py``, ``shoal/recording_calls.py``,
``shoal/base_lives.py``, ``shoal/fp_warnings.py``, ``shoal/numpy/_settled.py``,
``shoal/engine/node/run/chunked_pairs.py``, ``shoal/engine/node/run/tiles.py``,
``shoal/engine/node/schedule/repeat.py``).
"""

from setuptools import Extension, setup


def numpy_loops() -> list[Extension]:
    """NumPy's inner loops over tiles (``shoal/engine/node/run/_tile_loops.c``) need NumPy's headers."""
    try:
        import numpy
    except ImportError:
        return []
    return [
        Extension(
            "shoal.engine.node.run._tile_loops",
            ["shoal/engine/node/run/_tile_loops.c"],
            include_dirs=[numpy.get_include()],
            libraries=["m"],
            optional=True,
        )
    ]


setup(
    ext_modules=[
        Extension("shoal.numpy._held_slots", ["shoal/numpy/_held_slots.c"], optional=True),
        Extension("shoal._slot_makers", ["shoal/_slot_makers.c"], depends=["shoal/_slot_offset.h"], optional=True),
        Extension("shoal._record_calls", ["shoal/_record_calls.c"], depends=["shoal/_slot_offset.h", "shoal/_runtime_attributes.h"], optional=True),
        Extension("shoal._base_release", ["shoal/_base_release.c"], depends=["shoal/_slot_offset.h"], optional=True),
        Extension("shoal._call_sites", ["shoal/_call_sites.c"], optional=True),
        Extension(
            "shoal.numpy._fast_record",
            ["shoal/numpy/_fast_record.c"],
            depends=["shoal/_shape_size.h", "shoal/_slot_offset.h", "shoal/numpy/_fast_record_state.h", "shoal/numpy/_fast_record_reads.h"],
            optional=True,
        ),
        Extension(
            "shoal._settled_calls",
            ["shoal/_settled_calls.c"],
            depends=["shoal/_slot_offset.h", "shoal/_runtime_attributes.h", "shoal/_settled_state.h", "shoal/_shape_size.h", "shoal/_settled_operands.h", "shoal/_settled_results.h"],
            optional=True,
        ),
        Extension("shoal.engine.node.run._pair_rows", ["shoal/engine/node/run/_pair_rows.c"], extra_compile_args=["-ffp-contract=off"], optional=True),
        Extension(
            "shoal.engine.node.schedule._repeat_walk",
            ["shoal/engine/node/schedule/_repeat_walk.c"],
            depends=["shoal/_slot_offset.h", "shoal/engine/node/schedule/_repeat_compare.h"],
            optional=True,
        ),
        *numpy_loops(),
    ]
)
