"""The skeleton model: a tree of bones, effectors with their goals, and a solution as local rotations.

A `Skeleton` is what the solvers will work on when several chains share bones (several
effectors on one tree, the multi-effector issue). Today a single chain is a skeleton with
one branch and one effector: `solve_skeleton` takes that case through `solvers.solve`
(the one solve path and its kernels), and refuses the others with a ValueError.

Joint model (the same as `Chain`'s, see Chain._read_joints): bone i's world frame is
    F_i = F_parent(i) R_i L_i        (F_parent = `base_frame` for a root bone)
with R_i its rest orientation in its parent (`reference`) and L_i its local rotation (what
Blender's rotation channels hold). Its head is
    head_i = head_parent(i) + rotate(F_parent(i), offsets[i])   (a root: head_i = offsets[i])
and its end point (the tail, or the next head of a chain) is head_i + lengths[i] rotate(F_i, links[i]).
Limits and stiffness are `JointLimits` over all bones, unchanged in meaning.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import quat
from .chain import Chain, as_point, as_real
from .limits import JointLimits


@dataclass(frozen=True)
class Skeleton:
    parents: tuple[int, ...]  # parent index per bone, -1 for a root; a parent comes before its children
    offsets: np.ndarray  # (n, 3) head in the parent's frame (a root: in the skeleton's space)
    links: np.ndarray  # (n, 3) unit direction from head to end point, in the bone's own frame
    lengths: np.ndarray  # (n,) head to end point
    reference: np.ndarray  # (n, 4) rest orientation in the parent's frame
    base_frame: np.ndarray  # (4,) the frame root bones hang from
    limits: JointLimits | None = None

    def __post_init__(self) -> None:
        n = len(self.parents)
        for i, p in enumerate(self.parents):
            if not (p == -1 or 0 <= p < i):
                raise ValueError(f"bone {i}'s parent {p} must be -1 or an earlier bone")
        shapes = {"offsets": (n, 3), "links": (n, 3), "lengths": (n,), "reference": (n, 4), "base_frame": (4,)}
        for name, shape in shapes.items():
            value = getattr(self, name)
            if np.shape(value) != shape or not np.all(np.isfinite(value)):
                raise ValueError(f"{name} must be finite with shape {shape}, got {np.shape(value)}")
        if np.any(self.lengths <= 0.0):
            raise ValueError("every bone needs a positive length")
        if self.limits is not None and self.limits.n_bones != n:
            raise ValueError(f"limits must be JointLimits for {n} bones")

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
        skeleton = cls(parents, offsets, links, chain.lengths.copy(), chain.reference, chain.base_frame, chain.limits)
        return skeleton, chain.input_locals

    def branch(self, bone: int) -> list[int]:
        """The bones from a root down to `bone`, root first."""
        path = [bone]
        while self.parents[path[-1]] != -1:
            path.append(self.parents[path[-1]])
        return path[::-1]

    def forward(self, local: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(world frames (n, 4), heads (n, 3), end points (n, 3)) for local rotations (n, 4)."""
        n = self.n_bones
        frames, heads = np.empty((n, 4)), np.empty((n, 3))
        for i, p in enumerate(self.parents):
            parent = self.base_frame if p == -1 else frames[p]
            frames[i] = quat.multiply(quat.multiply(parent, self.reference[i]), local[i])
            heads[i] = self.offsets[i] if p == -1 else heads[p] + quat.rotate(parent, self.offsets[i])
        ends = heads + self.lengths[:, None] * quat.rotate(frames, self.links)
        return frames, heads, ends


@dataclass(frozen=True)
class Effector:
    """A goal on one bone's end point: `position`, and optionally a `pole` (with `pole_angle`, as
    Blender's IK pole) and an `orientation` (w, x, y, z) with its `rotation_weight`. `weight`
    ranks this effector against the others of a multi-effector solve."""

    bone: int
    position: np.ndarray
    pole: np.ndarray | None = None
    pole_angle: float = 0.0
    orientation: np.ndarray | None = None
    rotation_weight: float = 1.0
    weight: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "position", as_point(self.position, "effector position"))
        if self.pole is not None:
            object.__setattr__(self, "pole", as_point(self.pole, "effector pole"))
        if not as_real(self.weight, "effector weight") > 0.0:
            raise ValueError(f"effector weight must be positive, got {self.weight!r}")


@dataclass(frozen=True)
class SkeletonSolution:
    """Every bone's local rotation after a solve (bones no effector moves keep their input ones)."""

    local: np.ndarray  # (n, 4)
    error: np.ndarray  # (effectors,) distance of each effector's bone end from its position
    reached: bool  # every effector within tolerance
    iterations: int
    method: str
    reason: str = ""  # as Solution.reason


def solve_skeleton(
    skeleton: Skeleton, local: np.ndarray, effectors: list[Effector], *, method: str, **options: object
) -> SkeletonSolution:
    """Solve `effectors` on `skeleton` from the local rotations `local` (n, 4). One effector whose
    bone's branch starts at a root (a chain) goes through `solvers.solve`; several effectors are
    the multi-effector solve, not built yet (ValueError)."""
    from .api import solve

    if len(effectors) != 1:
        raise ValueError(f"{len(effectors)} effectors: solving several together is not implemented yet")
    effector = effectors[0]
    if not 0 <= effector.bone < skeleton.n_bones:
        raise ValueError(f"effector bone {effector.bone} is not a bone of the skeleton")
    bones = skeleton.branch(effector.bone)
    frames, heads, ends = skeleton.forward(np.asarray(local, dtype=float))
    chain = Chain(
        np.concatenate((heads[bones], ends[bones[-1:]])),
        frames[bones],
        limits=None if skeleton.limits is None else skeleton.limits.subset(bones),
        reference=skeleton.reference[bones],
        base_frame=skeleton.base_frame,
    )
    goals = {"pole": effector.pole, "pole_angle": effector.pole_angle}
    if effector.orientation is not None:
        goals.update(target_rotation=effector.orientation, rotation_weight=effector.rotation_weight)
    sol = solve(chain, effector.position, method=method, **goals, **options)
    solved = np.array(local, dtype=float)
    new_frames = sol.frames(chain)
    parents = np.concatenate((skeleton.base_frame[None], new_frames[:-1]))
    solved[bones] = quat.multiply(quat.conjugate(quat.multiply(parents, skeleton.reference[bones])), new_frames)
    return SkeletonSolution(solved, np.array([sol.error]), sol.reached, sol.iterations, sol.method, sol.reason)
