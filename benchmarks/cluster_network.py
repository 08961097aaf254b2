"""Shoal's cluster with a slow network between its ranks (issue 11 item 8; docs/cluster.md).

Run as root: ``python -m benchmarks.cluster_network [--ranks 1 2 4] [--rate 100mbit]``.

On one machine MPI ranks talk over shared memory, which hides what latency hiding is about. This
benchmark places each rank in a network namespace of its own, joined to a bridge by a veth pair
whose both ends are rate-limited with ``tc ... tbf`` (the kernel here has no ``netem``), and
makes MPICH talk TCP only (``MPIR_CVAR_NOLOCAL=1``, UCX's ``tcp`` transport on the rank's veth).
For each example program, rank count and flush mode it reports the run time, the speed-up over
NumPy and the share of each rank's flush time spent waiting; it writes a JSON file and a plot.
Everything it creates (namespaces, links, bridge) is removed on exit, also after an error or
Ctrl-C.

Not covered yet: the same programs under Dask distributed and Heat.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
PREFIX = "shoal"
SUBNET = "10.77.0"

APPS: dict[str, tuple[str, ...]] = {
    "jacobi_stencil.py": ("2000", "--iterations", "50"),
    "heat_equation.py": ("1000", "--max-iterations", "100", "--epsilon", "0"),
    "shallow_water.py": ("1000", "--steps", "30"),
    "lattice_boltzmann.py": ("400", "--steps", "30"),
    "nbody.py": ("1000", "--steps", "10"),
    "black_scholes.py": ("1000000", "--days", "30"),
}
SMALL: dict[str, tuple[str, ...]] = {
    "jacobi_stencil.py": ("300", "--iterations", "10"),
    "heat_equation.py": ("100", "--max-iterations", "10", "--epsilon", "0"),
    "shallow_water.py": ("100", "--steps", "5"),
    "lattice_boltzmann.py": ("60", "--steps", "5"),
    "nbody.py": ("200", "--steps", "2"),
    "black_scholes.py": ("100000", "--days", "3"),
}
STATS = re.compile(r"rank (\d+)  \S+  (\d+)/(\d+)  ([\d.]+)/([\d.]+)  ([\d.]+) s \((\d+)% of ([\d.]+) s")


def sh(*command: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(command, check=check, capture_output=True, text=True)


class Network:
    """``ranks`` namespaces on a bridge, each link limited to ``rate`` both ways; a context
    manager that removes exactly what it created."""

    def __init__(self, ranks: int, rate: str) -> None:
        self.ranks = ranks
        self.rate = rate
        self.namespaces: list[str] = []
        self.links: list[str] = []
        self.bridge: str | None = None

    def __enter__(self) -> Network:
        try:
            bridge = f"{PREFIX}-br"
            sh("ip", "link", "add", bridge, "type", "bridge")
            self.bridge = bridge
            sh("ip", "link", "set", bridge, "up")
            for rank in range(self.ranks):
                namespace, host, inner = self.namespace(rank), f"{PREFIX}-h{rank}", self.device(rank)
                sh("ip", "netns", "add", namespace)
                self.namespaces.append(namespace)
                sh("ip", "link", "add", host, "type", "veth", "peer", "name", inner)
                self.links.append(host)
                sh("ip", "link", "set", inner, "netns", namespace)
                sh("ip", "link", "set", host, "master", bridge)
                sh("ip", "link", "set", host, "up")
                sh("ip", "-n", namespace, "addr", "add", f"{SUBNET}.{rank + 1}/24", "dev", inner)
                sh("ip", "-n", namespace, "link", "set", inner, "up")
                sh("ip", "-n", namespace, "link", "set", "lo", "up")
                limit = ("root", "tbf", "rate", self.rate, "burst", "64kb", "latency", "100ms")
                sh("tc", "qdisc", "add", "dev", host, *limit)
                sh("ip", "netns", "exec", namespace, "tc", "qdisc", "add", "dev", inner, *limit)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *_: object) -> None:
        for link in self.links:
            sh("ip", "link", "del", link, check=False)  # takes its peer in the namespace along
        for namespace in self.namespaces:
            sh("ip", "netns", "del", namespace, check=False)
        if self.bridge is not None:
            sh("ip", "link", "del", self.bridge, check=False)
        self.links, self.namespaces, self.bridge = [], [], None

    @staticmethod
    def namespace(rank: int) -> str:
        return f"{PREFIX}-r{rank}"

    @staticmethod
    def device(rank: int) -> str:
        return f"{PREFIX}-n{rank}"


@dataclass
class Result:
    app: str
    ranks: int
    mode: str  # "numpy", "on" (latency hiding) or "off" (blocking)
    seconds: float
    waiting: list[float] = field(default_factory=list)  # per rank, percent of its flush time
    megabytes_sent: list[float] = field(default_factory=list)


def elapsed(stdout: str) -> float:
    values = [float(line.split(":", 1)[1]) for line in stdout.splitlines() if line.startswith("time:")]
    if len(values) != 1:
        raise RuntimeError(f"no time in the output:\n{stdout}")
    return values[0]


def run_numpy(app: str, arguments: tuple[str, ...]) -> Result:
    done = subprocess.run([sys.executable, str(EXAMPLES / app), *arguments], capture_output=True, text=True, check=True, timeout=900)
    return Result(app, 1, "numpy", elapsed(done.stdout))


def run_cluster(network: Network, app: str, arguments: tuple[str, ...], ranks: int, mode: str, threads: int, small: bool = False) -> Result:
    mpiexec = str(Path(sys.executable).parent / "mpiexec")
    command = [
        mpiexec,
        "-genv", "MPIR_CVAR_NOLOCAL", "1",
        "-genv", "UCX_TLS", "tcp,self",
        "-genv", "SHOAL_STATS", "1",
        "-genv", "SHOAL_LATENCY_HIDING", mode,
        "-genv", "SHOAL_NUM_THREADS", str(threads),
    ]  # fmt: skip
    if small:  # every array lazy and distributed, as in the tests
        command += ["-genv", "SHOAL_EAGER_THRESHOLD", "0", "-genv", "SHOAL_CLUSTER_MIN_BYTES", "1024"]
    for rank in range(ranks):
        if rank:
            command.append(":")
        command += ["-n", "1", "-env", "UCX_NET_DEVICES", network.device(rank), "ip", "netns", "exec", network.namespace(rank)]
        command += [sys.executable, "-m", "shoal", str(EXAMPLES / app), *arguments]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800, start_new_session=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    rows = STATS.findall(done.stderr)
    waiting = [float(row[6]) for row in rows]
    sent = [float(row[3]) for row in rows]
    return Result(app, ranks, mode, elapsed(done.stdout), waiting, sent)


def table(results: list[Result]) -> str:
    numpy = {result.app: result.seconds for result in results if result.mode == "numpy"}
    lines = ["| program | ranks | mode | time (s) | speed-up over NumPy | waiting per rank (% of flush) | MiB sent per rank |", "|---|---|---|---|---|---|---|"]
    for result in results:
        if result.mode == "numpy":
            lines.append(f"| {result.app} | 1 | NumPy | {result.seconds:.3f} | 1.00 | | |")
            continue
        mode = "latency hiding" if result.mode == "on" else "blocking"
        speedup = numpy[result.app] / result.seconds if result.seconds else float("nan")
        waiting = " / ".join(f"{value:.0f}" for value in result.waiting)
        sent = " / ".join(f"{value:.1f}" for value in result.megabytes_sent)
        lines.append(f"| {result.app} | {result.ranks} | {mode} | {result.seconds:.3f} | {speedup:.2f} | {waiting} | {sent} |")
    return "\n".join(lines)


def plot(results: list[Result], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    apps = list(dict.fromkeys(result.app for result in results))
    figure, (speed, wait) = plt.subplots(1, 2, figsize=(12, 4))
    for mode, marker in (("on", "o-"), ("off", "s--")):
        for app in apps:
            rows = [result for result in results if result.app == app and result.mode == mode]
            if not rows:
                continue
            numpy = next(result.seconds for result in results if result.app == app and result.mode == "numpy")
            ranks = [row.ranks for row in rows]
            speed.plot(ranks, [numpy / row.seconds for row in rows], marker, label=f"{app} ({'hiding' if mode == 'on' else 'blocking'})")
            wait.plot(ranks, [max(row.waiting or [0.0]) for row in rows], marker)
    speed.set(xlabel="ranks", ylabel="speed-up over NumPy", title="speed-up on the rate-limited link")
    wait.set(xlabel="ranks", ylabel="% of flush time waiting (worst rank)", title="waiting")
    speed.legend(fontsize=6)
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--rate", default="100mbit", help="each link's rate, as tc spells it")
    parser.add_argument("--apps", nargs="+", default=list(APPS), choices=list(APPS))
    parser.add_argument("--small", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "cluster_network")
    args = parser.parse_args(argv)
    if os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("tc") is None:
        print("cluster_network needs root, `ip` and `tc`", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # Ctrl-C's path: the links go away
    cores = os.cpu_count() or 1
    results: list[Result] = []
    for app in args.apps:
        arguments = SMALL[app] if args.small else APPS[app]
        results.append(run_numpy(app, arguments))
        for ranks in args.ranks:
            with Network(ranks, args.rate) as network:
                for mode in ("on", "off"):
                    result = run_cluster(network, app, arguments, ranks, mode, max(1, cores // ranks), args.small)
                    results.append(result)
                    print(f"{app} ranks={ranks} mode={mode}: {result.seconds:.3f} s, waiting {result.waiting}", flush=True)
    print(table(results))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps([asdict(result) for result in results], indent=1))
    plot(results, args.out.with_suffix(".png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
