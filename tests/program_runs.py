"""Running a generated program (``program_fuzzer``) and comparing what two runs read."""

from __future__ import annotations

import traceback
import warnings
from dataclasses import dataclass
from typing import Any

import numpy

from shoal import runtime
from shoal.engine import Component


@dataclass
class Run:
    """What one run of a program read, and the exception it ended with."""

    reads: list[Any]
    error: tuple[type, int] | None = None


def run_program(source: str, module: Any, inputs: list) -> Run:
    """Execute ``source`` with ``np`` bound to ``module``; log every ``read``."""
    reads: list[Any] = []

    def read(value: Any) -> None:
        reads.append(value if isinstance(value, float) else numpy.array(value, copy=True))

    code = compile(source, "<program>", "exec")
    namespace = {"np": module, "D": [array.copy() for array in inputs], "read": read}
    try:
        with warnings.catch_warnings(), numpy.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            exec(code, namespace)
    except Exception as error:
        line = [frame.lineno for frame in traceback.extract_tb(error.__traceback__) if frame.filename == "<program>"]
        return Run(reads, (type(error), line[-1] if line else -1))
    finally:
        namespace.clear()
    return Run(reads)


def run_on_shoal(source: str, inputs: list, engine: str | Component, flush_threshold: int) -> Run:
    """Run ``source`` on ``shoal.numpy`` over ``engine`` with every array lazy."""
    import shoal.numpy as snp

    with runtime.configure(engine=engine, eager_threshold=0, flush_threshold=flush_threshold):
        return run_program(source, snp, inputs)


def assert_same_run(got: Run, expected: Run, what: str) -> None:
    assert got.error == expected.error, f"{what}: ended with {got.error}, expected {expected.error}"
    assert len(got.reads) == len(expected.reads), f"{what}: {len(got.reads)} reads, expected {len(expected.reads)}"
    for number, (value, wanted) in enumerate(zip(got.reads, expected.reads)):
        if isinstance(wanted, float):
            assert isinstance(value, float), f"{what}: read {number} is {type(value)}"
        else:
            assert value.dtype == wanted.dtype and value.shape == wanted.shape, f"{what}: read {number} is {value.dtype}{value.shape}, expected {wanted.dtype}{wanted.shape}"
        numpy.testing.assert_allclose(value, wanted, rtol=1e-9, atol=1e-12, equal_nan=True, err_msg=f"{what}: read {number}")
