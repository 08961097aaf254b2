"""The PNG chart: speed-up over NumPy per example and tool (log scale), with the 1x line."""

from __future__ import annotations

from pathlib import Path

from shoal.bench.results import ExampleResult


def draw(results: list[ExampleResult], tools: tuple[str, ...], path: Path) -> None:
    """Write a grouped bar chart of speed-ups over NumPy to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [tool for tool in tools if tool != "numpy"]
    width = 0.8 / max(len(shown), 1)
    figure, axes = plt.subplots(figsize=(max(6.0, 1.3 * len(results)), 4.0))
    try:
        for index, tool in enumerate(shown):
            positions, heights = [], []
            for position, result in enumerate(results):
                speedup = result.speedup(tool)
                if speedup is not None:
                    positions.append(position + (index - (len(shown) - 1) / 2) * width)
                    heights.append(speedup)
            axes.bar(positions, heights, width=width, label=tool)
        axes.axhline(1.0, color="black", linewidth=0.8)
        axes.set_yscale("log")
        axes.set_xticks(range(len(results)))
        axes.set_xticklabels([result.example.name for result in results], rotation=30, ha="right")
        axes.set_ylabel("speed-up over NumPy (median)")
        axes.legend()
        figure.tight_layout()
        figure.savefig(path, dpi=120)
    finally:
        plt.close(figure)
