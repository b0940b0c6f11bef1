"""State, contacts and statistics have the documented shapes and dtypes."""

from __future__ import annotations

import numpy as np

import ndem


def test_state_arrays_have_the_documented_shapes_and_dtypes():
    sim = ndem.Simulation.builtin("packing", 200)
    sim.run(steps=5, progress=False)
    n = len(sim)
    expected = {
        "positions": ((n, 3), np.float64),
        "velocities": ((n, 3), np.float64),
        "angular_velocities": ((n, 3), np.float64),
        "orientations": ((n, 4), np.float64),
        "radii": ((n,), np.float64),
        "masses": ((n,), np.float64),
        "dynamic": ((n,), np.bool_),
        "aggregate_ids": ((n,), np.int64),
    }
    for name, (shape, dtype) in expected.items():
        a = getattr(sim, name)
        assert a.shape == shape and a.dtype == dtype, name
    dynamic = sim.dynamic
    assert dynamic.sum() == 200
    assert np.all(np.isfinite(sim.radii[dynamic])) and np.all(sim.radii[dynamic] > 0)
    assert np.all(np.isinf(sim.masses[~dynamic]))
    assert np.allclose(np.linalg.norm(sim.orientations, axis=1), 1.0, rtol=0, atol=1e-12)
    assert np.all(sim.aggregate_ids == -1)


def test_arrays_are_copies_the_step_does_not_change():
    sim = ndem.Simulation.builtin("column")
    before = sim.positions
    kept = before.copy()
    sim.run(steps=20, progress=False)
    assert np.array_equal(before, kept)
    assert not np.array_equal(sim.positions, kept)


def test_contacts_have_the_documented_shapes_and_balance_the_weight():
    sim = ndem.Simulation.builtin("column")
    sim.run(steps=200, progress=False)
    c = sim.contacts()
    m = len(c["body_a"])
    assert m == 25
    for key, shape, dtype in [
        ("body_a", (m,), np.int64),
        ("body_b", (m,), np.int64),
        ("point", (m, 3), np.float64),
        ("normal", (m, 3), np.float64),
        ("normal_force", (m,), np.float64),
        ("tangential_force", (m, 3), np.float64),
        ("overlap", (m,), np.float64),
    ]:
        assert c[key].shape == shape and c[key].dtype == dtype, key
    # the floor (body 0) carries the column's weight at rest; after 200
    # steps the balance is met to 1.0e-7 (relative), the tolerance is 10x
    weight = np.sum(sim.masses[sim.dynamic]) * 9.81
    on_floor = (c["body_a"] == 0) | (c["body_b"] == 0)
    assert np.isclose(c["normal_force"][on_floor].sum(), weight, rtol=1e-6)


def test_held_contacts_of_a_merged_column_carry_the_spheres_above():
    # the column merges once it rests (start_time 1 s) into one aggregate:
    # its floor contact stays in the solve, the 24 contacts between its
    # spheres are held with the impulses they had when last solved, the
    # k-th from the top carrying k spheres (measured to 1.5e-7 relative;
    # the tolerance is 10x). Merged from the first step (reduce=True) it
    # would hold the first steps' impulses, before the column is loaded.
    sim = ndem.Simulation.builtin("column", reduce={"start_time": 1.0})
    sim.run(steps=400, progress=False)
    assert np.all(sim.aggregate_ids[sim.dynamic] >= 0)
    solved, held = sim.contacts(), sim.held_contacts()
    assert set(held) == set(solved)
    assert len(solved["body_a"]) == 1 and len(held["body_a"]) == 24
    weight = sim.masses[sim.dynamic][0] * 9.81
    carried = np.sort(held["normal_force"]) / weight
    assert np.allclose(carried, np.arange(1, 25), rtol=1.5e-6, atol=0)
    # the aggregate's floor contact, solved every step: 6.7e-16
    assert np.isclose(solved["normal_force"][0], 25 * weight, rtol=1e-14, atol=0)
    assert len(ndem.Simulation.builtin("column").held_contacts()["body_a"]) == 0


def test_statistics_are_columns_of_one_length_with_numeric_dtypes():
    sim = ndem.Simulation.builtin("column")
    last = sim.run(steps=7, progress=False)
    assert set(last) == set(ndem.stats_columns())
    for name, column in last.items():
        assert len(column) == 7, name
        if name in ("status", "impact_status"):
            assert column.dtype.kind == "U"
        else:
            assert column.dtype in (np.int64, np.float64), name
    assert list(last["step"]) == list(range(1, 8))
    row = sim.step()
    assert row["step"] == 8 and isinstance(row["status"], str)
    assert len(sim.stats["step"]) == 8
    sim.record_stats = False
    sim.step()
    assert len(sim.stats["step"]) == 8
    sim.clear_stats()
    assert len(sim.stats["step"]) == 0 and sim.stats["contacts"].dtype == np.int64
