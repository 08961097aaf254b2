"""``python -m shoal app.py``: the program runs as under ``python``, with its ``numpy`` from Shoal.

Programs run in subprocesses, usually side by side with plain ``python`` on the same file.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy
import pytest
from terminal_signals import ctrl_c_as_at_a_terminal

from shoal.__main__ import main
from shoal.runner import ImportRedirect, format_fallback_report

LAZY = {"SHOAL_EAGER_THRESHOLD": "0", "SHOAL_VERIFY": "1"}


def run_python(
    *arguments: str | Path, cwd: Path, env: dict[str, str] | None = None, shoal: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m shoal ARGS`` (or plain ``python ARGS``) and capture its output."""
    environment = {**os.environ, **(env or {})}
    prefix = [sys.executable, "-m", "shoal"] if shoal else [sys.executable]
    return subprocess.run(
        [*prefix, *map(str, arguments)],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=ctrl_c_as_at_a_terminal,  # its programs interrupt themselves
    )


def write(path: Path, source: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A program directory with a local module, a local package and a fake installed library.

    The library lives both outside the program directory and in a site-packages below it (as
    a virtual environment inside a project would); neither is the user's code.
    """
    app = tmp_path / "app"
    write(app / "helper.py", "import numpy as np\n")
    write(app / "pkg" / "__init__.py", "")
    write(app / "pkg" / "sub.py", "from numpy import linalg\nimport numpy\n")
    write(tmp_path / "site" / "library" / "__init__.py", "import numpy as np\n")
    write(app / "venv" / "site-packages" / "vendored.py", "import numpy\n")
    return tmp_path


def library_path(project: Path) -> dict[str, str]:
    paths = [project / "site", project / "app" / "venv" / "site-packages"]
    return {"PYTHONPATH": os.pathsep.join(map(str, paths))}


def test_program_and_its_local_modules_see_shoal_numpy(project: Path) -> None:
    program = write(
        project / "app" / "main.py",
        """
        import json
        import sys

        import numpy
        import numpy as np
        import numpy.linalg
        import numpy.linalg as la
        from numpy import linalg, zeros
        from numpy.random import default_rng

        import helper
        import pkg.sub

        def imported_inside_a_function():
            import numpy as inner
            return inner.__name__

        print(json.dumps({
            "name": __name__,
            "argv": sys.argv,
            "path0": sys.path[0],
            "file": __file__,
            "numpy": numpy.__name__,
            "np": np.__name__,
            "numpy.linalg": numpy.linalg.__name__,
            "la": la.__name__,
            "linalg": linalg.__name__,
            "zeros": zeros.__module__,
            "default_rng": default_rng.__module__,
            "function": imported_inside_a_function(),
            "helper": helper.np.__name__,
            "pkg.sub": [pkg.sub.numpy.__name__, pkg.sub.linalg.__name__],
            "sys.modules": sys.modules["numpy"].__name__,
        }))
        """,
    )
    result = run_python("app/main.py", "first", "--second", "3", cwd=project)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["name"] == "__main__"
    assert seen["argv"] == ["app/main.py", "first", "--second", "3"]
    assert seen["path0"] == str(program.parent.resolve())
    assert seen["file"] == str(program.resolve())
    for key in ("numpy", "np", "function", "helper"):
        assert seen[key] == "shoal.numpy", key
    for key in ("numpy.linalg", "la", "linalg"):
        assert seen[key] == "shoal.numpy.linalg", key
    assert seen["zeros"].startswith("shoal.numpy")
    assert seen["default_rng"].startswith("shoal.numpy.random")
    assert seen["pkg.sub"] == ["shoal.numpy", "shoal.numpy.linalg"]
    assert seen["sys.modules"] == "numpy"


def test_libraries_keep_real_numpy(project: Path) -> None:
    write(
        project / "app" / "main.py",
        """
        import sys

        import numexpr.necompiler
        import numpy
        import numpy.testing

        import library
        import vendored

        real = sys.modules["numpy"]
        print(numpy.__name__, library.np is real, vendored.numpy is real,
              numexpr.necompiler.numpy is real,
              sys.modules["numpy.testing._private.utils"].np is real,
              real.__name__)
        """,
    )
    result = run_python("app/main.py", cwd=project, env=library_path(project))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["shoal.numpy", "True", "True", "True", "True", "numpy"]


def test_plain_python_runs_the_same_program_on_numpy(project: Path) -> None:
    write(project / "app" / "main.py", "import helper\nprint(helper.np.__name__)\n")
    result = run_python("app/main.py", cwd=project, shoal=False)
    assert result.stdout.strip() == "numpy"


def test_numpy_error_is_reported_at_the_users_line(project: Path) -> None:
    program = write(
        project / "app" / "shapes.py",
        """
        import numpy as np

        def combine(a, b):
            return a + b

        grid = np.ones((300, 400))
        row = np.ones(300)
        combine(grid, row)
        """,
    )
    shoal_run = run_python(program, cwd=project, env=LAZY)
    python_run = run_python(program, cwd=project, shoal=False)
    assert shoal_run.returncode == python_run.returncode == 1
    *shoal_frames, shoal_message = shoal_run.stderr.splitlines()
    *python_frames, python_message = python_run.stderr.splitlines()
    assert shoal_frames == python_frames
    assert python_frames[-3] == f'  File "{program}", line 5, in combine'
    for message in (shoal_message, python_message):
        assert message.startswith("ValueError: operands could not be broadcast together")

    full = run_python(program, cwd=project, env={**LAZY, "SHOAL_FULL_TRACEBACK": "1"})
    assert full.stderr.splitlines()[: len(python_frames)] == python_frames
    assert "shoal/numpy/" in full.stderr


def test_an_error_numpy_raises_in_a_call_shoal_makes_at_once_shows_no_shoal_frames(project: Path) -> None:
    """A product with a settled operand is NumPy's call, made in a frame carrying the program's
    line (``fp_warnings.at_user_line``): that frame and Shoal's module around it stayed in the
    traceback."""
    program = write(
        project / "app" / "products.py",
        """
        import numpy as np

        def inner(a):
            return a[:, :5] @ np.ones(7)

        a = np.ones((1024, 1024))
        b = a * 2
        c = np.log(b - 1.0)
        print(float(c[0, 0]))
        inner(b)
        """,
    )
    shoal_run = run_python(program, cwd=project)
    python_run = run_python(program, cwd=project, shoal=False)
    assert shoal_run.returncode == python_run.returncode == 1
    assert shoal_run.stderr.splitlines() == python_run.stderr.splitlines()
    assert "matmul: Input operand 1 has a mismatch" in python_run.stderr


@pytest.mark.parametrize(
    "statement",
    ["g.sum(axis=3)", "np.unwrap(g, axis=5)", "np.linalg.inv(g[:, :3])"],
    ids=["probe", "fallback", "linalg"],
)
def test_an_error_raised_through_numpys_code_under_shoal_ends_at_the_programs_line(project: Path, statement: str) -> None:
    """NumPy's frames below Shoal's (a probe, a fallback's call) kept Shoal's in the traceback."""
    program = write(
        project / "app" / "through.py",
        f"""
        import warnings
        import numpy as np

        warnings.simplefilter("ignore")

        def f(g):
            {statement}

        g = np.ones((1024, 1024)) * 2
        float((g + 1)[0, 0])
        f(g)
        """,
    )
    shoal_run = run_python(program, cwd=project)
    python_run = run_python(program, cwd=project, shoal=False)
    assert shoal_run.returncode == python_run.returncode == 1
    shoal_lines, python_lines = ([line for line in run.stderr.splitlines() if line.strip(" ^~")] for run in (shoal_run, python_run))
    assert "shoal" not in shoal_run.stderr and shoal_lines[-1] == python_lines[-1]
    assert shoal_lines[-3:-1] == [f'  File "{program}", line 8, in f', f"    {statement}"]
    assert shoal_lines[:-1] == python_lines[: len(shoal_lines) - 1]  # NumPy's own frames below it: not shown


def test_errors_chained_to_the_programs_error_end_at_its_lines_and_keep_their_context(project: Path) -> None:
    """An error raised ``from`` one that came through Shoal, or while the program handled one:
    each traceback the interpreter prints ends at the program's line (the chained ones kept
    Shoal's frames), and an error Shoal raised while the program handled another keeps that one
    as its context (Shoal raised it ``from None``, which hid the program's own)."""
    program = write(
        project / "app" / "chained.py",
        """
        import numpy as np

        def invert(m):
            try:
                np.linalg.inv(m)
            except np.linalg.LinAlgError as error:
                raise RuntimeError("cannot invert") from error

        g = np.ones(600_000)
        try:
            g.reshape(7, -1)
        except ValueError:
            try:
                g + np.ones(3)
            except ValueError:
                invert(np.zeros((700, 700)))
        """,
    )
    python_run = run_python(program, cwd=project, shoal=False)
    for env in ({}, LAZY):
        shoal_run = run_python(program, cwd=project, env=env)
        assert shoal_run.returncode == python_run.returncode == 1
        assert "shoal" not in shoal_run.stderr
        shown = [line for line in shoal_run.stderr.splitlines() if line.strip(" ^~")]
        expected = [line for line in python_run.stderr.splitlines() if line.strip(" ^~") and "site-packages" not in line and "raise LinAlgError" not in line and "_umath_linalg.inv(" not in line]
        assert shown == expected


@pytest.mark.parametrize(
    "source",
    [
        "print('done')",
        "import sys\nsys.exit(3)",
        "import sys\nsys.exit('stopped by the program')",
        "raise SystemExit",
        "import atexit\natexit.register(print, 'atexit ran')\nraise RuntimeError('boom')",
        "def broken(:\n    pass",
        "raise KeyboardInterrupt",
        "import sys\nsys.excepthook = lambda *exc: print('hook', exc[0].__name__)\n1 / 0",
    ],
    ids=["normal", "exit-3", "exit-message", "bare-exit", "error", "syntax", "interrupt", "hook"],
)
def test_exit_status_and_output_match_python(tmp_path: Path, source: str) -> None:
    program = write(tmp_path / "program.py", source + "\n")
    shoal_run = run_python(program, cwd=tmp_path)
    python_run = run_python(program, cwd=tmp_path, shoal=False)
    assert (shoal_run.returncode, shoal_run.stdout, shoal_run.stderr) == (
        python_run.returncode,
        python_run.stdout,
        python_run.stderr,
    )


def test_missing_program_is_a_usage_error(tmp_path: Path) -> None:
    result = run_python("absent.py", cwd=tmp_path)
    assert result.returncode == 2
    assert f"can't open file '{tmp_path / 'absent.py'}'" in result.stderr
    assert "No such file or directory" in result.stderr


def test_pending_work_is_flushed_when_the_program_ends(tmp_path: Path) -> None:
    program = write(
        tmp_path / "pending.py",
        """
        import atexit

        import numpy as np

        import shoal.runtime

        values = np.arange(100_000, dtype=np.float64)
        values *= 2.0
        atexit.register(lambda: print("flushes", shoal.runtime.current().stats.flushes))
        """,
    )
    result = run_python(program, cwd=tmp_path, env={**LAZY, "SHOAL_SETTLED_THRESHOLD": "0"})  # recorded
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["flushes", "1"]


def test_last_statement_saving_a_lazy_array_writes_its_values(tmp_path: Path) -> None:
    program = write(
        tmp_path / "save.py",
        """
        import sys

        import numpy as np

        field = np.linspace(0.0, 1.0, 50_000)
        field = np.sin(field) * 3.0 + field**2
        np.save(sys.argv[1], field[::2])
        """,
    )
    for shoal, name in ((True, "shoal.npy"), (False, "python.npy")):
        result = run_python(program, tmp_path / name, cwd=tmp_path, env=LAZY, shoal=shoal)
        assert result.returncode == 0, result.stderr
    expected = numpy.load(tmp_path / "python.npy")
    numpy.testing.assert_array_equal(numpy.load(tmp_path / "shoal.npy"), expected)


def test_fallbacks_option_reports_numpy_functions_run_by_numpy(tmp_path: Path) -> None:
    program = write(
        tmp_path / "fallbacks.py",
        """
        import warnings

        import numpy as np

        warnings.simplefilter("ignore")
        values = np.linspace(0.0, 1.0, 1000)
        for _ in range(3):
            np.linalg.eig(values.reshape(10, 100)[:, :10])
        print(float(np.sum(values)))
        """,
    )
    result = run_python("--fallbacks", program, cwd=tmp_path, env=LAZY)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "500.0"
    report = result.stderr.splitlines()
    assert report[0].startswith("shoal: NumPy fallbacks used by the program")
    assert any(line.split()[:2] == ["linalg.eig", "3"] for line in report[1:]), result.stderr


def test_fallback_report_format() -> None:
    assert format_fallback_report({}) == "shoal: the program used no NumPy fallbacks\n"
    assert format_fallback_report({"sort": 1, "argpartition": 4}).splitlines() == [
        "shoal: NumPy fallbacks used by the program (2 functions):",
        "  argpartition  4 calls",
        "  sort          1 call",
    ]


def test_redirect_tells_user_modules_from_libraries(tmp_path: Path) -> None:
    app = tmp_path / "app"
    write(app / "tool.py", "")
    write(app / "pkg" / "mod.py", "")
    write(app / "venv" / "site-packages" / "vendored" / "__init__.py", "")
    redirect = ImportRedirect(app.resolve())
    assert redirect.is_user_module({"__name__": "__main__", "__file__": str(app / "main.py")})
    assert redirect.is_user_module({"__name__": "tool", "__file__": str(app / "tool.py")})
    assert redirect.is_user_module({"__name__": "pkg.mod", "__file__": str(app / "pkg/mod.py")})
    vendored = app / "venv" / "site-packages" / "vendored" / "__init__.py"
    assert not redirect.is_user_module({"__name__": "vendored", "__file__": str(vendored)})
    assert not redirect.is_user_module({"__name__": "numpy", "__file__": numpy.__file__})
    assert not redirect.is_user_module({"__name__": "builtins"})
    assert not redirect.is_user_module(None)


def test_redirect_maps_submodules_shoal_lacks_to_numpys_own() -> None:
    redirect = ImportRedirect(Path.cwd())
    assert redirect.target_of("numpy") == "shoal.numpy"
    assert redirect.target_of("numpy.linalg") == "shoal.numpy.linalg"
    assert redirect.target_of("numpy.fft") == "numpy.fft"


def test_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--no-such-option", "app.py"]) == 2
    assert "unknown option '--no-such-option'" in capsys.readouterr().err
    assert main([]) == 2
    assert "no program given" in capsys.readouterr().err
    assert main(["info", "extra"]) == 2
    assert main(["--help"]) == 0
    assert "python -m shoal [--fallbacks] program.py" in capsys.readouterr().out


def test_info_names_engine_and_cores(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info"]) == 0
    report = capsys.readouterr().out
    assert "engine" in report
    assert "cores" in report


def test_info_into_a_closed_pipe_ends_without_a_traceback() -> None:
    """``shoal info | head``: the reader goes before the report is written."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        result = subprocess.run([sys.executable, "-m", "shoal", "info"], stdout=writer, stderr=subprocess.PIPE, text=True, timeout=120, check=False)
    finally:
        os.close(writer)
    assert result.returncode == 1
    assert result.stderr == ""


def test_ctrl_c_while_shoal_runs_recorded_work_shows_the_programs_line_only(tmp_path: Path) -> None:
    """Ctrl-C while Shoal's runtime runs a batch: the ``KeyboardInterrupt`` comes when the batch
    ends, with a traceback that ends at the program's line, as NumPy's C code would; nothing of
    Shoal is shown."""
    program = write(
        tmp_path / "interrupted.py",
        """
        import os, signal, threading
        import numpy as np

        a = np.ones(1 << 20)
        for _ in range(400):
            a = a * 1.0001 + 1.0
        threading.Timer(0.01, os.kill, (os.getpid(), signal.SIGINT)).start()  # Ctrl-C in 10 ms
        total = float(a.sum()) + sum(float(a[i]) for i in range(10**6))
        """,
    )
    shoal_run = run_python(program, cwd=tmp_path)
    python_run = run_python(program, cwd=tmp_path, shoal=False)
    for result in (shoal_run, python_run):
        assert result.returncode == -signal.SIGINT, result.stderr
        assert result.stderr.splitlines()[-1] == "KeyboardInterrupt", result.stderr
        frames = re.findall(r'File "([^"]+)", line (\d+)', result.stderr)
        assert frames[-1] == (str(program), "9"), result.stderr
    assert "shoal" + os.sep not in shoal_run.stderr, shoal_run.stderr


def test_a_program_that_catches_ctrl_c_during_a_batch_goes_on_with_numpys_values(tmp_path: Path) -> None:
    """An interrupt is held until the batch in hand has run (as NumPy's C loops hold it), so a
    program that catches it (a notebook's interrupted cell) goes on with whole arrays."""
    program = write(
        tmp_path / "caught.py",
        """
        import os, signal, threading
        import numpy as np

        a = np.ones(1 << 20)
        for _ in range(400):
            a = a * 1.0001 + 1.0
        b = a[::2] * 2.0
        threading.Timer(0.01, os.kill, (os.getpid(), signal.SIGINT)).start()
        try:
            total = float(a.sum())
            for _ in range(10**8):  # NumPy has computed everything: the interrupt comes here
                pass
        except KeyboardInterrupt:
            print("interrupted")
        print(float(a.sum()), float(b.sum()), float((a * b[0]).max()))
        """,
    )
    shoal_run = run_python(program, cwd=tmp_path)
    python_run = run_python(program, cwd=tmp_path, shoal=False)
    assert shoal_run.stdout.splitlines()[0] == "interrupted", shoal_run.stderr
    assert (shoal_run.returncode, shoal_run.stdout) == (python_run.returncode, python_run.stdout)
