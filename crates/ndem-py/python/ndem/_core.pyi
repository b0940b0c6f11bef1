"""Type hints of the compiled core ``ndem._core`` (re-exported by ``ndem``)."""

from __future__ import annotations

from os import PathLike
from typing import Literal, Optional, Sequence, TypedDict, Union

from typing_extensions import Unpack

import numpy as np
import numpy.typing as npt

__version__: str

SolverName = Literal["pgs", "pgs-blocked", "pgs-direct", "jacobi", "apgd", "pgs-coloured", "pgs-direct-coloured"]
WarmStartName = Literal["cold", "history", "model", "model-raw", "safeguarded-history"]
LocalSolverName = Literal["portfolio", "gauss-seidel", "newton", "apgd", "proximal"]
Path = Union[str, PathLike[str]]
Vec3 = Sequence[float]
F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

class RunSettings(TypedDict, total=False):
    """The run settings, keyword arguments of every constructor."""

    solver: Optional[SolverName]
    iterations: Optional[int]
    warm_start: Optional[WarmStartName]
    threads: Optional[int]
    reduce: Union[bool, dict[str, object]]
    impact_iterations: Optional[int]
    impact_join_velocity: Optional[float]
    reach_growth: Optional[bool]
    dt: Optional[float]

class SimulationError(RuntimeError):
    """A step failed (blow-up, overlap beyond the contact's radius, energy
    growth); the state is that of the last completed step."""

class Contacts(TypedDict):
    body_a: I64
    body_b: I64
    point: F64
    normal: F64
    normal_force: F64
    tangential_force: F64
    overlap: F64

class JointReactions(TypedDict):
    force: F64
    torque: F64
    drive_force: F64

class SolveInfo(TypedDict):
    solver: str
    status: str
    converged: bool
    iterations: int
    merit: float
    initial_merit: float

class Simulation:
    """A scene and its stepper: step it, read its state into numpy arrays,
    write frames and checkpoints. Run settings (keyword arguments of the
    constructors): solver, iterations, warm_start, threads, reduce,
    impact_iterations, impact_join_velocity, reach_growth, dt."""

    @staticmethod
    def builtin(name: str, particles: Optional[int] = None, **settings: Unpack[RunSettings]) -> Simulation: ...
    @staticmethod
    def from_file(path: Path, **settings: Unpack[RunSettings]) -> Simulation: ...
    @staticmethod
    def from_toml(text: str, **settings: Unpack[RunSettings]) -> Simulation: ...
    @staticmethod
    def resume(path: Path) -> Simulation: ...
    def to_toml(self) -> str: ...
    def step(self) -> dict[str, Union[int, float, str]]: ...
    def run(
        self, steps: Optional[int] = None, *, time: Optional[float] = None, progress: Optional[bool] = None
    ) -> dict[str, np.ndarray]: ...
    @property
    def stats(self) -> dict[str, np.ndarray]: ...
    record_stats: bool
    def clear_stats(self) -> None: ...
    def checkpoint(self, path: Path) -> None: ...
    def open_frames(self, dir: Path, every: int = 1) -> None: ...
    def close_frames(self) -> None: ...
    positions: F64
    velocities: F64
    angular_velocities: F64
    @property
    def orientations(self) -> F64: ...
    @property
    def radii(self) -> F64: ...
    @property
    def masses(self) -> F64: ...
    @property
    def dynamic(self) -> npt.NDArray[np.bool_]: ...
    @property
    def aggregate_ids(self) -> I64: ...
    @property
    def kinetic_energy(self) -> float: ...
    @property
    def potential_energy(self) -> float: ...
    def contacts(self) -> Contacts: ...
    def held_contacts(self) -> Contacts: ...
    def network_forces(self, method: Literal["compatible", "pgs", "apgd"] = "compatible") -> dict[str, object]: ...
    def joint_reactions(self) -> JointReactions: ...
    def set_drive(
        self, joint: int, *, speed: Optional[float] = None, position: Optional[float] = None, max_force: float = ...
    ) -> None: ...
    def apply_force(self, body: int, force: Vec3, torque: Vec3 = (0.0, 0.0, 0.0)) -> None: ...
    @property
    def name(self) -> str: ...
    @property
    def time(self) -> float: ...
    @property
    def step_count(self) -> int: ...
    @property
    def dt(self) -> float: ...
    @property
    def duration(self) -> float: ...
    @property
    def settings(self) -> dict[str, Union[int, float, str, bool]]: ...
    def __len__(self) -> int: ...

