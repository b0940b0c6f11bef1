"""Angle of repose against the friction coefficient: a pile poured from an
emitter onto a plane for each friction coefficient, its slope fitted to the
heap's outer surface, plotted to a PNG.

    python crates/ndem-py/examples/friction_sweep.py --out target/py-examples
    python crates/ndem-py/examples/friction_sweep.py --quick   # CI's size

The surface is the highest sphere top in each radial ring; the angle is the
least-squares slope of the rings between 20 % and 80 % of the heap's
radius (outside the cap and the toe)."""

from __future__ import annotations

import argparse
import json
import pathlib

import numpy as np
from _figure import figure

import ndem

RADIUS = 0.0065  # sphere radius [m]: the pile scene's d = 13 mm


def pour(friction: float, particles: int, seed: int) -> ndem.Simulation:
    b = ndem.SceneBuilder(f"pile-mu-{friction}")
    # the pile scene's glass beads (warm-starting paper, Table 1) with
    # another friction coefficient, poured as there: 20 d above the plane
    b.material(friction=friction)
    b.plane()
    rate = 300.0
    b.emitter(
        [0.0, 0.0, 20 * 2 * RADIUS], (RADIUS, RADIUS), rate, particles,
        radius=3 * RADIUS, velocity=[0.0, 0.0, -1.5], seed=seed,
    )
    sim = b.build(iterations=100)
    sim.run(time=particles / rate + 2.0)
    return sim


def repose_angle(sim: ndem.Simulation) -> float:
    """Slope of the heap's outer surface [degrees]."""
    p = sim.positions[sim.dynamic]
    on_heap = p[:, 2] < 4 * RADIUS * np.sqrt(len(p))  # leave out any flyer
    p = p[on_heap]
    r = np.hypot(p[:, 0], p[:, 1])
    top = p[:, 2] + RADIUS
    extent = np.quantile(r, 0.98)
    rings = np.linspace(0.2 * extent, 0.8 * extent, 7)
    xs, zs = [], []
    for lo, hi in zip(rings[:-1], rings[1:]):
        inside = (r >= lo) & (r < hi)
        if inside.any():
            xs.append(0.5 * (lo + hi))
            zs.append(top[inside].max())
    slope = np.polyfit(xs, zs, 1)[0]
    return float(np.degrees(np.arctan(-slope)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI's size: 150 spheres, 3 coefficients")
    parser.add_argument("--out", default="target/py-examples", help="folder for the PNG and the JSON")
    args = parser.parse_args()
    particles = 150 if args.quick else 1500
    frictions = [0.1, 0.4, 0.9] if args.quick else [0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9]
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    angles = []
    for mu in frictions:
        sim = pour(mu, particles, seed=1)
        angles.append(repose_angle(sim))
        print(f"mu = {mu:4.2f}: {sim.dynamic.sum()} spheres, angle of repose {angles[-1]:5.1f} deg")
    (out / "friction_sweep.json").write_text(
        json.dumps({"particles": particles, "friction": frictions, "angle_deg": angles}, indent=2)
    )
    with figure(out / "friction_sweep.png") as (ax,):
        ax.plot(frictions, angles, "o-")
        ax.set_xlabel("friction coefficient $\\mu$")
        ax.set_ylabel("angle of repose [deg]")
        ax.set_title(f"pile of {particles} spheres, d = {2 * RADIUS * 1000:.0f} mm")


if __name__ == "__main__":
    main()
