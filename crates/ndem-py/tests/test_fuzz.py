"""A small fuzz of arguments: whatever is passed, the bindings answer
with a Python exception or a result, never a Rust panic
(`pyo3_runtime.PanicException`, a BaseException that `except Exception`
does not catch), and never let a non-finite value into the state."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

import ndem

VALUES = [
    None, 0, 1, -1, 7, 2**40, -(2**63), 0.0, -0.5, 1e-300, 1e300, math.nan, math.inf, -math.inf,
    "", "pgs", "x" * 100, [], [1.0], [0.0, 0.0, 0.0], [math.nan, 0.0, 0.0], [1.0, 2.0, 3.0, 4.0],
    (0.01, 0.02), (0.02, 0.01), np.zeros(0), np.zeros((0, 3)), np.ones((2, 3)), np.full((3, 3), np.nan),
    np.ones((4, 4)), np.array([[0, 1, 2]]), np.array([[0, 1, 9]]), np.ones(3), {"a": 1}, True,
]


def draw(rng: random.Random, n: int) -> list:
    return [rng.choice(VALUES) for _ in range(n)]


def builder_calls(b):
    return [
        (b.material, 0, ["density", "friction", "restitution", "poisson_ratio", "youngs_modulus"]),
        (b.spheres, 2, ["material", "velocities"]),
        (b.plane, 0, ["point", "normal", "material"]),
        (b.box, 2, ["material", "fixed", "orientation"]),
        (b.cylinder, 3, ["material", "orientation"]),
        (b.mesh, 2, ["position", "material"]),
        (b.hinge, 4, ["speed", "position", "max_force"]),
        (b.prismatic, 4, ["speed", "max_force"]),
        (b.lock, 3, []),
        (b.ball, 3, []),
        (b.emitter, 4, ["radius", "rectangle", "bidisperse_fraction", "material", "velocity", "seed"]),
    ]


# `run` is fuzzed with counts and times a test can wait for (1e300 s is a
# legitimate, endless request)
RUN_STEPS = [None, 0, 1, 3, -1, math.nan, "x", 2.5, [1]]
RUN_TIMES = [None, 0.0, 0.01, -1.0, math.nan, math.inf, "x"]
rng_for_run = random.Random(11)


def bounded_run(s, rng):
    kwargs = {"progress": rng.choice([None, False, True, "x"])}
    steps, time = rng.choice(RUN_STEPS), rng.choice(RUN_TIMES)
    if time is not None:
        kwargs["time"] = time
    s.run(steps, **kwargs)


def simulation_calls(s):
    return [
        (s.apply_force, 3, []),
        (s.set_drive, 1, ["speed", "position", "max_force"]),
        (lambda: bounded_run(s, rng_for_run), 0, []),
        (lambda v: setattr(s, "positions", v), 1, []),
        (lambda v: setattr(s, "velocities", v), 1, []),
        (lambda v: setattr(s, "angular_velocities", v), 1, []),
        (lambda v: setattr(s, "record_stats", v), 1, []),
        (s.open_frames, 2, []),
    ]


def call(rng, fn, positional, keywords):
    args = draw(rng, positional)
    kwargs = {k: rng.choice(VALUES) for k in keywords if rng.random() < 0.3}
    try:
        fn(*args, **kwargs)
    except Exception:  # a panic is a BaseException and fails the test
        pass


# numpy warns when the fuzz casts NaN floats to mesh indices
@pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")
def test_no_argument_makes_the_bindings_panic_or_admit_nan(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # open_frames may create folders
    rng = random.Random(20261205)
    for _ in range(300):
        b = ndem.SceneBuilder("fuzz")
        b.material()
        b.plane()
        b.spheres(np.array([[0.0, 0.0, 0.05], [0.0, 0.0, 0.2]]), 0.04)
        for _ in range(3):
            call(rng, *rng.choice(builder_calls(b)))
        try:
            s = b.build(iterations=rng.choice([None, 5, 0, -1, "x"]))
        except Exception:
            continue
        for _ in range(3):
            call(rng, *rng.choice(simulation_calls(s)))
        for name in ["positions", "velocities", "angular_velocities"]:
            assert np.all(np.isfinite(getattr(s, name))), name
        s.close_frames()
    for _ in range(200):
        try:
            ndem.solve(*draw(rng, 3), solver=rng.choice(["newton", "portfolio", 3]))
        except Exception:
            pass
