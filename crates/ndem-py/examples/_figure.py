"""The examples' plotting: a matplotlib figure written to a PNG (Agg, no
display needed)."""

from __future__ import annotations

import contextlib
import pathlib
from typing import Iterator


@contextlib.contextmanager
def figure(path: pathlib.Path, rows: int = 1, size: tuple[float, float] = (5, 3.5)) -> Iterator[list]:
    """Axes (`rows` of them, sharing x) to draw on; on exit, grids drawn
    and the figure written to `path`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(rows, 1, sharex=True, figsize=size, squeeze=False)
    axes = list(axes[:, 0])
    yield axes
    for a in axes:
        a.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"written {path}")
