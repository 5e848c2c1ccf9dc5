"""Blender's per-bone IK settings (Bone > Inverse Kinematics) as solver joint limits, and goal orientations.

The solver's local rotation of a bone is L = (P R)^-1 F (P: parent frame, R:
rest orientation in the parent, F: the bone's frame). With R = `Bone.matrix`
(the rest rotation relative to the parent bone, or to the armature for a
root bone) and P, F the armature-space pose rotations, L is exactly the
rotation part of `PoseBone.matrix_basis`, the space Blender's IK limits are
given in: X and Z swing, Y twist. Blender's positive ik_max_x is a positive
rotation about the bone's own X axis, and so is the solver's (checked against
Blender's IK constraint in tests/blender/test_limits_pole.py): no sign mapping.

A bone that does not inherit its parent's rotation has a local rotation that
is not a function of the parent's frame, so limits on it cannot be expressed;
such a bone is refused when it has limits (unless it is the chain's root,
where the base frame is simply the armature's).
"""

from __future__ import annotations

import math
from operator import attrgetter

import numpy as np
from mathutils import Matrix

from ..solvers import make_limits
from ..solvers.limits import JointLimits

AXES = "xyz"


def has_settings(pb) -> bool:
    """Whether the pose bone restricts or stiffens any IK axis (Bone > Inverse Kinematics)."""
    return (
        pb.lock_ik_x
        or pb.lock_ik_y
        or pb.lock_ik_z
        or pb.use_ik_limit_x
        or pb.use_ik_limit_y
        or pb.use_ik_limit_z
        or pb.ik_stiffness_x > 0.0
        or pb.ik_stiffness_y > 0.0
        or pb.ik_stiffness_z > 0.0
    )


def read_limits(pose_bones) -> JointLimits | None:
    """Joint limits of the chain's pose bones (root first), or None when no bone restricts anything.

    None keeps the plain (faster) solve paths for rigs without IK settings."""
    if not any(has_settings(pb) for pb in pose_bones):
        return None
    lock, use, lo, hi, stiff = [], [], [], [], []
    for pb in pose_bones:
        lock.append((pb.lock_ik_x, pb.lock_ik_y, pb.lock_ik_z))
        use.append((pb.use_ik_limit_x, pb.use_ik_limit_y, pb.use_ik_limit_z))
        lo.append((pb.ik_min_x, pb.ik_min_y, pb.ik_min_z))
        hi.append((pb.ik_max_x, pb.ik_max_y, pb.ik_max_z))
        # Blender allows stiffness up to 1 (the axis never moves); the solver caps at 0.99.
        stiff.append(tuple(min(0.99, s) for s in (pb.ik_stiffness_x, pb.ik_stiffness_y, pb.ik_stiffness_z)))
    # Blender's min is within -180..0 and max within 0..180, so min <= max always holds.
    return make_limits(len(pose_bones), lock=lock, use_limit=use, minimum=lo, maximum=hi, stiffness=stiff)


def joint_frames(pose_bones, parent_matrix: Matrix | None, limits: JointLimits) -> tuple[np.ndarray, tuple]:
    """(reference (n, 4), base_frame (4,)) for `Chain`, from the rest pose and the root's parent pose."""
    for i, pb in enumerate(pose_bones):
        if i > 0 and not pb.bone.use_inherit_rotation and bool(limits.active[i] or limits.stiffness[i].any()):
            raise ValueError(
                f"bone '{pb.name}' has IK limits but does not inherit its parent's rotation: limits cannot apply"
                " (turn Inherit Rotation on, or turn off Use Bone IK Limits)"
            )
    ref = [pb.bone.matrix.to_quaternion()[:] for pb in pose_bones]
    root = pose_bones[0]
    if parent_matrix is None or not root.bone.use_inherit_rotation:
        # Root of the armature, or a root whose rest is taken in armature space: its
        # local rotation is relative to bone.matrix_local, i.e. an identity base.
        base = (1.0, 0.0, 0.0, 0.0)
        ref[0] = root.bone.matrix_local.to_quaternion()[:]
    else:
        base = parent_matrix.to_quaternion().normalized()[:]
    return np.array(ref, dtype=float), base


def limit_lines(obj, names) -> list[str]:
    """One readable line per chain bone with IK settings, e.g. "shin.L: X 0°..150°, Y Z locked"."""
    lines = []
    for name in names:
        pb = obj.pose.bones.get(name)
        if pb is None or not has_settings(pb):
            continue
        locked = [a.upper() for a in AXES if getattr(pb, f"lock_ik_{a}")]
        parts = []
        for a in AXES:
            if a.upper() in locked:
                continue
            if getattr(pb, f"use_ik_limit_{a}"):
                lo, hi = (math.degrees(getattr(pb, f"ik_{m}_{a}")) for m in ("min", "max"))
                parts.append(f"{a.upper()} {lo:.0f}°..{hi:.0f}°")
            stiffness = getattr(pb, f"ik_stiffness_{a}")
            if stiffness > 0.0:
                parts.append(f"{a.upper()} stiffness {stiffness:.2f}")
        if locked:
            parts.append(f"{' '.join(locked)} locked")
        lines.append(f"{name}: {', '.join(parts)}")
    return lines


def world_matrix(target, subtarget: str = "") -> Matrix:
    """World matrix of the target object, or of its pose bone (pass evaluated objects)."""
    if target is None:
        raise ValueError("no target object set")
    if not subtarget:
        return target.matrix_world.copy()
    pbone = target.pose.bones.get(subtarget) if target.type == "ARMATURE" else None
    if pbone is None:
        raise ValueError(f"target '{target.name}' has no bone '{subtarget}'")
    return target.matrix_world @ pbone.matrix


def tip_goal_rotation(obj_eval, space_inverse: Matrix, target_world: Matrix, rig_chain) -> np.ndarray:
    """The solver's target_rotation (w, x, y, z): the chain's last bone's wanted armature-space frame
    (`goal_frame` for the chain read as `rig_chain`)."""
    last = rig_chain.pose_matrices[-1].to_quaternion().normalized()
    return goal_frame(obj_eval, space_inverse, target_world, rig_chain.tip, rig_chain.use_tail, last)


def goal_frame(obj_eval, space_inverse: Matrix, target_world: Matrix, tip: str, use_tail: bool, last_now) -> np.ndarray:
    """The wanted armature-space frame (w, x, y, z) of a chain's last bone, whose current frame is
    `last_now` (a Quaternion): as Blender's IK "Rotation" option, the tip bone's orientation matches
    the target's (scale dropped). With use_tail off the tip bone is not in the chain and follows its
    parent rigidly, so the parent's wanted frame keeps the tip's current offset from it."""
    wanted = (space_inverse @ target_world).to_3x3().normalized().to_quaternion()
    if not use_tail:
        tip_now = obj_eval.pose.bones[tip].matrix.to_quaternion().normalized()
        wanted = wanted @ (tip_now.inverted() @ last_now)
    q = wanted.normalized()
    if not all(math.isfinite(c) for c in q):
        raise ValueError("the target's rotation is not finite")
    return np.array(q[:], dtype=float)


SETTING_NAMES = tuple(
    f"{kind}_{a}" for kind in ("lock_ik", "use_ik_limit", "ik_min", "ik_max", "ik_stiffness") for a in AXES
)


def settings_signature(obj, names) -> tuple:
    """The chain bones' IK settings as plain values (Live re-solves when they change)."""
    bones = obj.pose.bones
    return tuple(map(_read_settings, map(bones.__getitem__, names)))


_read_settings = attrgetter(*SETTING_NAMES)  # one C-level getter: Live's signature reads it per update
