"""A unit read for Solve, Live, Compare and cli.py: one chain, or the chains sharing bones, as one
skeleton (rig.tree) with what the one writer (rig.tree_write.unit_pose) needs to turn it.

A lone chain is a unit of one: the same reading as a group's, read once. Inside it:
- a bone with Inherit Rotation off is accepted inside the tree (`TreeLayout.hinges`): the solvers
  give world frames and the writer puts each bone's back through its own rest;
- the pose matrices are kept with the writer's quaternion kernel terms (`read.tree_terms`), or why
  that kernel cannot serve (then Bone.convert_local_to_pose writes);
- IK stretch of one effector (not a pin) is planned as a chain's, in float64 straight to the target
  (`stretch_branch`; Solve and the bake alike); a group's per branch with the tree's slack
  (rig.stretch.stretch_tree).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
from mathutils import Matrix, Quaternion, Vector

from ..solvers import quat
from ..solvers import stretch as plan_stretch
from ..solvers.skeleton import Skeleton
from ..solvers.skeleton_stretch import stretched_geometry
from . import read, stretch, tree
from .fk import PoseFK
from .unit_layout import unit_layout


@dataclass(frozen=True)
class UnitRead:
    skeleton: Skeleton  # stretched when the unit's one branch stretched (`stretch_branch`)
    local: np.ndarray  # (n, 4) input local rotations
    names: tuple[str, ...]  # the union's bones, parents first
    pose: tuple  # world frames (n, 4), heads (n, 3), end points (n, 3) (rows of floats as read): solve_skeleton's pose=
    parents: tuple[int, ...]
    matrices: tuple[Matrix, ...]  # each bone's pose matrix as read (stretched: with its planned Y)
    frames: tuple[Quaternion, ...]  # their rotations (normalised)
    root_parents: tuple[Matrix | None, ...]  # per root in order: its Blender parent's pose matrix
    terms: read.PoseTerms | str  # the writer's quaternion kernel, or why it cannot serve
    constrained: tuple[str, ...]  # bones with active constraints (the written pose may differ)
    layout: tree.TreeLayout
    weights: tuple[float, ...] | None = None  # IK stretch: per bone its ik_stretch where it stretches
    # IK stretch: own Y channel per stretchable bone (planned), and whether any lengthens.
    scales: dict[str, float] = field(default_factory=dict)
    stretched: bool = False

    def end_frame(self, bone: int) -> Quaternion:
        """The bone's frame as the solve reads it (a tip goal orientation is taken against it)."""
        return self.matrices[bone].to_quaternion().normalized()


def read_unit(
    obj,
    obj_eval,
    chains,
    use_limits: bool,
    from_rest: bool = False,
    weights=None,
    layout: tree.TreeLayout | None = None,
    rotations: dict | None = None,
) -> UnitRead:
    """The unit of `chains` [(tip, chain_count, use_tail)] of `obj` (the original; `obj_eval` its
    evaluated object). `use_limits`: the bones' IK settings as joint limits; `from_rest`: the
    unit's bones at their rest rotations (Compare Solvers); `weights`: per tree bone its ik_stretch
    where it stretches (`tree_layout(obj, chains).names` order), read unstretched (rig.stretch);
    `layout`: the unit's layout (default: `rig.unit_layout.unit_layout(obj, chains)`, built once while
    the rig stays the same); `rotations`
    (bone -> local Quaternion): a bake's previous frame's solution in place of those bones'
    evaluated rotations (rig.fk)."""
    layout = unit_layout(obj, chains) if layout is None else layout
    names = layout.names
    rotations = {n: Quaternion() for n in names} if from_rest else dict(rotations or {})
    scales = {}
    if weights is not None:
        bones = obj_eval.pose.bones
        for name, wi in zip(names, weights, strict=True):
            if wi > 0.0:  # its Y scale channel is Chain IK's: read with it at 1
                x, _, z = bones[name].scale
                scales[name] = Vector((x, 1.0, z))
    fk = PoseFK(obj_eval, rotations, scales) if rotations or scales else None
    got = tree.read_tree_read(obj, obj_eval, chains, layout, fk, check=False)
    skeleton = got.skeleton
    if not use_limits and skeleton.limits is not None:
        skeleton = dataclasses.replace(skeleton, limits=None)
    if skeleton.limits is not None:
        for i in layout.hinges:
            if skeleton.limits.active[i] or skeleton.limits.stiffness[i].any():
                raise ValueError(
                    f"bone '{names[i]}' has IK limits but does not inherit its parent's rotation: limits cannot"
                    " apply (turn Inherit Rotation on, or turn off Use Bone IK Limits)"
                )
    rests = layout.writer_rests or None  # read once per layout
    terms = read.tree_terms(got.bones, got.frames, got.matrices, layout.parents, got.root_parents, False, rests)
    if fk is not None:  # not the evaluated pose: the writer's terms are not read there
        terms = "IK stretch scales the bones" if scales else "the chain is posed from given rotations, not read"
    if isinstance(terms, str) or fk is not None:
        tree.check_rigid(obj_eval, names, fk)
    # else: similarities throughout: the rigidity check could not refuse any bone (see read.SIMILAR)
    constrained = tuple(pb.name for pb in got.bones if read.is_constrained(pb))
    return UnitRead(
        skeleton, got.local, names, got.pose, layout.parents, got.matrices, got.frames, got.root_parents, terms,
        constrained, layout, None if weights is None else tuple(weights),
    )  # fmt: skip


