"""The skeleton model: a tree of bones, effectors with their goals, and a solution as local rotations.

A `Skeleton` is what the solvers work on when several chains share bones (several
effectors on one tree); `solvers.skeleton_solve.solve_skeleton` solves it. Here: the data,
its forward kinematics (numpy and plain floats), the effectors' ranking (levels, weights),
pins resolved, effectors sharing a bone merged, and `finish` (a solution measured on itself).

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
from dataclasses import dataclass, field, replace

import numpy as np

from . import quat
from .limits import JointLimits
from .maths.floats import rotate, side, swing
from .model.aim_axis import DEFAULT_SPREAD, NO_AIM, axis_vector, check_spread
from .model.chain import Chain, as_point, as_real, check_radii


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
        # Bone by bone on plain floats (solvers.skeleton): numpy's per-call cost on one bone's
        # (4,) arrays made this ~50x slower, and every tree solve measures its errors here.
        frames, heads = map(np.array, forward(self, rows(local)))
        ends = heads + self.lengths[:, None] * quat.rotate(frames, self.links)
        return frames, heads, ends


_GEOMETRY = ("offsets", "links", "lengths", "reference", "base_frame")  # Skeleton.read_lazily's rows


@dataclass(frozen=True)
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

    def __post_init__(self) -> None:
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


@dataclass(frozen=True)
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


def resolve_pins(skeleton: Skeleton, local: np.ndarray, effectors: list[Effector]) -> list[Effector]:
    """Pins with their bone's input end point and world orientation filled in (a pin given its
    position already, say by a bake starting from the previous frame, keeps it)."""
    if not any(e.pin and e.position is None for e in effectors):
        return list(effectors)
    frames, _, ends = skeleton.forward(local)
    return [
        replace(e, position=ends[e.bone], orientation=frames[e.bone], rotation_weight=1.0)
        if e.pin and e.position is None
        else e
        for e in effectors
    ]


def shared_bones(effectors: list[Effector]) -> list[tuple[list[int], int]]:
    """Per bone with effectors, in order: (their indices, the lead's: the heaviest of the highest
    level), as merge_shared merges them."""
    out = []
    for bone in dict.fromkeys(e.bone for e in effectors):
        group = [k for k, e in enumerate(effectors) if e.bone == bone]
        top = min(level(effectors[k]) for k in group)
        lead = max((k for k in group if level(effectors[k]) == top), key=lambda k: effectors[k].weight)
        out.append((group, lead))
    return out


def merge_shared(effectors: list[Effector]) -> list[Effector]:
    """One effector per bone: effectors on the same bone become one at their weighted mean position
    with their summed weight (sum w_k |p - t_k|^2 is that total weight x |p - mean|^2 plus a
    constant, so every method then solves their weighted compromise, as Blender's tree IK does).
    Across priority levels the higher level's ranked weight dominates (ranked_weights); the
    merged goal takes the lead's other goals (pin, pole, orientation; shared_bones).
    Returns `effectors` itself when no two share a bone."""
    if len({e.bone for e in effectors}) == len(effectors):
        return effectors
    out = []
    for group, lead in shared_bones(effectors):
        if len(group) == 1:
            out.append(effectors[group[0]])
            continue
        members = [effectors[k] for k in group]
        ranked = np.array(ranked_weights(members))
        position = ranked @ np.array([e.position for e in members]) / ranked.sum()
        top = level(effectors[lead])
        weight = float(sum(e.weight for e in members if level(e) == top))
        out.append(replace(effectors[lead], position=position, weight=weight))
    return out


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
    if error is None:  # plain floats (solvers.skeleton): a tree kernel's whole solve is a few hundred µs
        frames, heads = forward(skeleton, rows(local))
        ends = [end_point(skeleton, frames, heads, e.bone) for e in effectors]
        error = np.array([math.dist(end, e.position.tolist()) for end, e in zip(ends, effectors, strict=True)])
    reached = all(e <= tolerance for e in error.tolist())  # (numpy's all() costs more on a few)
    return SkeletonSolution(local, error, reached, iterations, method, reason)


# Forward kinematics on plain floats (lists of tuples), and back (`to_locals`): a character's tree
# is 10-40 bones, where numpy's per-call cost on (4,) arrays dominates; every tree kernel and
# Skeleton.forward use these.


def moved_bones(skeleton, bones) -> list[int]:
    """Ascending: every bone on a branch from a root down to one of `bones`."""
    moved: set[int] = set()
    parents = skeleton.parents
    for b in bones:
        while b != -1 and b not in moved:
            moved.add(b)
            b = parents[b]
    return sorted(moved)


def rows(array: np.ndarray) -> list[tuple]:
    return [tuple(r) for r in np.asarray(array, dtype=float).tolist()]


def forward(skeleton, local: list[tuple], bones: list[int] | None = None, frames=None, heads=None):
    """(world frames, heads) as lists of tuples for local rotations `local` (tuples).

    With `bones` (ascending, each one's parent among them or in `frames`/`heads` already)
    only those are recomputed, in the given lists."""
    n = skeleton.n_bones
    frames = [None] * n if frames is None else frames
    heads = [None] * n if heads is None else heads
    parents, reference, offsets = skeleton.parents, cached_rows(skeleton, "reference"), cached_rows(skeleton, "offsets")
    base = tuple(skeleton.base_frame.tolist())
    # multiply(multiply(parent, reference), local) and rotate(parent, offset) written out, term by
    # term in their order (the same bits): the helpers' calls cost more than their arithmetic.
    for i in range(n) if bones is None else bones:
        p = parents[i]
        if p == -1:
            pw, px, py, pz = base
            heads[i] = offsets[i]
        else:
            pw, px, py, pz = frames[p]
            vx, vy, vz = offsets[i]
            tx, ty, tz = 2.0 * (py * vz - pz * vy), 2.0 * (pz * vx - px * vz), 2.0 * (px * vy - py * vx)
            hx, hy, hz = heads[p]
            heads[i] = (
                hx + (vx + pw * tx + (py * tz - pz * ty)),
                hy + (vy + pw * ty + (pz * tx - px * tz)),
                hz + (vz + pw * tz + (px * ty - py * tx)),
            )
        bw, bx, by, bz = reference[i]
        rw = pw * bw - px * bx - py * by - pz * bz
        rx = pw * bx + px * bw + py * bz - pz * by
        ry = pw * by - px * bz + py * bw + pz * bx
        rz = pw * bz + px * by - py * bx + pz * bw
        bw, bx, by, bz = local[i]
        frames[i] = (
            rw * bw - rx * bx - ry * by - rz * bz,
            rw * bx + rx * bw + ry * bz - rz * by,
            rw * by - rx * bz + ry * bw + rz * bx,
            rw * bz + rx * by - ry * bx + rz * bw,
        )
    return frames, heads


def end_point(skeleton, frames: list[tuple], heads: list[tuple], bone: int) -> tuple:
    """Bone `bone`'s end point (head + length x its link)."""
    x, y, z = rotate(frames[bone], cached_rows(skeleton, "reach")[bone])
    hx, hy, hz = heads[bone]
    return (hx + x, hy + y, hz + z)


def to_locals(
    skeleton, local: np.ndarray, frames: list[tuple], bones: list[int], swing_only: set[int] | frozenset = frozenset()
) -> np.ndarray:
    """Local rotations (n, 4): `local` (the input) with the bones `bones` (ascending) given
    their solved world `frames` (a list over all bones; only `bones`' entries are read).

    A bone in `swing_only` keeps only its solved link direction: its frame is the minimal
    swing from its input local rotation under its solved parent onto that direction (pass the
    bones whose twist moves nothing a goal sees: every moved child head on the link, no
    orientation goal)."""
    n = skeleton.n_bones
    inputs = rows(local)
    out = list(inputs)
    parents, reference, links = skeleton.parents, cached_rows(skeleton, "reference"), cached_rows(skeleton, "links")
    base = tuple(skeleton.base_frame.tolist())
    solved = [None] * n
    wanted = set(bones)
    # floats.multiply / rotate / swing / normalize4 written out, term by term in their order (the
    # same bits: tests/solvers/test_tree_fabrik_floats.py), for their calls cost more than their
    # arithmetic; a swing past a quarter turn (rare) is floats.swing itself.
    for i in range(n):
        p = parents[i]
        pw, px, py, pz = base if p == -1 else solved[p]
        bw, bx, by, bz = reference[i]  # rest = parent x reference
        rw = pw * bw - px * bx - py * by - pz * bz
        rx = pw * bx + px * bw + py * bz - pz * by
        ry = pw * by - px * bz + py * bw + pz * bx
        rz = pw * bz + px * by - py * bx + pz * bw
        if i not in wanted or i in swing_only:  # rest x input
            bw, bx, by, bz = inputs[i]
            iw = rw * bw - rx * bx - ry * by - rz * bz
            ix = rw * bx + rx * bw + ry * bz - rz * by
            iy = rw * by - rx * bz + ry * bw + rz * bx
            iz = rw * bz + rx * by - ry * bx + rz * bw
            if i not in wanted:
                solved[i] = (iw, ix, iy, iz)
                continue
        fw, fx, fy, fz = frames[i]
        if i in swing_only:  # the minimal swing from inherited's link onto the frame's
            vx, vy, vz = links[i]
            tx, ty, tz = 2.0 * (iy * vz - iz * vy), 2.0 * (iz * vx - ix * vz), 2.0 * (ix * vy - iy * vx)
            ux, uy, uz = (
                vx + iw * tx + (iy * tz - iz * ty),
                vy + iw * ty + (iz * tx - ix * tz),
                vz + iw * tz + (ix * ty - iy * tx),
            )
            tx, ty, tz = 2.0 * (fy * vz - fz * vy), 2.0 * (fz * vx - fx * vz), 2.0 * (fx * vy - fy * vx)
            vx, vy, vz = (
                vx + fw * tx + (fy * tz - fz * ty),
                vy + fw * ty + (fz * tx - fx * tz),
                vz + fw * tz + (fx * ty - fy * tx),
            )
            dot = ux * vx + uy * vy + uz * vz
            if dot >= 0.0:
                tw, tx, ty, tz = 1.0 + dot, uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
                m = math.sqrt(tw * tw + tx * tx + ty * ty + tz * tz)
                tw, tx, ty, tz = (tw / m, tx / m, ty / m, tz / m) if m > 0.0 else (0.0, 0.0, 0.0, 0.0)
            else:  # (its tie-breaker axis is read only here)
                inherited, have = (iw, ix, iy, iz), (ux, uy, uz)
                tw, tx, ty, tz = swing(have, (vx, vy, vz), side(inherited, have))
            fw, fx, fy, fz = (  # turn x inherited, normalized
                tw * iw - tx * ix - ty * iy - tz * iz,
                tw * ix + tx * iw + ty * iz - tz * iy,
                tw * iy - tx * iz + ty * iw + tz * ix,
                tw * iz + tx * iy - ty * ix + tz * iw,
            )
            m = math.sqrt(fw * fw + fx * fx + fy * fy + fz * fz)
            fw, fx, fy, fz = (fw / m, fx / m, fy / m, fz / m) if m > 0.0 else (0.0, 0.0, 0.0, 0.0)
        solved[i] = (fw, fx, fy, fz)
        cx, cy, cz = -rx, -ry, -rz  # normalize4(conjugate(rest) x frame)
        lw = rw * fw - cx * fx - cy * fy - cz * fz
        lx = rw * fx + cx * fw + cy * fz - cz * fy
        ly = rw * fy - cx * fz + cy * fw + cz * fx
        lz = rw * fz + cx * fy - cy * fx + cz * fw
        m = math.sqrt(lw * lw + lx * lx + ly * ly + lz * lz)
        out[i] = (lw / m, lx / m, ly / m, lz / m) if m > 0.0 else (0.0, 0.0, 0.0, 0.0)
    return np.array(out, dtype=float).reshape(np.shape(local))


def cached_rows(skeleton, name: str) -> list[tuple]:
    """The skeleton's arrays as lists of tuples, built once per skeleton (it is frozen)."""
    cache = skeleton.__dict__.get("_tree_rows")
    if cache is None:
        cache = {
            "reference": rows(skeleton.reference),
            "offsets": rows(skeleton.offsets),
            "links": rows(skeleton.links),
            "reach": rows(skeleton.lengths[:, None] * skeleton.links),
        }
        object.__setattr__(skeleton, "_tree_rows", cache)
    return cache[name]
