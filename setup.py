"""The compiled indexing slots of the lazy ndarray (``shoal/numpy/_held_slots.c``).

Everything else about the package is in ``pyproject.toml``. The extension is optional: where no C
compiler is found the install goes on without it and the same rules run in Python
(``shoal/numpy/_slots.py``).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("shoal.numpy._held_slots", ["shoal/numpy/_held_slots.c"], optional=True)])