def stretch_branch(obj_eval, unit: UnitRead, target, softness: float = 0.0) -> UnitRead:
    """A one-branch unit (a lone chain) read unstretched (`read_unit(..., weights=)`), stretched
    toward `target` (armature space) as a chain alone is: in float64 from the pose as read, so the
    stretched links sum to the target's distance and a target beyond reach is exactly at full
    reach, where the pose that reaches is straight (solvers.stretch.stretch_points; soft IK's
    `softness`: its soft stretch). Refuses a stretch Blender would not follow (check_followed)."""
    bones = [obj_eval.pose.bones[n] for n in unit.names]
    w = list(unit.weights)
    inherit = [b.bone.inherit_scale in stretch.INHERITS_Y for b in bones]
    mats = unit.matrices
    _, heads, ends = unit.pose
    points = [tuple(map(float, m.translation)) for m in mats] + [tuple(map(float, ends[-1]))]
    if not all(map(math.isfinite, (c for p in points for c in p))):
        raise ValueError(f"the pose of chain '{unit.layout.ends[-1][0][0]}' is not finite")
    # Each bone's rotation, orthonormal to float64 rounding (its quaternion normalised in float64).
    frames = quat.to_matrix(quat.normalize(np.array([m.to_quaternion()[:] for m in mats]))).tolist()
    goal = tuple(map(float, target))
    links, world, channels, new_points = plan_stretch.stretch_points(points, frames, w, inherit, goal, softness)
    stretch.check_followed(bones, links, world, bent=bool(softness))
    new_mats = tuple(m @ Matrix.Diagonal((1.0, c, 1.0, 1.0)) for m, c in zip(mats, world, strict=True))
    new_frames = tuple(m.to_quaternion().normalized() for m in new_mats)
    rows = np.array(new_points, dtype=float)
    pose = (np.array([q[:] for q in new_frames]), rows[:-1], rows[1:])
    own = {n: y for n, y, wi in zip(unit.names, channels, w, strict=True) if wi > 0.0}
    return dataclasses.replace(
        unit,
        skeleton=stretched_geometry(unit.skeleton, world),
        pose=pose,
        matrices=new_mats,
        frames=new_frames,
        scales=own,
        stretched=stretch.stretched(own),
    )


def as_chain(unit: UnitRead) -> UnitRead:
    """A chain alone (one effector, solved by the chain kernel) with joint limits: its skeleton's
    rests as Blender gives them (`TreeLayout.rests_read`), which the chain built from it normalises
    once, as rig.read's (normalised twice, a rest may move its last bit, and the solve with it)."""
    if unit.skeleton.limits is None or unit.layout.rests_read is None:
        return unit
    skeleton = dataclasses.replace(unit.skeleton, reference=unit.layout.rests_read.copy())
    return dataclasses.replace(unit, skeleton=skeleton)
