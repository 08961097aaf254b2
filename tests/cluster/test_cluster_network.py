"""The network benchmark (``benchmarks/cluster_network.py``) removes everything it creates:
namespaces, links and bridge, and the processes it started, after a failure, Ctrl-C or SIGTERM.
Its table and targets read medians, with failed runs shown as such."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from benchmarks.cluster_network import Network, Result, median, table, targets

ROOT = Path(__file__).resolve().parents[2]
needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("tc") is None, reason="needs root, ip and tc"
)


def created(prefix: str) -> list[str]:
    """Namespaces and links whose names start with ``prefix``."""
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout.split()
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True).stdout
    names = [word for word in namespaces if word.startswith(prefix)]
    names += [line.split(":")[1].strip().split("@")[0] for line in links.splitlines() if line.split(":")[1].strip().startswith(prefix)]
    return names


def test_medians_failures_and_targets() -> None:
    runs = [Result("jacobi_stencil.py", 4, "on", "veth", seconds) for seconds in (3.0, 1.0, 2.0)]
    assert median(runs) is runs[2]
    failed = [Result("jacobi_stencil.py", 4, "dask", "veth", None, error="ran past 90 s"), Result("jacobi_stencil.py", 4, "dask", "veth", 9.0)]
    assert median(failed) is failed[0]  # half the runs failed: the failure is the median
    heat = [Result("jacobi_stencil.py", 4, "heat", "veth", 5.0)]
    numpy = [Result("jacobi_stencil.py", 1, "numpy", "-", 4.0)]
    text = table(numpy + runs + failed + heat)
    assert "| jacobi_stencil.py | veth | 4 | Shoal, latency hiding | 3 | 2.000 | 2.00 |" in text
    assert "— (ran past 90 s)" in text
    verdicts = targets(numpy + runs + failed + heat)
    assert "vs Heat: 2.50x (target 2x): met" in verdicts
    assert "vs Dask distributed: Dask distributed failed (ran past 90 s)" in verdicts


@pytest.mark.full
@needs_root
def test_the_network_is_removed_after_a_failure() -> None:
    prefix = f"tn{os.getpid() % 100000}"
    with pytest.raises(RuntimeError, match="inside"), Network(2, "10mbit", prefix) as network:
        assert sorted(created(prefix)) == sorted([f"{prefix}-br", f"{prefix}-h0", f"{prefix}-h1", network.namespace(0), network.namespace(1)])
        raise RuntimeError("inside")
    assert created(prefix) == []


@pytest.mark.full
@needs_root
@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM])
def test_the_benchmark_cleans_up_when_interrupted(number: signal.Signals, tmp_path: Path) -> None:
    prefix = f"ti{os.getpid() % 10000}{int(number)}"
    command = [sys.executable, "-m", "benchmarks.cluster_network", "--small", "--apps", "nbody.py", "--ranks", "2", "--tools", "on", "--repeat", "50"]
    command += ["--prefix", prefix, "--out", str(tmp_path / "out")]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not psutil.Process(process.pid).children(recursive=True) or len(created(prefix)) < 5:
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
            time.sleep(0.05)
        started = psutil.Process(process.pid).children(recursive=True)
        process.send_signal(number)  # Ctrl-C reaches the benchmark; its runs have sessions of their own
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode != 0
    assert "KeyboardInterrupt" in stderr
    assert created(prefix) == []
    _, alive = psutil.wait_procs(started, timeout=10)
    assert alive == []
    assert not (tmp_path / "out.json").exists()
