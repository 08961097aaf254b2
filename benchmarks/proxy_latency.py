"""Programs run locally and through the proxy over a slow link, side by side (paper 004 §4).

A ``shoal serve`` server runs on this machine; each remote run reaches it through
:class:`benchmarks.net_relay.Relay`, which adds a round-trip delay and a rate limit in user space
(this kernel has no ``netem``). For every link the local and the remote run of each program
alternate, ``--repeats`` times; the table gives medians of the time each program reports and
the slowdown remote / local. The visualisation rows run ``examples/heat_live_view.py``, which
looks at the whole grid every sweep (without and with compression) or at a 512 x 512 preview.
``--dask`` adds the heat equation through a Dask distributed ``Client`` whose scheduler is
reached over the same relay (``benchmarks/variants/heat_equation_dask.py``).

Run: ``python -m benchmarks.proxy_latency [--rtt-ms 0,1,10,50,100] [--mbit 1000,100] [--repeats 3]``
Writes ``benchmarks/results/proxy_latency.md`` and ``.png``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from benchmarks.net_relay import Relay
from shoal.bench.measure import run

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
RESULTS = ROOT / "benchmarks" / "results"


@dataclass(frozen=True)
class Case:
    """A program, its arguments, and what the proxy client is told."""

    label: str
    script: str
    arguments: tuple[str, ...]
    environment: tuple[tuple[str, str], ...] = ()


CASES = (
    Case("heat equation (a scalar read per sweep)", "heat_equation.py", ("3000", "--epsilon", "0", "--max-iterations", "40")),
    Case("Black-Scholes (a scalar read per day)", "black_scholes.py", ("2000000", "--days", "10")),
    Case("N-body (nothing read until the end)", "nbody.py", ("2000", "--steps", "5")),
    Case("shallow water (nothing read until the end)", "shallow_water.py", ("1500", "--steps", "20")),
)
VIEW_CASES = (
    Case("heat 2000², whole grid every sweep, raw", "heat_live_view.py", ("2000", "--sweeps", "20", "--view", "full"), (("SHOAL_PROXY_COMPRESSION", "off"),)),
    Case("heat 2000², whole grid every sweep, zstd", "heat_live_view.py", ("2000", "--sweeps", "20", "--view", "full")),
    Case("heat 2000², 512² preview every sweep", "heat_live_view.py", ("2000", "--sweeps", "20", "--view", "preview")),
)


class Server:
    """``python -m shoal serve`` on a free loopback port with a token file of its own."""

    def __init__(self, folder: Path) -> None:
        self.environment = {**os.environ, "XDG_CONFIG_HOME": str(folder)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "shoal", "serve", "--bind", "127.0.0.1:0"],
            env=self.environment, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        line = self.process.stdout.readline()
        if "listening on 127.0.0.1:" not in line:
            self.process.kill()
            raise RuntimeError(f"shoal serve did not start: {line!r}")
        self.port = int(line.split("listening on 127.0.0.1:")[1].split()[0])
        self.token_file = folder / "shoal" / "proxy-token"

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


class DaskCluster:
    """``dask scheduler`` and one ``dask worker`` (threads = cores) on loopback."""

    def __init__(self) -> None:
        import socket

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        address = f"tcp://127.0.0.1:{self.port}"
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        self.processes = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", str(self.port), "--no-dashboard"], **quiet)]
        self.processes.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nworkers", "1", "--no-dashboard", "--host", "127.0.0.1"], **quiet))
        from distributed import Client

        with Client(address, timeout=60) as client:
            client.wait_for_workers(1, timeout=60)

    def close(self) -> None:
        for process in reversed(self.processes):
            process.terminate()
            process.wait(timeout=30)


def dask_run(case: Case, port: int) -> float:
    size, *rest = case.arguments
    argv = [sys.executable, str(ROOT / "benchmarks" / "variants" / "heat_equation_dask.py"), size, *rest, "--scheduler-address", f"tcp://127.0.0.1:{port}"]
    return run(argv, ROOT, timeout=900).seconds


def measure_dask(links, repeats: int, server: Server) -> list[tuple[str, str, float, float]]:
    """The heat equation through Shoal's proxy and through a Dask client, same relayed link."""
    case = CASES[0]
    cluster = DaskCluster()
    rows = []
    try:
        for rtt, mbit in links:
            with Relay(server.port, rtt, mbit) as to_shoal, Relay(cluster.port, rtt, mbit) as to_dask:
                shoal, dask = [], []
                for _ in range(repeats):
                    shoal.append(one_run(case, to_shoal.port, server.token_file))
                    dask.append(dask_run(case, to_dask.port))
                rows.append((f"{case.label}: Dask client vs Shoal proxy", f"{rtt:g} ms, {mbit:g} Mbit/s", statistics.median(shoal), statistics.median(dask)))
                print(f"dask vs shoal {rtt} ms: shoal {rows[-1][2]:.3f} s, dask {rows[-1][3]:.3f} s", flush=True)
    finally:
        cluster.close()
    return rows


