"""Heat equation with a live view: the plate is drawn every K sweeps while it converges.

The same plate as heat_equation.py. Every ``--view-every`` sweeps the program looks at the plate
(``--view``): ``full`` reads the whole grid, as a plotting loop usually does; ``preview`` asks
Shoal for a copy shrunk to at most 512 x 512 (``shoal.proxy.preview``), computed where the grid
lives, so a program whose arrays are on a remote server receives only the small copy; ``none``
does not look. With ``--show`` the view is a live matplotlib window, else the image is only made.

Usage: python heat_live_view.py [SIZE] [--sweeps N] [--view full|preview|none] [--view-every K] [--show]
"""

import argparse
import time

import numpy as np


def shrink(grid, shape):
    """A copy of ``grid`` of at most ``shape``: Shoal's preview where Shoal runs the program."""
    try:
        from shoal.proxy import preview
    except ImportError:  # plain NumPy: the mean of each block, as Shoal's preview computes it
        fy, fx = -(-grid.shape[0] // shape[0]), -(-grid.shape[1] // shape[1])
        rows, columns = grid.shape[0] // fy * fy, grid.shape[1] // fx * fx
        return grid[:rows, :columns].reshape(rows // fy, fy, columns // fx, fx).mean(axis=(1, 3))
    return preview(grid, shape, "mean")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=2000, help="interior points per side")
    parser.add_argument("--sweeps", type=int, default=50)
    parser.add_argument("--view", choices=("full", "preview", "none"), default="preview")
    parser.add_argument("--view-every", type=int, default=1)
    parser.add_argument("--show", action="store_true", help="draw in a matplotlib window")
    args = parser.parse_args()

    image = None
    if args.show:
        import matplotlib.pyplot as plt

        plt.ion()
        _, axes = plt.subplots()
    grid = np.zeros((args.size + 2, args.size + 2))
    grid[:, 0] = grid[:, -1] = grid[-1, :] = -273.15
    grid[0, :] = 40.0
    center = grid[1:-1, 1:-1]
    viewed = 0.0
    start = time.perf_counter()
    for sweep in range(args.sweeps):
        center[:] = 0.2 * (center + grid[:-2, 1:-1] + grid[2:, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:])
        if args.view != "none" and sweep % args.view_every == 0:
            if args.view == "full":  # every byte of the grid, as a plotting library reads it
                picture = np.frombuffer(grid.tobytes(), dtype=grid.dtype).reshape(grid.shape)
            else:
                picture = shrink(grid, (512, 512))
            viewed += float(picture[picture.shape[0] // 2].sum())
            if args.show:
                if image is None:
                    image = axes.imshow(picture, cmap="inferno", vmin=-273.15, vmax=40.0)
                else:
                    image.set_data(picture)
                plt.pause(0.001)
    checksum = float(np.sum(grid))
    elapsed = time.perf_counter() - start
    print(f"viewed: {viewed!r}")
    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()
