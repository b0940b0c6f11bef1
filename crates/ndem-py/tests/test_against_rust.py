"""The Python results are the Rust ones, bit for bit: the same built-in
scene stepped by the `ndem` command and by the bindings ends in the same
state (checkpoints carry floats exactly), and the statistics are the
command's `stats.csv` columns with the same values."""

from __future__ import annotations

import csv
import subprocess

import numpy as np
import pytest

import ndem

SCENES = [("column", None, 40), ("packing", 300, 30)]


@pytest.mark.parametrize("name,particles,steps", SCENES)
def test_state_after_n_steps_equals_the_commands(tmp_path, ndem_cli, name, particles, steps):
    out = tmp_path / "run"
    cmd = ndem_cli + ["run", name, "--steps", str(steps), "--checkpoint-every", str(steps), "--out", str(out)]
    if particles is not None:
        cmd += ["--particles", str(particles)]
    subprocess.run(cmd, check=True, capture_output=True)
    rust = ndem.Simulation.resume(str(out / f"checkpoint_{steps:08d}.json"))

    sim = ndem.Simulation.builtin(name, particles)
    sim.run(steps=steps, progress=False)

    assert sim.step_count == rust.step_count == steps
    assert sim.time == rust.time
    for field in ["positions", "velocities", "angular_velocities", "orientations"]:
        a, b = getattr(sim, field), getattr(rust, field)
        assert np.array_equal(a, b), f"{field} differ by up to {np.abs(a - b).max()}"

    with open(out / "stats.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    stats = sim.stats
    assert list(stats.keys()) == list(rows[0].keys()) == ndem.stats_columns()
    for column in ["contacts", "iterations", "kinetic_energy", "potential_energy", "residual_max", "overlap_max"]:
        expected = np.array([float(r[column]) for r in rows])
        assert np.array_equal(stats[column].astype(float), expected), column
    assert list(stats["status"]) == [r["status"] for r in rows]


@pytest.mark.parametrize("name", ["cp.json", "cp.ckpt"])
def test_a_resumed_simulation_continues_the_same_trajectory(tmp_path, name):
    whole = ndem.Simulation.builtin("packing", 200)
    whole.run(steps=30, progress=False)

    first = ndem.Simulation.builtin("packing", 200)
    first.run(steps=12, progress=False)
    first.checkpoint(str(tmp_path / name))
    second = ndem.Simulation.resume(str(tmp_path / name))
    second.run(steps=18, progress=False)
    assert np.array_equal(second.positions, whole.positions)
    assert np.array_equal(second.velocities, whole.velocities)
