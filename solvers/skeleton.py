"""The skeleton model: a tree of bones, effectors with their goals, and a solution as local rotations.

A `Skeleton` is what the solvers work on when several chains share bones (several
effectors on one tree); `solvers.skeleton_solve.solve_skeleton` solves it. Here: the data,
its forward kinematics (numpy; on plain floats in solvers.skeleton_floats), the effectors'
ranking (levels, weights) and `finish` (a solution measured on itself). Pins resolved and
effectors sharing a bone merged: solvers.skeleton_effectors.

Joint model (the same as `Chain`'s, see Chain._read_joints): bone i's world frame is
    F_i = F_parent(i) R_i L_i        (F_parent = `base_frame` for a root bone)
with R_i its rest orientation in its parent (`reference`) and L_i its local rotation (what
Blender's rotation channels hold). Its head is
    head_i = head_parent(i) + rotate(F_parent(i), offsets[i])   (a root: head_i = offsets[i])
and its end point (the tail, or the next head of a chain) is head_i + lengths[i] rotate(F_i, links[i]).
Limits and stiffness are `JointLimits` over all bones, unchanged in meaning.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from . import quat
from .limits import JointLimits
from .model.aim_axis import DEFAULT_SPREAD, NO_AIM, axis_vector, check_spread
from .model.chain import Chain, as_point, as_real, check_radii
from .skeleton_floats import end_point, forward, rows


@dataclass(frozen=True)
class Skeleton:
    parents: tuple[int, ...]  # parent index per bone, -1 for a root; a parent comes before its children
    offsets: np.ndarray  # (n, 3) head in the parent's frame (a root: in the skeleton's space)
    links: np.ndarray  # (n, 3) unit direction from head to end point, in the bone's own frame
    lengths: np.ndarray  # (n,) head to end point
    reference: np.ndarray  # (n, 4) rest orientation in the parent's frame
    base_frame: np.ndarray  # (4,) the frame root bones hang from
    limits: JointLimits | None = None
    # (n,) each bone's capsule radius for the Jacobian's mass weighting (solvers.common.mass);
    # None: DEFAULT_RADIUS_SHARE of its length
    radii: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.parents)
        for i, p in enumerate(self.parents):
            if not (p == -1 or 0 <= p < i):
                raise ValueError(f"bone {i}'s parent {p} must be -1 or an earlier bone")
        shapes = {"offsets": (n, 3), "links": (n, 3), "lengths": (n,), "reference": (n, 4), "base_frame": (4,)}
        for name, shape in shapes.items():
            value = getattr(self, name)
            # ndarray's own methods: a Solve builds a skeleton per call, numpy's wrappers cost more than the checks.
            got = value.shape if isinstance(value, np.ndarray) else np.shape(value)
            if got != shape or not np.isfinite(value).all():
                raise ValueError(f"{name} must be finite with shape {shape}, got {got}")
        if (np.asarray(self.lengths) <= 0.0).any():
            raise ValueError("every bone needs a positive length")
        if self.limits is not None and self.limits.n_bones != n:
            raise ValueError(f"limits must be JointLimits for {n} bones")
        if self.radii is not None:
            object.__setattr__(self, "radii", check_radii(self.radii, n))

    @classmethod
    def read(cls, parents, offsets, links, lengths, reference, base_frame, limits=None, radii=None) -> Skeleton:
        """A skeleton from arrays its caller built and checked as `__post_init__` would (a rig's
        reading, rig.tree: parents before children, float64 rows of the fields' shapes, finite,
        positive lengths, limits for these bones), without checking them again: on a few bones
        numpy's per-call cost of those checks was a third of a lone chain's reading."""
        skeleton = cls.__new__(cls)
        skeleton.__dict__.update(
            parents=parents, offsets=offsets, links=links, lengths=lengths, reference=reference,
            base_frame=base_frame, limits=limits, radii=radii,
        )  # fmt: skip
        return skeleton

    @classmethod
    def read_lazily(cls, parents, geometry: Callable[[], tuple], limits=None, radii=None) -> Skeleton:
        """`read(parents, *geometry(), limits)` with `geometry()` (offsets, links, lengths,
        reference, base_frame: numpy rows of numbers its caller read and checked) called on first
        use of any of them: a lone chain's solve takes the pose as read and needs none."""
        skeleton = cls.__new__(cls)
        skeleton.__dict__.update(parents=parents, limits=limits, radii=radii, _geometry=geometry)
        return skeleton

    def __getattr__(self, name: str):  # only for an attribute not set: `read_lazily`'s rows
        geometry = self.__dict__.get("_geometry")
        if geometry is None or name not in _GEOMETRY:
            raise AttributeError(f"'Skeleton' object has no attribute '{name}'")
        self.__dict__.update(zip(_GEOMETRY, geometry(), strict=True))
        del self.__dict__["_geometry"]
        return self.__dict__[name]

    @property
    def n_bones(self) -> int:
        return len(self.parents)

    @classmethod
    def from_chain(cls, chain: Chain) -> tuple[Skeleton, np.ndarray]:
        """(the chain as a one-branch skeleton, its input local rotations (n, 4)); needs frames."""
        if chain.frames is None:
            raise ValueError("a skeleton needs bone frames (Chain(..., frames=...))")
        n = chain.n_bones
        links = chain.link_local
        offsets = np.empty((n, 3))
        offsets[0] = chain.root
        offsets[1:] = chain.lengths[:-1, None] * links[:-1]
        parents = tuple(range(-1, n - 1))
        skeleton = cls(
            parents, offsets, links, chain.lengths.copy(), chain.reference, chain.base_frame, chain.limits, chain.radii
        )
        return skeleton, chain.input_locals

    @classmethod
    def from_bones(cls, parents, heads, tails, limits: JointLimits | None = None) -> tuple[Skeleton, np.ndarray]:
        """(a skeleton from rest heads and tails (n, 3) in its space, identity local rotations).
        Each bone's frame has Y along the bone (as Blender's), turned from the parent's Y by the
        smallest rotation; the rest pose is the input pose."""
        heads, tails = np.asarray(heads, dtype=float), np.asarray(tails, dtype=float)
        n = len(parents)
        if heads.shape != (n, 3) or tails.shape != (n, 3):
            raise ValueError(f"heads and tails must have shape ({n}, 3)")
        axis = tails - heads
        lengths = np.linalg.norm(axis, axis=1)
        if np.any(~(lengths > 0.0)):
            raise ValueError(f"bone {int(np.flatnonzero(~(lengths > 0.0))[0])} has zero length")
        world = np.empty((n, 4))
        offsets, reference = np.empty((n, 3)), np.empty((n, 4))
        base = np.array([1.0, 0.0, 0.0, 0.0])
        for i, p in enumerate(parents):
            parent = base if p == -1 else world[p]
            y = quat.rotate(parent, np.array([0.0, 1.0, 0.0]))
            fallback = quat.rotate(parent, np.array([1.0, 0.0, 0.0]))
            world[i] = quat.multiply(quat.swing(y, axis[i] / lengths[i], fallback), parent)
            reference[i] = quat.multiply(quat.conjugate(parent), world[i])
            offsets[i] = heads[i] if p == -1 else quat.rotate(quat.conjugate(parent), heads[i] - heads[p])
        links = np.tile([0.0, 1.0, 0.0], (n, 1))
        local = np.tile(base, (n, 1))
        return cls(tuple(parents), offsets, links, lengths, reference, base, limits), local

    def branch(self, bone: int) -> list[int]:
        """The bones from a root down to `bone`, root first."""
        path = [bone]
        while self.parents[path[-1]] != -1:
            path.append(self.parents[path[-1]])
        return path[::-1]

    def forward(self, local: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(world frames (n, 4), heads (n, 3), end points (n, 3)) for local rotations (n, 4)."""
        # Bone by bone on plain floats (solvers.skeleton_floats): numpy's per-call cost on one bone's
        # (4,) arrays made this ~50x slower, and every tree solve measures its errors here.
        frames, heads = map(np.array, forward(self, rows(local)))
        ends = heads + self.lengths[:, None] * quat.rotate(frames, self.links)
        return frames, heads, ends


_GEOMETRY = ("offsets", "links", "lengths", "reference", "base_frame")  # Skeleton.read_lazily's rows
_FLOAT = np.dtype(float)  # (a float64 array is its own as_point)


@dataclass(frozen=True, init=False)
class Effector:
    """A goal on one bone's end point: `position`, and optionally a `pole` (with `pole_angle`, as
    Blender's IK pole) and an `orientation` (w, x, y, z, the bone's wanted world frame) with its
    `rotation_weight`.

    Several effectors: `weight` ranks this effector against the others of its priority level
    (the weighted least-squares compromise when they conflict). `priority` 0 is the highest
    level; the Jacobian solves a lower level only in the nullspace of the higher ones, FABRIK,
    CCD and triangulation weigh each level LEVEL times the next (`ranked_weights`). A `pin`
    holds its bone where the input pose has it (position and orientation; a planted foot), as a
    level above every target whatever its priority (`level`): give no position, and
    `solve_skeleton` fills both in before the method runs (`resolve_pins`); one given its
    position holds that. Effectors on one bone are solved as one at their weighted mean
    (`merge_shared`).

    `softness` (soft IK, solvers.common.soft; a share of the reach in [0, 1), 0: exact): the
    position is brought in by Nicholas' formula once, where `solve_skeleton` (and
    `solve_skeleton_many`) read the goals (solvers.common.soft_goals): measured from the head of the
    skeleton's root bone above this bone (the group's root, which the effector's bones hang from)
    with the reach of that whole branch (`branch_reach`). A lone chain is a one-branch skeleton:
    the same as `solvers.solve`'s softness. Pins ignore it.

    `aim_axis` (one of model.aim_axis.AIM_AXES; '' or NO_AIM: reach) makes it an aim goal: the
    tip bone's axis (in its own frame) through its head must point at `position`; the turn is
    shared over the branch's bones with `aim_spread` (solvers.common.aim). Aims are solved after
    every reaching effector and pin, on the bones none of those depends on
    (solvers.common.aim_goals); an aim takes no pole, orientation, softness or pin, and its
    weight and priority do not apply."""

    bone: int
    position: np.ndarray | None = None
    pole: np.ndarray | None = None
    pole_angle: float = 0.0
    orientation: np.ndarray | None = None
    rotation_weight: float = 1.0
    weight: float = 1.0
    priority: int = 0
    pin: bool = False
    softness: float = 0.0
    aim_axis: str = ""
    aim_spread: float = DEFAULT_SPREAD

    def __init__(
        self,
        bone: int,
        position: np.ndarray | None = None,
        pole: np.ndarray | None = None,
        pole_angle: float = 0.0,
        orientation: np.ndarray | None = None,
        rotation_weight: float = 1.0,
        weight: float = 1.0,
        priority: int = 0,
        pin: bool = False,
        softness: float = 0.0,
        aim_axis: str = "",
        aim_spread: float = DEFAULT_SPREAD,
    ) -> None:
        # The dataclass's own __init__ with its fields stored straight into the instance's dict:
        # its frozen object.__setattr__ per field cost 2 µs an effector, and a Solve builds its
        # effectors per call (tests/solvers/test_skeleton.py checks it matches the fields).
        d = self.__dict__
        d["bone"], d["position"], d["pole"] = bone, position, pole
        d["pole_angle"], d["orientation"], d["rotation_weight"] = pole_angle, orientation, rotation_weight
        d["weight"], d["priority"], d["pin"] = weight, priority, pin
        d["softness"], d["aim_axis"], d["aim_spread"] = softness, aim_axis, aim_spread
        self.__post_init__()

    def __post_init__(self) -> None:
        # A position goal with the default options, as a Solve builds its effectors per call: its
        # checks on plain values (the general checks below cost microseconds an effector); any
        # other value takes them.
        position, weight, turn, priority = self.position, self.weight, self.rotation_weight, self.priority
        if (
            type(position) is np.ndarray
            and position.dtype == _FLOAT
            and position.shape == (3,)
            and self.pole is None
            and self.orientation is None
            and not self.aim_axis
            and self.aim_spread == DEFAULT_SPREAD
            and type(self.softness) is float
            and self.softness == 0.0
            and type(weight) is float
            and 0.0 < weight < math.inf
            and type(turn) is float
            and 0.0 <= turn <= 1.0
            and type(priority) is int
            and priority >= 0
        ):
            x, y, z = position.tolist()
            if math.isfinite(x) and math.isfinite(y) and math.isfinite(z):
                return  # (as_point keeps a float64 array as it is)
        self._check()

    def _check(self) -> None:
        """The effector's checks, every value converted as its field says (ValueError naming it)."""
        if self.aim_axis or self.aim_spread != DEFAULT_SPREAD:
            self._check_aim()
        if self.softness != 0.0 or type(self.softness) is not float:  # as solvers.common.soft.check_softness
            share = as_real(self.softness, "effector softness")
            if not 0.0 <= share < 1.0:
                raise ValueError(f"effector softness must be a share of the reach in [0, 1), got {self.softness!r}")
            object.__setattr__(self, "softness", share)
        if self.position is not None:
            object.__setattr__(self, "position", as_point(self.position, "effector position"))
        elif not self.pin:
            raise ValueError(f"effector on bone {self.bone} needs a position (only a pin may leave it out)")
        if self.pole is not None:
            object.__setattr__(self, "pole", as_point(self.pole, "effector pole"))
        if self.orientation is not None:
            q = np.asarray(self.orientation, dtype=float)
            if q.shape != (4,) or not np.all(np.isfinite(q)) or not np.linalg.norm(q) > 0.0:
                raise ValueError(
                    f"effector orientation must be a finite non-zero (w, x, y, z), got {self.orientation!r}"
                )
            object.__setattr__(self, "orientation", q / np.linalg.norm(q))
        if not as_real(self.weight, "effector weight") > 0.0:
            raise ValueError(f"effector weight must be positive, got {self.weight!r}")
        if not 0.0 <= as_real(self.rotation_weight, "effector rotation_weight") <= 1.0:
            raise ValueError(f"effector rotation_weight must be within 0..1, got {self.rotation_weight!r}")
        if not (isinstance(self.priority, (int, np.integer)) and self.priority >= 0):
            raise ValueError(f"effector priority must be an integer >= 0, got {self.priority!r}")

    def _check_aim(self) -> None:
        object.__setattr__(self, "aim_spread", check_spread(self.aim_spread))
        if not isinstance(self.aim_axis, str):
            raise ValueError(f"effector aim_axis must be a string, got {self.aim_axis!r}")
        if self.aim_axis.upper() in ("", NO_AIM):
            object.__setattr__(self, "aim_axis", "")
            return
        axis_vector(self.aim_axis)  # a ValueError naming the bad value
        object.__setattr__(self, "aim_axis", self.aim_axis.upper())
        goals = {"pin": self.pin, "pole": self.pole is not None, "orientation": self.orientation is not None}
        given = [name for name, used in goals.items() if used] + (["softness"] if self.softness else [])
        if given:
            raise ValueError(f"an aiming effector (bone {self.bone}) takes no {' or '.join(given)}: it turns an axis")


