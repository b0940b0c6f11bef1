"""The binding's cost, measured (not asserted): stepping a packing from
Python against the same loop in Rust, interleaved, and reading the
positions of 10^6 spheres into numpy.

    cargo build --release -p ndem-benches --example step_loop
    pip install ./crates/ndem-py      # or: maturin develop --release
    python crates/ndem-py/bench/overhead.py --out target/py-bench

Both sides build the built-in `packing` with N spheres and step it the same
number of times from its first state: Rust with `Scene::step` in a bare
loop (`benches/examples/step_loop.rs`), Python with `Simulation.run(steps)`
(which also records each step's statistics and checks for Ctrl-C). Reported:
each side's seconds per step in every repetition, the ratio of their
minima, and the host's load average."""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import time
import warnings

import numpy as np

import ndem


def rust_run(loop: str, particles: int, steps: int) -> float:
    done = subprocess.run([loop, str(particles), str(steps)], check=True, capture_output=True, text=True)
    return json.loads(done.stdout)["seconds_per_step"]


def python_run(particles: int, steps: int) -> float:
    sim = ndem.Simulation.builtin("packing", particles)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unresolved steps: the same in both loops
        sim.run(steps=steps, progress=False)
    return (time.perf_counter() - start) / steps


def read_positions(n: int, reps: int) -> dict:
    side = int(round(n ** (1 / 3)))
    b = ndem.SceneBuilder("million")
    b.material()
    grid = np.stack(np.meshgrid(*[np.arange(side)] * 3, indexing="ij"), -1).reshape(-1, 3)
    b.spheres(grid * 0.011 + 0.0055, 0.005)
    sim = b.build()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        p = sim.positions
        times.append(time.perf_counter() - start)
    assert p.shape == (side**3, 3)
    return {"spheres": side**3, "min_ms": 1e3 * min(times), "median_ms": 1e3 * float(np.median(times))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rust-loop", default="target/release/examples/step_loop")
    parser.add_argument("--particles", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--out", default="target/py-bench")
    args = parser.parse_args()
    load_before = os.getloadavg()
    rust, python = [], []
    for _ in range(args.reps):  # interleaved
        rust.append(rust_run(args.rust_loop, args.particles, args.steps))
        python.append(python_run(args.particles, args.steps))
    read = read_positions(1_000_000, 20)
    result = {
        "particles": args.particles,
        "steps": args.steps,
        "rust_s_per_step": rust,
        "python_s_per_step": python,
        "ratio_of_minima": min(python) / min(rust),
        "positions_read": read,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "cores": os.cpu_count(),
    }
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
