"""Every setter and constructor refuses bad input with a Python exception
naming the field; nothing panics."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ndem


@pytest.fixture
def sim():
    return ndem.Simulation.builtin("column")


@pytest.mark.parametrize(
    "field,value,named",
    [
        ("positions", np.zeros((3, 3)), "positions"),
        ("positions", np.zeros((26, 2)), "positions"),
        ("positions", np.full((26, 3), np.nan), "positions"),
        ("velocities", np.full((26, 3), np.inf), "velocities"),
        ("velocities", np.zeros((25, 3)), "velocities"),
        ("angular_velocities", np.zeros((26, 4)), "angular_velocities"),
    ],
)
def test_state_setters_refuse_bad_arrays(sim, field, value, named):
    before = sim.positions
    with pytest.raises(ValueError, match=named):
        setattr(sim, field, value)
    assert np.array_equal(sim.positions, before)


def test_state_setters_take_good_arrays(sim):
    p = sim.positions
    p[1:, 0] += 1e-3
    sim.positions = p
    assert np.array_equal(sim.positions, p)
    v = np.zeros((len(sim), 3))
    v[sim.dynamic, 2] = -0.1
    sim.velocities = v
    assert np.array_equal(sim.velocities[sim.dynamic], v[sim.dynamic])


@pytest.mark.parametrize(
    "kwargs,named",
    [
        ({"solver": "nope"}, "solver"),
        ({"warm_start": "warm"}, "warm_start"),
        ({"iterations": 0}, "iterations"),
        ({"impact_iterations": 0}, "impact_iterations"),
        ({"impact_join_velocity": -1.0}, "impact_join_velocity"),
        ({"dt": 0.0}, "dt"),
        ({"dt": math.nan}, "dt"),
        ({"reduce": {"merge": {"tangentail": 1e-3}}}, "tangentail"),
        ({"reduce": {"merge": {"tangential": -1.0}}}, "reduction.merge.tangential"),
        ({"reduce": {"min_aggregate_size": "two"}}, "min_aggregate_size"),
    ],
)
def test_run_settings_refuse_bad_values(kwargs, named):
    with pytest.raises(ValueError, match=named):
        ndem.Simulation.builtin("column", **kwargs)


def test_run_settings_refuse_unknown_keywords_and_wrong_types():
    with pytest.raises(TypeError, match="iteration"):
        ndem.Simulation.builtin("column", iteration=10)
    with pytest.raises(TypeError, match="iterations"):
        ndem.Simulation.builtin("column", iterations="many")
    with pytest.raises(ValueError, match="scene"):
        ndem.Simulation.builtin("no-such-scene")


def test_methods_refuse_bad_arguments(sim):
    with pytest.raises(ValueError, match="body"):
        sim.apply_force(1000, [0, 0, 1])
    with pytest.raises(ValueError, match="force"):
        sim.apply_force(1, [0, 0, math.nan])
    with pytest.raises(ValueError, match="joint"):
        sim.set_drive(0, speed=1.0)
    with pytest.raises(ValueError, match="time"):
        sim.run(time=-1.0)
    with pytest.raises(ValueError, match="time"):
        sim.run(steps=1, time=1.0)
    with pytest.raises(ValueError, match="shorter than half a step"):
        sim.run(time=1e-9)
    with pytest.raises(ValueError, match="every"):
        sim.open_frames("unused", every=0)
    with pytest.raises(OSError):
        ndem.Simulation.resume("/nonexistent/checkpoint.json")
    with pytest.raises(ValueError, match="scene"):
        ndem.Simulation.from_toml("this is not a scene")


@pytest.mark.parametrize(
    "call,named",
    [
        (lambda b: b.material(friction=-0.1), "friction"),
        (lambda b: b.material(density=0.0), "density"),
        (lambda b: b.spheres(np.zeros((2, 3)), -1.0), "radius"),
        (lambda b: b.spheres(np.zeros((2, 3)), np.array([0.1])), "radii"),
        (lambda b: b.spheres(np.zeros((2, 2)), 0.1), "positions"),
        (lambda b: b.spheres(np.zeros((1, 3)), 0.1, material=7), "material"),
        (lambda b: b.spheres(np.zeros((1, 3)), 0.1, velocities=np.full((1, 3), np.nan)), "velocities"),
        (lambda b: b.plane(normal=[0, 0, 0]), "normal"),
        (lambda b: b.box([0, 0, 0], [1, -1, 1]), "half_extents"),
        (lambda b: b.box([0, 0, 0], [1, 1, 1], orientation=[0, 0, 0, 0]), "orientation"),
        (lambda b: b.cylinder([0, 0, 0], 0.0, 1.0), "radius"),
        (lambda b: b.mesh(np.zeros((3, 3)), np.array([[0, 1, 5]])), "indices"),
        (lambda b: b.hinge(0, 99, [0, 0, 0], [0, 0, 1]), "b"),
        (lambda b: b.hinge(0, 1, [0, 0, 0], [0, 0, 0]), "axis"),
        (lambda b: b.emitter([0, 0, 1], (0.01, 0.005), 10.0, 5), "emitters"),
        (lambda b: b.emitter([0, 0, 1], (0.01, 0.01), 10.0, 5, bidisperse_fraction=2.0), "bidisperse"),
        (lambda b: b.emitter([0, 0, 1], (0.01, 0.01), 10.0, 5, material=3), "material"),
    ],
)
def test_builder_refuses_bad_input_naming_the_field(call, named):
    b = ndem.SceneBuilder("bad")
    b.material()
    b.plane()
    b.spheres(np.array([[0.0, 0.0, 0.1]]), 0.05)
    with pytest.raises(ValueError, match=named):
        call(b)


def test_builder_refuses_a_scene_without_anything_to_move():
    b = ndem.SceneBuilder("empty")
    b.material()
    b.plane()
    with pytest.raises(ValueError, match="dynamic"):
        b.build()
    with pytest.raises(ValueError, match="duration"):
        ndem.SceneBuilder("x", duration=-1.0)
    with pytest.raises(ValueError, match="gravity"):
        ndem.SceneBuilder("x", gravity=[0, 0, math.inf])