# Where a method weighs priority levels instead of solving them in turn (FABRIK, CCD,
# triangulation): each level counts this many times the one below it, so a lower level moves
# a higher one by about a millionth of its pull.
LEVEL = 1e6


def level(effector: Effector) -> int:
    """The effector's rank among the priority levels, highest first: every pin (0, above every
    target: a planted foot holds whatever the targets do), then priority 0, 1, ... (1, 2, ...)."""
    return 0 if effector.pin else 1 + int(effector.priority)


def levels(effectors: list[Effector]) -> list[list[int]]:
    """The effectors' indices by priority level, highest first (only the levels present)."""
    ranks = [level(e) for e in effectors]
    return [[k for k, r in enumerate(ranks) if r == rank] for rank in sorted(set(ranks))]


def ranked_weights(effectors: list[Effector]) -> list[float]:
    """Each effector's weight times LEVEL for every level below its own: the weights with which
    FABRIK, CCD and triangulation rank the levels (one level: the weights as given)."""
    groups = levels(effectors)
    out = [0.0] * len(effectors)
    for rank, group in enumerate(groups):
        for k in group:
            out[k] = float(effectors[k].weight) * LEVEL ** (len(groups) - 1 - rank)
    return out


@dataclass(frozen=True, init=False)
class SkeletonSolution:
    """Every bone's local rotation after a solve (bones no effector moves keep their input ones)."""

    # (n, 4), or a function giving them on first use (read them as `local`): one effector's are
    # products a writer turning the frames as read (`branch`) never needs, and a Solve runs per call.
    local_rows: np.ndarray | Callable[[], np.ndarray] = field(metadata={"read_as": "local"})
    error: np.ndarray  # (effectors,) distance of each effector's bone end from its position
    reached: bool  # every effector within tolerance
    iterations: int
    method: str
    reason: str = ""  # as Solution.reason; also a pin that could not hold
    unheld: tuple[int, ...] = ()  # the effectors (indices) that are pins and could not hold (common.pins)
    # (effectors,) radians: each aiming effector's remaining angle (its `error` is the distance by
    # which its ray misses the target, common.aim_goals), NaN for the others; None: nothing aims
    angles: np.ndarray | None = None
    # A movable root (common.root_move): the root bone's head moved by this (3,) in the skeleton's
    # space, `local` posing the bones from there; None: the root was not free to move.
    root_shift: np.ndarray | None = None
    # One effector solved as a chain (skeleton_solve): (that Chain, its Solution: the world turns a
    # writer applies to the frames as read, the bones of its branch); None from a tree kernel,
    # an aim or a movable root (their turns are not from the frames as read).
    branch: tuple | None = None

    def __init__(
        self,
        local_rows: np.ndarray | Callable[[], np.ndarray],
        error: np.ndarray,
        reached: bool,
        iterations: int,
        method: str,
        reason: str = "",
        unheld: tuple[int, ...] = (),
        angles: np.ndarray | None = None,
        root_shift: np.ndarray | None = None,
        branch: tuple | None = None,
    ) -> None:
        # The dataclass's own __init__, the fields stored straight into the dict (as Effector's:
        # a tree solve makes one or two of these per call; test_skeleton.py checks the fields).
        d = self.__dict__
        d["local_rows"], d["error"], d["reached"] = local_rows, error, reached
        d["iterations"], d["method"], d["reason"] = iterations, method, reason
        d["unheld"], d["angles"], d["root_shift"], d["branch"] = unheld, angles, root_shift, branch

    @property
    def local(self) -> np.ndarray:
        """(n, 4) every bone's local rotation after the solve."""
        if callable(self.local_rows):
            object.__setattr__(self, "local_rows", self.local_rows())
        return self.local_rows


