"""Node engines for the floating-point warning tests: every batch in small view-blocks, and a
count of the block operations compiled kernels ran."""

from __future__ import annotations

from typing import Any


def blocked_engine(compile: str) -> Any:
    """A node engine that runs every batch in view-blocks of 1024 elements on two threads."""
    from shoal.engine.node.config import NodeConfig
    from shoal.engine.node.engine import NodeEngine

    return NodeEngine(NodeConfig(compile=compile, block_size=1024, direct_work=0, threads=2))


def count_stat(engine: Any, stat: str) -> list[int]:
    """A list to which ``engine`` appends, after each batch it runs, its statistic ``stat``
    (``compiled_block_ops``, ``loop_block_ops``, ...)."""
    counts: list[int] = []
    execute = engine.execute

    def counting(batch: Any) -> None:
        execute(batch)
        counts.append(getattr(engine.last_stats, stat))

    engine.execute = counting
    return counts


def count_compiled(engine: Any) -> list[int]:
    """A list to which ``engine`` appends, after each batch it runs, the block operations its
    compiled kernels ran."""
    return count_stat(engine, "compiled_block_ops")


def warnings_shown(compute: Any) -> list[tuple[Any, ...]]:
    """(category, message, file, line) of each warning ``compute()`` makes, its result read as
    NumPy data, under filters that show every warning."""
    import warnings

    import numpy

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        numpy.asarray(compute())
    return [(w.category, str(w.message), w.filename, w.lineno) for w in caught]
