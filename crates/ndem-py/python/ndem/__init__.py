"""ndem: nonsmooth DEM (contact dynamics) for granular matter, from Python.

The compiled core (``ndem._core``) is the Rust library itself: the same
SPOOK stepper, solvers and scenes as the ``ndem`` command, whose results
these bindings reproduce bit for bit.

>>> import ndem
>>> sim = ndem.Simulation.builtin("column")
>>> stats = sim.run(steps=10)
>>> sim.positions.shape
(21, 3)
"""

from __future__ import annotations

import contextlib
from typing import Iterator

from ._core import (
    SceneBuilder,
    Simulation,
    SimulationError,
    __version__,
    builtin_scenes,
    read_fclib,
    solve,
    stats_columns,
)

__all__ = [
    "SceneBuilder",
    "Simulation",
    "SimulationError",
    "__version__",
    "builtin_scenes",
    "frames",
    "read_fclib",
    "solve",
    "stats_columns",
]


@contextlib.contextmanager
def frames(sim: Simulation, out: str, every: int = 1) -> Iterator[Simulation]:
    """Write ParaView frames of ``sim`` under ``out`` every ``every`` steps
    while the block runs, the current state on entry and the last on exit.

    >>> with ndem.frames(sim, "out/column", every=10):
    ...     sim.run(steps=100)
    """
    sim.open_frames(str(out), every)
    try:
        yield sim
    finally:
        sim.close_frames()
