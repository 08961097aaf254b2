"""Shoal's cluster with a slow network between its ranks (issue 11 item 8; docs/cluster.md).

Run as root: ``python -m benchmarks.cluster_network [--ranks 1 2 4] [--rate 100mbit] [--tools ...]
[--repeat 3] [--link veth shm]``.

On one machine MPI ranks talk over shared memory, which hides what latency hiding is about. This
benchmark places each rank in a network namespace of its own, joined to a bridge by a veth pair
whose both ends are rate-limited with ``tc ... tbf`` (the kernel here has no ``netem``), and
makes MPICH talk TCP only (``MPIR_CVAR_NOLOCAL=1``, UCX's ``tcp`` transport on the rank's veth).
For each example program and rank count it runs, side by side and alternating within each
repetition, Shoal with latency hiding (``on``) and blocking (``off``), Dask distributed (a
scheduler and one worker process per rank, each worker in its rank's namespace; ``LocalCluster``
on shared memory) and Heat (under the same ``mpiexec`` line, from ``benchmarks/.venv-heat``, see
``make heat-env``), the programs of :mod:`benchmarks.cluster_peers`. It reports medians: time,
speed-up over NumPy, and the share of each Shoal rank's flush time spent waiting; it writes a JSON
file, a markdown table and a plot. Names it creates start with ``--prefix`` (unique per process by
default, so that concurrent runs do not meet); everything it creates (namespaces, links, bridge,
Dask processes) is removed on exit, also after an error, SIGTERM or Ctrl-C.
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
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
PEERS = ROOT / "benchmarks" / "cluster_peers.py"
HEAT_PYTHON = ROOT / "benchmarks" / ".venv-heat" / "bin" / "python"
SUBNET = "10.77.0"
DASK_PORT = 8786
TOOLS = ("on", "off", "dask", "heat")
LABELS = {"numpy": "NumPy", "on": "Shoal, latency hiding", "off": "Shoal, blocking", "dask": "Dask distributed", "heat": "Heat"}

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
HALO_SWEEPS = re.compile(r"halo sweeps: (.+?)(?: \(a \d+ KiB round trip|$)", re.MULTILINE)


def sh(*command: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(command, check=check, capture_output=True, text=True)


class Network:
    """``ranks`` namespaces on a bridge, each link limited to ``rate`` both ways; a context
    manager that removes exactly what it created."""

    def __init__(self, ranks: int, rate: str, prefix: str) -> None:
        self.ranks = ranks
        self.rate = rate
        self.prefix = prefix
        self.namespaces: list[str] = []
        self.links: list[str] = []
        self.bridge: str | None = None

    def __enter__(self) -> Network:
        try:
            bridge = f"{self.prefix}-br"
            sh("ip", "link", "add", bridge, "type", "bridge")
            self.bridge = bridge
            sh("ip", "link", "set", bridge, "up")
            for rank in range(self.ranks):
                namespace, host, inner = self.namespace(rank), f"{self.prefix}-h{rank}", self.device(rank)
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

    def namespace(self, rank: int) -> str:
        return f"{self.prefix}-r{rank}"

    def device(self, rank: int) -> str:
        return f"{self.prefix}-n{rank}"

    @staticmethod
    def address(rank: int) -> str:
        return f"{SUBNET}.{rank + 1}"


@dataclass
class Result:
    app: str
    ranks: int
    tool: str  # "numpy", "on" (Shoal, latency hiding), "off" (Shoal, blocking), "dask" or "heat"
    link: str  # "veth" (rate-limited network) or "shm" (one host, shared memory)
    seconds: float | None  # None: failed or ran past the time limit (``error`` says which)
    waiting: list[float] = field(default_factory=list)  # Shoal, per rank: percent of its flush time
    megabytes_sent: list[float] = field(default_factory=list)
    error: str = ""
    halo_sweeps: str = ""  # Shoal: how rank 0 planned halo sweeps (``SHOAL_STATS``)


def elapsed(stdout: str) -> float:
    values = [float(line.split(":", 1)[1]) for line in stdout.splitlines() if line.startswith("time:")]
    if len(values) != 1:
        raise RuntimeError(f"no time in the output:\n{stdout}")
    return values[0]


def execute(command: list[str], limit: float, env: dict[str, str] | None = None) -> tuple[str, str]:
    """Run ``command`` in a session of its own; the whole session is killed past ``limit``."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, env=env)
    try:
        stdout, stderr = process.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        _kill(process)
        process.communicate()
        raise TimeoutError(f"ran past {limit:.0f} s") from None
    except BaseException:
        _kill(process)
        raise
    finally:
        _kill(process)  # whatever of the session is left
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({process.returncode}):\n{stderr[-2000:]}")
    return stdout, stderr


