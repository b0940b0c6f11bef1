"""Contact forces of a packing at rest, as a histogram: the built-in random
`packing` scene settled under gravity, its normal forces f normalised by
their mean, on a log scale (the exponential tail of granular force
networks).

    python crates/ndem-py/examples/packing_forces.py --out target/py-examples
    python crates/ndem-py/examples/packing_forces.py --quick   # CI's size
"""

from __future__ import annotations

import argparse
import json
import pathlib

import numpy as np
from _figure import figure

import ndem


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI's size: 400 spheres")
    parser.add_argument("--out", default="target/py-examples")
    args = parser.parse_args()
    particles = 400 if args.quick else 4000
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    sim = ndem.Simulation.builtin("packing", particles)
    stats = sim.run()  # to the scene's duration: the bed comes to rest
    c = sim.contacts()
    between_spheres = sim.dynamic[c["body_a"]] & sim.dynamic[c["body_b"]]
    f = c["normal_force"][between_spheres]
    f = f[f > 0]
    ratio = f / f.mean()
    weight = sim.masses[sim.dynamic].sum() * 9.81
    print(
        f"{particles} spheres after {sim.step_count} steps: kinetic energy {stats['kinetic_energy'][-1]:.2e} J, "
        f"{len(f)} loaded contacts between spheres, mean force {f.mean():.3e} N, "
        f"max/mean {ratio.max():.2f}, weight {weight:.3e} N"
    )
    counts, edges = np.histogram(ratio, bins=30, range=(0, max(5.0, ratio.max())), density=True)
    (out / "packing_forces.json").write_text(
        json.dumps({"particles": particles, "density": counts.tolist(), "edges": edges.tolist()})
    )
    centres = 0.5 * (edges[1:] + edges[:-1])
    with figure(out / "packing_forces.png") as (ax,):
        ax.semilogy(centres[counts > 0], counts[counts > 0], "o")
        ax.set_xlabel(r"$f / \langle f \rangle$")
        ax.set_ylabel("probability density")
        ax.set_title(f"normal forces of a {particles}-sphere packing")


if __name__ == "__main__":
    main()
