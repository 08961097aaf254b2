"""``%load_ext shoal`` in a real notebook run by an IPython kernel (nbclient): later
``import numpy`` in the cells, and in a module next to the notebook, gives ``shoal.numpy``; tasks
defined in the notebook's cells run in the workers (their functions travel by value)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

CELLS = [
    "%load_ext shoal",
    "import sys\nimport numpy as np\nimport numpy.linalg\nprint(np.__name__, numpy.linalg.__name__, sys.modules['numpy'].__name__)",
    "a = np.arange(1_000_000, dtype=np.float64)\nb = np.sqrt(a) * 2\nprint(type(b).__module__, repr(float(b.sum())))",
    "import helper\nprint(helper.NAME)",
    "import pandas\nprint(type(pandas.DataFrame({'x': b[:3]})['x'].to_numpy()).__module__)",
    "%unload_ext shoal\nimport numpy as plain\nprint(plain.__name__)",
    "import shoal.tasks as tasks\nfrom shoal.tasks import task, wait_on\n\n@task()\ndef square(x):\n"
    "    return x * x + offset\n\noffset = 1\ntasks.start(workers=2)\nprint(wait_on([square(i) for i in range(4)]))",
    "@task()\ndef square(x):  # a cell run again with a new definition\n    return -x\n\n"
    "print(wait_on([square(i) for i in range(4)]))\ntasks.shutdown()",
]


@pytest.mark.full
@pytest.mark.timeout(300)
def test_load_ext_shoal_in_a_notebook(tmp_path: Path) -> None:
    import nbformat
    from nbclient import NotebookClient

    (tmp_path / "helper.py").write_text("import numpy\n\nNAME = numpy.__name__\n")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in CELLS])
    client = NotebookClient(notebook, timeout=240, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    outputs = ["".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream") for cell in notebook.cells]
    errors = [o for cell in notebook.cells for o in cell.outputs if o.output_type == "error"]
    assert not errors, errors
    assert outputs[1] == "shoal.numpy shoal.numpy.linalg numpy\n"
    module, total = outputs[2].split()
    assert module == "shoal.numpy._lazy"
    assert math.isclose(float(total), float((np.sqrt(np.arange(1_000_000.0)) * 2).sum()), rel_tol=1e-12)
    assert outputs[3] == "shoal.numpy\n"
    assert outputs[4] == "numpy\n"  # libraries still get NumPy's arrays from their own numpy
    assert outputs[5] == "numpy\n"
    assert outputs[6] == "[1, 2, 5, 10]\n"
    assert outputs[7] == "[0, -1, -2, -3]\n"
