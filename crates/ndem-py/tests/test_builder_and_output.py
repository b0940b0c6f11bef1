"""Scenes built from Python behave as the physics says, and frames,
checkpoints and scene files round-trip."""

from __future__ import annotations

import numpy as np
import pytest

import ndem

GLASS = dict(youngs_modulus=6e6, poisson_ratio=0.3)


def test_a_sphere_at_rest_on_a_plane_sits_at_the_hertz_overlap():
    b = ndem.SceneBuilder("rest")
    b.material(**GLASS)
    b.plane()
    r = 0.01
    (ball,) = b.spheres(np.array([[0.0, 0.0, r + 1e-4]]), r)
    sim = b.build(iterations=100)
    sim.run(steps=2000, progress=False)
    m = sim.masses[ball]
    e_star = GLASS["youngs_modulus"] / (2 * (1 - GLASS["poisson_ratio"] ** 2))
    # Hertz, sphere on plane: m g = 4/3 E* sqrt(R) delta^(3/2)
    delta = (m * 9.81 / (4 / 3 * e_star * np.sqrt(r))) ** (2 / 3)
    overlap = r - sim.positions[ball, 2]
    # met to 2e-14 relative at rest; 1e-12 leaves room for rounding
    assert abs(overlap / delta - 1) < 1e-12
    assert np.allclose(sim.velocities[ball], 0, atol=1e-12)


def test_a_driven_hinge_turns_its_body_at_the_target_speed_and_holds_its_weight():
    b = ndem.SceneBuilder("paddle")
    b.material(density=1000.0)
    base = b.plane()
    paddle = b.box([0, 0, 0.5], [0.1, 0.02, 0.05], fixed=False)
    j = b.hinge(base, paddle, [0, 0, 0.5], [0, 0, 1], speed=2.0, max_force=100.0)
    sim = b.build()
    sim.run(steps=50, progress=False)
    assert np.allclose(sim.angular_velocities[paddle], [0, 0, 2.0], atol=1e-9)
    weight = sim.masses[paddle] * 9.81
    reaction = sim.joint_reactions()
    assert reaction["force"].shape == (1, 3)
    assert np.isclose(abs(reaction["force"][j, 2]), weight, rtol=1e-9)
    # unloaded about its axis: the drive exerts no torque
    assert abs(reaction["drive_force"][j]) < 1e-9
    sim.set_drive(j)  # undriven from now on
    sim.run(steps=1, progress=False)
    assert np.isnan(sim.joint_reactions()["drive_force"][j])


def test_an_emitter_emits_its_total_and_a_mesh_floor_carries_spheres():
    b = ndem.SceneBuilder("pour")
    b.material()
    vertices = np.array([[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0]], dtype=float)
    b.mesh(vertices, np.array([[0, 1, 2], [0, 2, 3]]))
    b.emitter([0, 0, 0.2], (0.005, 0.005), 200.0, 30, radius=0.03, velocity=[0, 0, -0.5], seed=3)
    sim = b.build()
    sim.run(time=1.0, progress=False)
    dyn = sim.dynamic
    assert dyn.sum() == 30
    assert np.all(sim.positions[dyn, 2] > 0.004)
    assert np.all(np.isclose(sim.radii[dyn], 0.005))


def test_frames_are_written_while_the_block_runs(tmp_path):
    sim = ndem.Simulation.builtin("column")
    out = tmp_path / "frames"
    with ndem.frames(sim, str(out), every=5):
        sim.run(steps=12, progress=False)
    particles = sorted(p.name for p in (out / "frames").glob("particles_*.vtp"))
    assert particles == [f"particles_{k:08d}.vtp" for k in (0, 5, 10, 12)]
    assert (out / "particles.pvd").exists() and (out / "contacts.pvd").exists()
    sim.run(steps=5, progress=False)  # closed: no more frames
    assert len(list((out / "frames").glob("particles_*.vtp"))) == 4


def test_a_scene_written_as_toml_reads_back_to_the_same_trajectory():
    sim = ndem.Simulation.builtin("column")
    text = sim.to_toml()
    again = ndem.Simulation.from_toml(text)
    sim.run(steps=30, progress=False)
    again.run(steps=30, progress=False)
    assert np.array_equal(sim.positions, again.positions)


def test_reduction_settings_given_as_a_dict_merge_the_resting_packing():
    # a [reduction] table as a dict: Table 2 with merging from t = 0.2 s
    sim = ndem.Simulation.builtin("packing", 200, reduce={"start_time": 0.2})
    assert sim.settings["reduce"]
    stats = sim.run(progress=False)
    assert np.all(stats["aggregates"][sim.stats["time"] < 0.2] == 0)
    assert stats["reduction_level"][-1] > 0.5
    ids = sim.aggregate_ids
    members = (ids >= 0) & ~np.isnan(sim.radii)
    assert members.sum() > 100
    # the members' aggregates are the live ones, each holding spheres
    assert len(set(ids[members])) == stats["aggregates"][-1]


def test_network_forces_of_a_column_at_rest_carry_its_weight():
    sim = ndem.Simulation.builtin("column")
    sim.run(steps=200, progress=False)
    weight = np.sum(sim.masses[sim.dynamic]) * 9.81

    def on_floor(f):
        return f["normal_force"][(f["body_a"] == 0) | (f["body_b"] == 0)].sum()

    truss = sim.network_forces()  # compatible contact dynamics
    assert len(truss["body_a"]) == 25 and truss["normal"].shape == (25, 3)
    # met to 7.6e-9 relative; the tolerance is 10x that
    assert abs(on_floor(truss) / weight - 1) < 7.6e-8
    assert truss["residual"] is not None
    # one SPOOK step at rest from the current overlaps: PGS and APGD give
    # the same network (1.2e-8 of the weight apart here)
    pgs, apgd = sim.network_forces("pgs"), sim.network_forces("apgd")
    assert abs(on_floor(pgs) - on_floor(apgd)) < 1.2e-7 * weight
    assert pgs["residual"] is None
    with pytest.raises(ValueError, match="method"):
        sim.network_forces("lemke")


def test_reach_growth_is_a_run_setting_off_by_default():
    assert ndem.Simulation.builtin("column").settings["reach_growth"] is False
    sim = ndem.Simulation.builtin("column", reach_growth=True)
    assert sim.settings["reach_growth"] is True
    # a scene saved as a file keeps it
    again = ndem.Simulation.from_toml(sim.to_toml())
    assert again.settings["reach_growth"] is True
    with pytest.raises(TypeError, match="reach_growth"):
        ndem.Simulation.builtin("column", reach_growth="yes")
