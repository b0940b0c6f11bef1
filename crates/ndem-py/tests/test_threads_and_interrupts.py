"""Stepping releases the GIL, and Ctrl-C (KeyboardInterrupt) stops a run
between steps with the state consistent."""

from __future__ import annotations

import _thread
import signal
import threading

import numpy as np
import pytest

import ndem


def test_another_python_thread_runs_while_stepping():
    sim = ndem.Simulation.builtin("packing", 400)
    done = threading.Event()
    seen = set()

    def work():
        sim.run(steps=40, progress=False)
        done.set()

    worker = threading.Thread(target=work)
    worker.start()
    while not done.is_set():
        seen.add(sim.step_count)
    worker.join()
    assert sim.step_count == 40
    # with the GIL held through the run this thread could not run between
    # its first and its last step, and would see 0 and 40 only
    assert len(seen - {0, 40}) >= 2, sorted(seen)


def test_reading_state_from_another_thread_waits_for_the_step():
    sim = ndem.Simulation.builtin("packing", 300)
    seen = []

    def reader():
        for _ in range(20):
            p = sim.positions
            seen.append(bool(np.all(np.isfinite(p))))

    t = threading.Thread(target=reader)
    t.start()
    sim.run(steps=20, progress=False)
    t.join()
    assert all(seen) and len(seen) == 20


@pytest.fixture
def python_handles_sigint():
    """Python's own SIGINT handler for the test: a process started in the
    background by a non-interactive shell inherits SIGINT ignored, Python
    then installs no handler, and `interrupt_main` does nothing."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_keyboard_interrupt_stops_between_steps_and_the_run_can_go_on(python_handles_sigint):
    total = 400
    reference = ndem.Simulation.builtin("packing", 200)
    reference.run(steps=total, progress=False)

    sim = ndem.Simulation.builtin("packing", 200)
    timer = threading.Timer(0.05, _thread.interrupt_main)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        sim.run(steps=100_000, progress=False)
    timer.join()
    done = sim.step_count
    assert 0 < done < 100_000
    # every finished step is recorded, the state is that of the last one
    assert len(sim.stats["step"]) == done
    assert sim.stats["step"][-1] == done
    assert np.all(np.isfinite(sim.positions))
    if done < total:
        sim.run(steps=total - done, progress=False)
        assert np.array_equal(sim.positions, reference.positions)