class SceneBuilder:
    """Builds a scene body by body; ``build()`` makes a Simulation of it."""

    def __init__(self, name: str = "custom", *, gravity: Vec3 = (0.0, 0.0, -9.81), duration: float = 1.0) -> None: ...
    def material(
        self,
        *,
        density: Optional[float] = None,
        youngs_modulus: Optional[float] = None,
        poisson_ratio: Optional[float] = None,
        restitution: Optional[float] = None,
        friction: Optional[float] = None,
        rolling_resistance: Optional[float] = None,
        damping: Optional[float] = None,
        linear_stiffness: Optional[float] = None,
    ) -> int: ...
    def spheres(
        self,
        positions: npt.ArrayLike,
        radii: Union[float, npt.ArrayLike],
        *,
        material: int = 0,
        velocities: Optional[npt.ArrayLike] = None,
    ) -> I64: ...
    def plane(self, *, point: Vec3 = (0.0, 0.0, 0.0), normal: Vec3 = (0.0, 0.0, 1.0), material: int = 0) -> int: ...
    def box(
        self,
        center: Vec3,
        half_extents: Vec3,
        *,
        material: int = 0,
        fixed: bool = True,
        orientation: Optional[Sequence[float]] = None,
    ) -> int: ...
    def cylinder(
        self,
        center: Vec3,
        radius: float,
        half_height: float,
        *,
        material: int = 0,
        fixed: bool = True,
        orientation: Optional[Sequence[float]] = None,
    ) -> int: ...
    def mesh(
        self,
        vertices: npt.ArrayLike,
        indices: npt.ArrayLike,
        *,
        position: Vec3 = (0.0, 0.0, 0.0),
        material: int = 0,
        fixed: bool = True,
        orientation: Optional[Sequence[float]] = None,
    ) -> int: ...
    def hinge(
        self,
        a: int,
        b: int,
        anchor: Vec3,
        axis: Vec3,
        *,
        speed: Optional[float] = None,
        position: Optional[float] = None,
        max_force: float = ...,
    ) -> int: ...
    def prismatic(
        self, a: int, b: int, anchor: Vec3, axis: Vec3, *, speed: Optional[float] = None, max_force: float = ...
    ) -> int: ...
    def lock(self, a: int, b: int, anchor: Vec3) -> int: ...
    def ball(self, a: int, b: int, anchor: Vec3) -> int: ...
    def emitter(
        self,
        center: Vec3,
        particle_radius: tuple[float, float],
        rate: float,
        total: int,
        *,
        radius: float = 0.0,
        rectangle: Optional[tuple[float, float]] = None,
        bidisperse_fraction: float = 0.0,
        material: int = 0,
        velocity: Vec3 = (0.0, 0.0, 0.0),
        seed: int = 0,
    ) -> int: ...
    def build(self, **settings: Unpack[RunSettings]) -> Simulation: ...
    def __len__(self) -> int: ...

def solve(
    w: object,
    q: npt.ArrayLike,
    mu: npt.ArrayLike,
    *,
    solver: LocalSolverName = "portfolio",
    max_iterations: Optional[int] = None,
    tolerance: Optional[float] = None,
    r0: Optional[npt.ArrayLike] = None,
) -> tuple[F64, SolveInfo]: ...
def read_fclib(path: Path) -> tuple[object, F64, F64]: ...
def builtin_scenes() -> list[tuple[str, str]]: ...
def stats_columns() -> list[str]: ...