@dataclass(frozen=True)
class SkeletonBatch:
    """Every frame's solution: SkeletonSolution's fields with a leading frame axis."""

    local: np.ndarray  # (m, n, 4) every bone's local rotation per frame
    error: np.ndarray  # (m, k) each effector's distance from its position, measured on `local`
    reached: np.ndarray  # (m,) every effector within tolerance
    iterations: np.ndarray  # (m,)
    method: str
    # Why the frames were solved one by one, and a pin that could not hold ("" when neither).
    reason: str = ""
    angles: np.ndarray | None = None  # (m, k) as SkeletonSolution.angles per frame; None: nothing aims
    root_shift: np.ndarray | None = None  # (m, 3) a movable root's move per frame (SkeletonSolution's)


def finish(
    skeleton: Skeleton,
    local: np.ndarray,
    effectors: list[Effector],
    tolerance: float,
    iterations: int,
    method: str,
    reason: str = "",
    error: np.ndarray | None = None,
) -> SkeletonSolution:
    """The SkeletonSolution of a tree kernel, its errors measured on `local` itself (forward
    kinematics of what is returned, so no kernel can report an error it did not reach); `error`:
    the effectors' distances a kernel measured by its own forward kinematics of this very `local`."""
    if error is None:  # plain floats (solvers.skeleton_floats): a tree kernel's whole solve is a few hundred µs
        frames, heads = forward(skeleton, rows(local))
        ends = [end_point(skeleton, frames, heads, e.bone) for e in effectors]
        error = np.array([math.dist(end, e.position.tolist()) for end, e in zip(ends, effectors, strict=True)])
    reached = True  # every error within the tolerance (NaN is not): a loop, numpy's all() costs more on a few
    for e in error.tolist():
        if not e <= tolerance:
            reached = False
            break
    return SkeletonSolution(local, error, reached, iterations, method, reason)