def one_run(case: Case, remote_port: int | None, token_file: Path) -> float:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("SHOAL_")}
    environment.update(case.environment)
    if remote_port is not None:
        environment.update(SHOAL_REMOTE=f"127.0.0.1:{remote_port}", SHOAL_TOKEN_FILE=str(token_file))
    argv = [sys.executable, "-m", "shoal", str(EXAMPLES / case.script), *case.arguments]
    return run(argv, ROOT, timeout=900, env=environment).seconds


def measure(cases, links, repeats: int, server: Server) -> list[tuple[str, str, float, float]]:
    rows = []
    for rtt, mbit in links:
        with Relay(server.port, rtt, mbit) as relay:
            for case in cases:
                local, remote = [], []
                for _ in range(repeats):
                    local.append(one_run(case, None, server.token_file))
                    remote.append(one_run(case, relay.port, server.token_file))
                link = f"{rtt:g} ms, {mbit:g} Mbit/s"
                rows.append((case.label, link, statistics.median(local), statistics.median(remote)))
                print(f"{case.label:48s} {link:20s} local {rows[-1][2]:8.3f} s  remote {rows[-1][3]:8.3f} s  x{rows[-1][3] / rows[-1][2]:.2f}", flush=True)
    return rows


def table(rows) -> str:
    lines = ["| program | link (RTT, rate) | local s | remote s | remote / local |", "|---|---|---:|---:|---:|"]
    lines += [f"| {label} | {link} | {local:.3f} | {remote:.3f} | {remote / local:.2f}x |" for label, link, local, remote in rows]
    return "\n".join(lines)


def plot(rows, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(9, 5))
    for label in dict.fromkeys(row[0] for row in rows):
        points = [(row[1], row[3] / row[2]) for row in rows if row[0] == label]
        axes.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
    axes.set_ylabel("slowdown, remote / local")
    axes.set_yscale("log")
    axes.tick_params(axis="x", rotation=30)
    axes.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rtt-ms", default="0,1,10,50,100")
    parser.add_argument("--mbit", default="1000,100")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cases", default="all", help="all, programs, views or dask")
    arguments = parser.parse_args()
    links = [(float(rtt), float(mbit)) for mbit in arguments.mbit.split(",") for rtt in arguments.rtt_ms.split(",")]
    cases = {"all": CASES + VIEW_CASES, "programs": CASES, "views": VIEW_CASES, "dask": ()}[arguments.cases]
    with tempfile.TemporaryDirectory() as folder:
        server = Server(Path(folder))
        try:
            rows = measure(cases, links, arguments.repeats, server)
            if arguments.cases in ("all", "dask"):
                rows += measure_dask(links, arguments.repeats, server)
        finally:
            server.close()
    RESULTS.mkdir(exist_ok=True)
    command = " ".join(["python -m benchmarks.proxy_latency", *sys.argv[1:]])
    name = f"proxy_latency_{arguments.cases}"
    header = "Columns: local and remote (or, for Dask rows, Shoal's proxy and Dask's client), medians."
    (RESULTS / f"{name}.md").write_text(f"# Proxy: local and remote runs over a relayed link\n\n`{command}`\n\n{header}\n\n{table(rows)}\n")
    plot(rows, RESULTS / f"{name}.png")
    print(table(rows))


if __name__ == "__main__":
    main()
