"""Run the Array API conformance suite against NumPy and against ``shoal.numpy`` (every array
lazy) and list the tests that NumPy passes and Shoal does not.

The suite (data-apis/array-api-tests, pinned and unmodified) lies in ``shared/array-api-tests``
next to the repository; it runs from a copy in a temporary folder, with a plugin of ours beside
it that drops Hypothesis' shrinking (:data:`NO_SHRINK_PLUGIN`). Both runs go side by side, or
(``numpy_everywhere=False``, as the test suite runs it) NumPy runs only the tests Shoal did not
pass.
A few of the suite's special-case tests draw their input with Hypothesis' ``.example()``, which
no seed fixes (``expm1`` of a complex zero fails under NumPy when the draw gives -0): a test that
fails under Shoal is run on its own ``RERUNS`` times under each module, and counts as a
difference only if Shoal fails every time and NumPy passes every time; otherwise its outcome
depends on the draw (for a test that passes half the time under both, 1 run in 256 still sees a
difference).

    python tests/array_api_compare.py [--max-examples 50] [--suite PATH] [test files...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

SUITE = Path(__file__).resolve().parents[2] / "shared" / "array-api-tests"
API_VERSION = "2024.12"
RERUNS = 4


@dataclass
class Comparison:
    """Outcomes per test id for both modules, and the tests only NumPy passes."""

    numpy: dict[str, str]
    shoal: dict[str, str]
    differences: list[str]
    flaky: list[str]

    def passed(self, outcomes: dict[str, str]) -> int:
        return sum(outcome == "passed" for outcome in outcomes.values())

    def summary(self) -> str:
        numpy_tests = f"{len(self.numpy)} tests" if len(self.numpy) == len(self.shoal) else f"the {len(self.numpy)} tests shoal.numpy did not pass"
        return (
            f"Array API suite ({API_VERSION}): NumPy passes {self.passed(self.numpy)} of "
            f"{numpy_tests}, shoal.numpy (every array lazy) passes "
            f"{self.passed(self.shoal)} of {len(self.shoal)}; {len(self.differences)} tests pass "
            f"under NumPy only" + (f" ({len(self.flaky)} more depend on the draw: they passed on their own under Shoal, or failed on their own under NumPy too)" if self.flaky else "")
        )


def _environment(module: str) -> dict[str, str]:
    environment = dict(os.environ)
    environment.pop("SHOAL_VERIFY", None)
    environment.update(
        ARRAY_API_TESTS_MODULE=module,
        ARRAY_API_TESTS_VERSION=API_VERSION,
        SHOAL_EAGER_THRESHOLD="0",
        PYTHONDONTWRITEBYTECODE="1",
    )
    return environment


# Loaded into the suite's runs: once its conftest has loaded its Hypothesis profile, the same
# profile without the shrink phase. A test fails exactly when it did with shrinking; the
# comparison needs outcomes, not the smallest failing input.
NO_SHRINK_PLUGIN = """
import pytest
from hypothesis import Phase, settings


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    settings.register_profile("without-shrinking", settings(settings.default, phases=[phase for phase in Phase if phase not in (Phase.shrink, Phase.explain)]))
    settings.load_profile("without-shrinking")
