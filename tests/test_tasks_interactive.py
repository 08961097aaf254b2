"""Tasks defined interactively (``python -c``, standard input) run: their functions travel
by value; functions of modules and of a main script still travel by reference."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap

import pytest

from shoal.tasks import task
from shoal.tasks.interactive import defined_interactively

pytestmark = [pytest.mark.full, pytest.mark.timeout(120)]

PROGRAM = textwrap.dedent(
    """
    import math
    import numpy as np
    import shoal.tasks as tasks
    from shoal.tasks import INOUT, task, wait_on

    class Scale:
        def __init__(self, factor):
            self.factor = factor

    @task()
    def f(x):
        return helper(x) * Scale(2).factor

    def helper(x):  # defined after the task: found when the task is first sent
        return x + 100

    @task()
    def grow(s):  # an interactive class both ways
        return Scale(s.factor + 1)

    @task(c=INOUT, returns=0)
    def accumulate(a, c):
        c += a

    root = task(math.sqrt)  # a module function: by reference

    tasks.start(workers=2)
    c = np.zeros(3)
    accumulate(np.ones(3), c)
    print("f", wait_on([f(i) for i in range(4)]))
    print("sum", float(wait_on(c).sum()))
    print("grow", wait_on(grow(Scale(3))).factor)
    print("root", wait_on(root(16.0)), root.code() is None, f.code() is not None)

    @task()
    def f(x):  # redefined, as in a notebook cell run again
        return -x

    print("again", wait_on([f(i) for i in range(4)]))
    tasks.shutdown()
    """
)

EXPECTED = ["f [200, 202, 204, 206]", "sum 3.0", "grow 4", "root 4.0 True True", "again [0, -1, -2, -3]"]


def _run(arguments: list[str], stdin: str | None = None) -> list[str]:
    result = subprocess.run(
        [sys.executable, *arguments], input=stdin, capture_output=True, text=True, timeout=100
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_tasks_defined_in_python_c():
    assert _run(["-c", PROGRAM]) == EXPECTED


@pytest.mark.parametrize("arguments", [[], ["-"]], ids=["stdin", "dash"])
def test_tasks_defined_on_standard_input(arguments):
    assert _run(arguments, stdin=PROGRAM) == EXPECTED


def test_tasks_of_a_main_script_go_by_reference(tmp_path):
    definitions, body = PROGRAM.split("tasks.start(workers=2)")
    body = body.split("@task()")[0].replace("f.code() is not None", "f.code() is None")
    script = tmp_path / "app.py"
    script.write_text(definitions + 'if __name__ == "__main__":\n' + textwrap.indent("tasks.start(workers=2)" + body, "    "))
    assert _run([str(script)]) == EXPECTED[:4]


def test_module_functions_go_by_reference():
    assert not defined_interactively(math.sqrt)
    assert not defined_interactively(_run)
    assert task(math.sqrt).code() is None