def _kill(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_numpy(app: str, arguments: tuple[str, ...], limit: float) -> Result:
    stdout, _ = execute([sys.executable, str(EXAMPLES / app), *arguments], limit)
    return Result(app, 1, "numpy", "-", elapsed(stdout))


def mpi_line(network: Network | None, ranks: int, python: Path, program: list[str], env: dict[str, str]) -> list[str]:
    """An ``mpiexec`` line running ``python program`` on ``ranks`` ranks: one per namespace over
    TCP when ``network`` is given, else on this host over shared memory."""
    mpiexec = str(python.parent / "mpiexec")
    command = [mpiexec]
    for key, value in env.items():
        command += ["-genv", key, value]
    if network is None:
        return [*command, "-n", str(ranks), str(python), *program]
    command += ["-genv", "MPIR_CVAR_NOLOCAL", "1", "-genv", "UCX_TLS", "tcp,self"]
    for rank in range(ranks):
        if rank:
            command.append(":")
        command += ["-n", "1", "-env", "UCX_NET_DEVICES", network.device(rank), "ip", "netns", "exec", network.namespace(rank)]
        command += [str(python), *program]
    return command


def run_shoal(network: Network | None, app: str, arguments: tuple[str, ...], ranks: int, mode: str, threads: int, small: bool, limit: float) -> Result:
    env = {"SHOAL_STATS": "1", "SHOAL_LATENCY_HIDING": mode, "SHOAL_NUM_THREADS": str(threads)}
    if small:  # every array lazy and distributed, as in the tests
        env |= {"SHOAL_EAGER_THRESHOLD": "0", "SHOAL_CLUSTER_MIN_BYTES": "1024"}
    command = mpi_line(network, ranks, Path(sys.executable), ["-m", "shoal", str(EXAMPLES / app), *arguments], env)
    stdout, stderr = execute(command, limit)
    rows = STATS.findall(stderr)
    sweeps = HALO_SWEEPS.search(stderr)
    return Result(app, ranks, mode, link(network), elapsed(stdout), [float(row[6]) for row in rows], [float(row[3]) for row in rows], halo_sweeps=sweeps.group(1).strip() if sweeps else "")


def run_heat(network: Network | None, app: str, arguments: tuple[str, ...], ranks: int, threads: int, limit: float) -> Result:
    if not HEAT_PYTHON.exists():
        raise RuntimeError(f"no {HEAT_PYTHON}: run `make heat-env`")
    env = {"OMP_NUM_THREADS": str(threads), "PYTHONWARNINGS": "ignore"}
    command = mpi_line(network, ranks, HEAT_PYTHON, [str(PEERS), "heat", "-", app, *arguments], env)
    stdout, _ = execute(command, limit)
    return Result(app, ranks, "heat", link(network), elapsed(stdout))


def run_dask(network: Network | None, app: str, arguments: tuple[str, ...], ranks: int, threads: int, limit: float) -> Result:
    """Dask: a ``LocalCluster`` of ``ranks`` worker processes on shared memory; on the network a
    scheduler (with the client) in rank 0's namespace and one worker process per namespace."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONWARNINGS": "ignore"}
    if network is None:
        stdout, _ = execute([sys.executable, str(PEERS), "dask", f"local:{ranks}:{threads}", app, *arguments], limit, env)
        return Result(app, ranks, "dask", "shm", elapsed(stdout))
    scheduler = f"tcp://{network.address(0)}:{DASK_PORT}"
    started: list[subprocess.Popen] = []
    inside = ["ip", "netns", "exec"]
    try:
        started.append(_spawn([*inside, network.namespace(0), sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", network.address(0), "--port", str(DASK_PORT), "--no-dashboard", "--no-show"], env))
        for rank in range(ranks):
            worker = ["-m", "distributed.cli.dask_worker", scheduler, "--nthreads", str(threads), "--no-nanny", "--host", network.address(rank), "--no-dashboard"]
            started.append(_spawn([*inside, network.namespace(rank), sys.executable, *worker], env))
        client = [*inside, network.namespace(0), sys.executable, str(PEERS), "dask", scheduler, app, *arguments]
        stdout, _ = execute(client, limit, env | {"DASK_PEERS_WORKERS": str(ranks)})
    finally:
        for process in started:
            _kill(process)
            process.wait()
    return Result(app, ranks, "dask", "veth", elapsed(stdout))


def _spawn(command: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, env=env)


def link(network: Network | None) -> str:
    return "shm" if network is None else "veth"


def run_tool(tool: str, network: Network | None, app: str, arguments: tuple[str, ...], ranks: int, threads: int, small: bool, limit: float) -> Result:
    """One run of ``tool``; a failure or a run past ``limit`` is a result without a time."""
    try:
        if tool in ("on", "off"):
            return run_shoal(network, app, arguments, ranks, tool, threads, small, limit)
        if tool == "dask":
            return run_dask(network, app, arguments, ranks, threads, limit)
        return run_heat(network, app, arguments, ranks, threads, limit)
    except (RuntimeError, TimeoutError) as error:
        return Result(app, ranks, tool, link(network), None, error=str(error).strip().splitlines()[-1][:200])


def median(rows: list[Result]) -> Result | None:
    """The median run of ``rows`` (of one app, ranks, tool and link); failures count as slowest."""
    if not rows:
        return None
    timed = sorted((row for row in rows if row.seconds is not None), key=lambda row: row.seconds or 0.0)
    if len(timed) * 2 <= len(rows):
        return next(row for row in rows if row.seconds is None)
    return timed[(len(rows) - 1) // 2] if len(timed) == len(rows) else timed[len(timed) // 2]


def summary(results: list[Result]) -> list[tuple[Result, int]]:
    """One median result per (app, ranks, tool, link), with the number of runs behind it."""
    groups: dict[tuple, list[Result]] = {}
    for result in results:
        groups.setdefault((result.app, result.ranks, result.link, result.tool), []).append(result)
    out = []
    for rows in groups.values():
        chosen = median(rows)
        if chosen is not None:
            out.append((chosen, len(rows)))
    order = {tool: number for number, tool in enumerate(("numpy", *TOOLS))}
    out.sort(key=lambda item: (item[0].app, item[0].link, item[0].ranks, order[item[0].tool]))
    return out


def table(results: list[Result]) -> str:
    rows = summary(results)
    numpy = {result.app: result.seconds for result, _ in rows if result.tool == "numpy"}
    lines = [
        "| program | link | ranks | tool | runs | median time (s) | speed-up over NumPy | waiting per rank (% of flush) | MiB sent per rank | halo sweeps |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for result, runs in rows:
        base = numpy.get(result.app)
        if result.seconds is None:
            time_text, speedup = f"— ({result.error})", "—"
        else:
            time_text = f"{result.seconds:.3f}"
            speedup = f"{base / result.seconds:.2f}" if base else ""
        waiting = " / ".join(f"{value:.0f}" for value in result.waiting)
        sent = " / ".join(f"{value:.1f}" for value in result.megabytes_sent)
        lines.append(f"| {result.app} | {result.link} | {result.ranks} | {LABELS[result.tool]} | {runs} | {time_text} | {speedup} | {waiting} | {sent} | {result.halo_sweeps} |")
    return "\n".join(lines)


def targets(results: list[Result]) -> str:
    """The issue's 4-rank targets on the rate-limited link: Shoal (latency hiding) against Heat
    (at least 2x faster) and Dask (at least 3x faster) for Jacobi and heat."""
    rows = {(r.app, r.ranks, r.link, r.tool): r for r, _ in summary(results)}
    lines = []
    for app in ("jacobi_stencil.py", "heat_equation.py"):
        shoal = rows.get((app, 4, "veth", "on"))
        for tool, factor in (("heat", 2.0), ("dask", 3.0)):
            peer = rows.get((app, 4, "veth", tool))
            if shoal is None or peer is None:
                continue
            if shoal.seconds is None:
                lines.append(f"- {app}, 4 ranks, vs {LABELS[tool]}: Shoal failed ({shoal.error}): missed")
                continue
            if peer.seconds is None:
                lines.append(f"- {app}, 4 ranks, vs {LABELS[tool]}: {LABELS[tool]} failed ({peer.error}); Shoal {shoal.seconds:.2f} s")
                continue
            ratio = peer.seconds / shoal.seconds
            verdict = "met" if ratio >= factor else "missed"
            lines.append(f"- {app}, 4 ranks, vs {LABELS[tool]}: {ratio:.2f}x (target {factor:.0f}x): {verdict}")
    return "\n".join(lines)


def plot(results: list[Result], path: Path) -> None:
    """Speed-up over NumPy against ranks, one panel per program, one line per tool (paper 003's
    figures), on the rate-limited link; and the worst rank's waiting for Shoal's two modes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [row for row, _ in summary(results)]
    numpy = {row.app: row.seconds for row in rows if row.tool == "numpy"}
    apps = list(dict.fromkeys(row.app for row in rows))
    links = [name for name in ("veth", "shm") if any(row.link == name for row in rows)]
    figure, axes = plt.subplots(len(links), len(apps) + 1, figsize=(3.2 * (len(apps) + 1), 3.0 * len(links)), squeeze=False)
    styles = {"on": "o-", "off": "s--", "dask": "^-.", "heat": "v:"}
    for line_number, name in enumerate(links):
        for column, app in enumerate(apps):
            axis = axes[line_number][column]
            for tool in TOOLS:
                points = [(row.ranks, numpy[app] / row.seconds) for row in rows if row.app == app and row.tool == tool and row.link == name and row.seconds and numpy.get(app)]
                if points:
                    axis.plot(*zip(*sorted(points)), styles[tool], label=LABELS[tool])
            axis.set(title=f"{app.removesuffix('.py')} ({name})", xlabel="ranks", ylabel="speed-up over NumPy")
            axis.axhline(1.0, color="grey", linewidth=0.5)
        wait = axes[line_number][-1]
        for tool in ("on", "off"):
            for app in apps:
                points = [(row.ranks, max(row.waiting)) for row in rows if row.app == app and row.tool == tool and row.link == name and row.waiting]
                if points:
                    wait.plot(*zip(*sorted(points)), styles[tool], label=f"{app.removesuffix('.py')} ({'hiding' if tool == 'on' else 'blocking'})")
        wait.set(title=f"Shoal waiting ({name})", xlabel="ranks", ylabel="% of flush time (worst rank)")
    for axis, size in ((axes[0][0], 6), (axes[0][-1], 5)):
        if axis.get_legend_handles_labels()[0]:
            axis.legend(fontsize=size)
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def load() -> str:
    """The load averages (1, 5, 15 minutes)."""
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--rate", default="100mbit", help="each link's rate, as tc spells it")
    parser.add_argument("--apps", nargs="+", default=list(APPS), choices=list(APPS))
    parser.add_argument("--tools", nargs="+", default=list(TOOLS), choices=list(TOOLS))
    parser.add_argument("--link", nargs="+", default=["veth"], choices=["veth", "shm"])
    parser.add_argument("--repeat", type=int, default=1, help="repetitions; the tools alternate within each")
    parser.add_argument("--limit", type=float, default=300.0, help="seconds one run may take")
    parser.add_argument("--prefix", default=f"sn{os.getpid() % 100000}", help="start of every name created (unique per run)")
    parser.add_argument("--small", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--keep", type=Path, help="a JSON file of an earlier run: its results for other programs join this run's table")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "cluster_network")
    args = parser.parse_args(argv)
    if "veth" in args.link and (os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("tc") is None):
        print("cluster_network needs root, `ip` and `tc`", file=sys.stderr)
        return 2
    for number in (signal.SIGINT, signal.SIGTERM):  # Ctrl-C's path, also when started with SIGINT ignored
        signal.signal(number, signal.default_int_handler)
    cores = os.cpu_count() or 1
    results: list[Result] = []
    if args.keep is not None:
        results = [Result(**row) for row in json.loads(args.keep.read_text()) if row["app"] not in args.apps]
    began = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_before = load()
    for app in args.apps:
        arguments = SMALL[app] if args.small else APPS[app]
        for _ in range(args.repeat):
            results.append(run_numpy(app, arguments, args.limit))
        for ranks in args.ranks:
            for name in args.link:
                network = Network(ranks, args.rate, args.prefix) if name == "veth" else None
                with network if network is not None else _nothing():
                    for _ in range(args.repeat):
                        for tool in args.tools:
                            result = run_tool(tool, network, app, arguments, ranks, max(1, cores // ranks), args.small, args.limit)
                            results.append(result)
                            shown = f"{result.seconds:.3f} s" if result.seconds is not None else result.error
                            print(f"{app} ranks={ranks} {name} {tool}: {shown} waiting {result.waiting}", flush=True)
    text = table(results)
    print(text)
    print(targets(results))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps([asdict(result) for result in results], indent=1))
    heading = f"# Cluster benchmark ({began}; load average before {load_before}, after {load()}; {cores} cores)\n\n"
    command = f"`python -m benchmarks.cluster_network {' '.join(argv if argv is not None else sys.argv[1:])}` (rate {args.rate} per link)\n\n"
    args.out.with_suffix(".md").write_text(heading + command + text + "\n\n" + targets(results) + "\n")
    plot(results, args.out.with_suffix(".png"))
    return 0


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: object) -> None:
        return None


PRIVATE_SHM = "SHOAL_BENCH_PRIVATE_SHM"


def in_private_shm() -> None:
    """Run this command again (same process: ``unshare`` and ``sh`` exec) in a mount namespace of
    its own with an empty ``/dev/shm``: what ranks and peers leave there (MPICH's segments, the
    semaphores of Dask workers killed past ``--limit``) goes with the last of its processes.
    Needs root and ``unshare``; otherwise, or when already inside, it returns."""
    if os.environ.get(PRIVATE_SHM) or os.geteuid() != 0 or shutil.which("unshare") is None:
        return
    os.environ[PRIVATE_SHM] = "1"
    script = 'mount -t tmpfs -o mode=1777 tmpfs /dev/shm && exec "$@"'
    os.execvp("unshare", ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", sys.executable, "-m", "benchmarks.cluster_network", *sys.argv[1:]])


if __name__ == "__main__":
    in_private_shm()
    sys.exit(main())