"""
NO_SHRINK_MODULE = "shoal_without_shrinking"


def _command(report: Path, max_examples: int, targets: list[str]) -> list[str]:
    return [
        sys.executable, "-m", "pytest", *targets, "-p", "no:cacheprovider", "-p", NO_SHRINK_MODULE, "-q", "-rN",
        "--max-examples", str(max_examples), "--hypothesis-seed", "0", "--disable-deadline",
        "--json-report", f"--json-report-file={report}", "--json-report-omit", "log", "traceback",
        "streams", "collectors", "keywords",
    ]  # fmt: skip


def _start(copy: Path, module: str, name: str, max_examples: int, targets: list[str]) -> tuple[subprocess.Popen, Path]:
    report = copy / f"{name}.json"
    process = subprocess.Popen(
        _command(report, max_examples, targets),
        cwd=copy,
        env=_environment(module),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return process, report


def _outcomes(report: Path) -> dict[str, str]:
    tests = json.loads(report.read_text())["tests"]
    return {test["nodeid"]: test["outcome"] for test in tests}


def _finish(process: subprocess.Popen, report: Path) -> dict[str, str]:
    try:
        process.wait()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    if not report.exists():
        raise RuntimeError(f"the Array API suite wrote no report (exit status {process.returncode})")
    return _outcomes(report)


def compare(max_examples: int = 50, targets: list[str] | None = None, suite: Path = SUITE, numpy_everywhere: bool = True) -> Comparison:
    """Run the suite under both modules from a temporary copy of ``suite``: side by side, or,
    without ``numpy_everywhere``, under Shoal first and then under NumPy only the tests Shoal
    did not pass (the differences are the same; NumPy's counts cover those tests alone)."""
    targets = targets or ["array_api_tests"]
    with tempfile.TemporaryDirectory(prefix="shoal-array-api-") as folder:
        copy = Path(folder) / "suite"
        shutil.copytree(suite, copy)
        (copy / f"{NO_SHRINK_MODULE}.py").write_text(NO_SHRINK_PLUGIN)
        if numpy_everywhere:
            numpy, shoal = _side_by_side(copy, max_examples, targets)
        else:
            shoal = _finish(*_start(copy, "shoal.numpy", "shoal", max_examples, targets))
            not_passed = [test for test, outcome in shoal.items() if outcome != "passed"]
            numpy = _finish(*_start(copy, "numpy", "numpy", max_examples, not_passed)) if not_passed else {}
            if sorted(numpy) != sorted(not_passed):
                raise RuntimeError(f"NumPy's run reported {len(numpy)} of the {len(not_passed)} tests it was given")
        candidates = [test for test, outcome in numpy.items() if outcome == "passed" and shoal.get(test) != "passed"]
        differences, flaky = [], []
        for test in candidates:
            shoal_alone = [_rerun(copy, "shoal.numpy", test, max_examples, attempt) for attempt in range(RERUNS)]
            numpy_alone = [] if any(shoal_alone) else [_rerun(copy, "numpy", test, max_examples, attempt) for attempt in range(RERUNS)]
            draw_dependent = any(shoal_alone) or not all(numpy_alone)
            (flaky if draw_dependent else differences).append(test)
    return Comparison(numpy, shoal, differences, flaky)


def _side_by_side(copy: Path, max_examples: int, targets: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """The outcomes under NumPy and under Shoal, both runs at once."""
    runs = [_start(copy, module, name, max_examples, targets) for module, name in (("numpy", "numpy"), ("shoal.numpy", "shoal"))]
    try:
        numpy, shoal = (_finish(process, report) for process, report in runs)
    finally:
        for process, _ in runs:
            if process.poll() is None:
                process.kill()
                process.wait()
    return numpy, shoal


def _rerun(copy: Path, module: str, test: str, max_examples: int, attempt: int) -> bool:
    """True if ``test`` passes when run on its own under ``module``."""
    process, report = _start(copy, module, f"rerun-{module}-{attempt}", max_examples, [test])
    outcomes = _finish(process, report)
    return bool(outcomes) and all(outcome == "passed" for outcome in outcomes.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-examples", type=int, default=50)
    parser.add_argument("--suite", type=Path, default=SUITE)
    parser.add_argument("targets", nargs="*", help="test files or ids inside the suite (default: all)")
    options = parser.parse_args()
    comparison = compare(options.max_examples, options.targets, options.suite)
    print(comparison.summary())
    for test in comparison.differences:
        print("  NumPy only:", test)
    for test in comparison.flaky:
        print("  failed once under Shoal, then passed:", test)
    return 1 if comparison.differences else 0


if __name__ == "__main__":
    sys.exit(main())
