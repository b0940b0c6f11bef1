"""A machine driven from Python: a paddle on a hinge in a bed of spheres,
swung back and forth by a controller that sets the hinge's target speed
every step from the paddle's angle; the drive torque is recorded and
plotted.

    python crates/ndem-py/examples/paddle_controller.py --out target/py-examples
    python crates/ndem-py/examples/paddle_controller.py --quick   # CI's size

The controller is bang-bang: +omega until the paddle reaches +amplitude,
then -omega until -amplitude. The torque the drive needs (at most
`MAX_TORQUE`) is the bed's resistance to the paddle."""

from __future__ import annotations

import argparse
import json
import pathlib

import numpy as np
from _figure import figure

import ndem

RADIUS = 0.005
OMEGA = 1.5  # paddle speed [rad/s]
AMPLITUDE = np.radians(40.0)
MAX_TORQUE = 50.0  # [N m]


def bed(particles: int, half_width: float, seed: int) -> tuple[ndem.Simulation, int, int]:
    """Spheres settled in a box of `half_width` around a hinged paddle."""
    b = ndem.SceneBuilder("paddle-bed")
    b.material(friction=0.5)
    floor = b.plane()
    for normal in ([1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0]):
        b.plane(point=[-half_width * n for n in normal], normal=normal)
    # the paddle: a vertical plate from just above the floor to above the
    # bed, turning about the vertical axis through the box's centre
    side = int(np.floor(2 * (half_width - RADIUS) / (2.2 * RADIUS)))
    layers = int(np.ceil(particles / (0.8 * side**2)))
    top = layers * 2.2 * RADIUS + 2 * RADIUS
    half = [0.8 * half_width, 0.004, 0.5 * (top - RADIUS)]
    paddle = b.box([0.0, 0.0, RADIUS + half[2]], half, fixed=False)
    # a loose lattice of spheres with a little jitter, clear of the paddle
    rng = np.random.default_rng(seed)
    grid = np.stack(np.meshgrid(np.arange(side), np.arange(side), np.arange(2 * layers), indexing="ij"), -1)
    corner = np.array([-half_width + 1.2 * RADIUS, -half_width + 1.2 * RADIUS, 1.2 * RADIUS])
    positions = grid.reshape(-1, 3) * 2.2 * RADIUS + corner
    clear = (np.abs(positions[:, 0]) > half[0] + 1.2 * RADIUS) | (np.abs(positions[:, 1]) > half[1] + 1.2 * RADIUS)
    positions = positions[clear][:particles]
    positions[:, :2] += rng.uniform(-0.05, 0.05, (len(positions), 2)) * RADIUS
    b.spheres(positions, RADIUS)
    joint = b.hinge(floor, paddle, [0.0, 0.0, RADIUS], [0.0, 0.0, 1.0], speed=0.0, max_force=MAX_TORQUE)
    return b.build(iterations=60), paddle, joint


def angle_about_z(quaternion_xyzw: np.ndarray) -> float:
    x, y, z, w = quaternion_xyzw
    return float(np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI's size: 400 spheres, 1 s of swinging")
    parser.add_argument("--out", default="target/py-examples")
    args = parser.parse_args()
    particles, half_width, settle, swing = (400, 0.05, 0.5, 1.0) if args.quick else (3000, 0.1, 1.0, 6.0)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    sim, paddle, joint = bed(particles, half_width, seed=2)
    sim.run(time=settle)  # the bed settles around the held paddle
    direction = 1.0
    times, angles, torques = [], [], []
    for _ in range(int(round(swing / sim.dt))):
        angle = angle_about_z(sim.orientations[paddle])
        if angle > AMPLITUDE:
            direction = -1.0
        elif angle < -AMPLITUDE:
            direction = 1.0
        sim.set_drive(joint, speed=direction * OMEGA, max_force=MAX_TORQUE)
        sim.step()
        times.append(sim.time)
        angles.append(angle)
        torques.append(float(sim.joint_reactions()["drive_force"][joint]))
    torques_abs = np.abs(torques)
    print(f"{particles} spheres, {len(times)} controlled steps: drive torque mean {torques_abs.mean():.3f} N m, "
          f"peak {torques_abs.max():.3f} N m (limit {MAX_TORQUE})")
    (out / "paddle_controller.json").write_text(
        json.dumps({"time": times, "angle_rad": angles, "drive_torque": torques})
    )
    with figure(out / "paddle_controller.png", rows=2, size=(6, 4)) as (a1, a2):
        a1.plot(times, np.degrees(angles))
        a1.set_ylabel("paddle angle [deg]")
        a2.plot(times, torques)
        a2.set_ylabel("drive torque [N m]")
        a2.set_xlabel("time [s]")


if __name__ == "__main__":
    main()
