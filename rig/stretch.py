"""IK stretch: chain bones with `PoseBone.ik_stretch` > 0 lengthen along Y to reach a target
beyond the chain's reach, when the chain's stretch option is on (the IK constraint's
`use_stretch`).

Blender's IK (intern/iksolver, used by ikplugin/iksolver_plugin) gives each such bone a
translation-Y degree of freedom with stiffness 1 - ik_stretch^2 and lets its Jacobian solver
share the missing length between that DOF and the rotations; the result is written as a
uniform scale of the bone's pose matrix, divided by the parent's stretch. Chain IK keeps its
solvers rotation-only, so the stretch is planned before the solve (solvers.stretch.plan):

- the chain is first read *unstretched*: the Y scale channel of a stretchable bone is Chain
  IK's (a previous Solve wrote it), so the pose is rebuilt with it at 1 (rig.fk), and the
  rigidity check runs on that unstretched pose;
- the plan stretches the links to the root-to-target distance when it is beyond reach (all
  factors 1 otherwise, so the stretch resets within reach);
- the chosen solver solves that stretched chain, and the write sets the rotations and the Y
  scale channel of the stretchable bones only (X and Z are kept).

Differences from Blender: Blender's stretch is uniform (the bone also thickens) and its
per-bone share comes out of the Jacobian iteration; here only Y scales, and a bone that does
not stretch but inherits scale from a stretched chain bone lengthens with it (Blender
compensates that in its pose matrices, which channels cannot do without keying that bone).
"""

from __future__ import annotations

import math

from mathutils import Vector

from ..solvers import stretch as plan_stretch
from ..solvers.skeleton_stretch import stretch_skeleton
from . import fk, read

INHERITS_Y = ("FULL", "ALIGNED", "FIX_SHEAR")


def weights(obj_eval, tip: str, length: int, use_tail: bool, use_stretch: bool) -> list[float] | None:
    """Per chain bone ik_stretch (root first) when the chain stretches, else None
    (stretch off, or no chain bone with ik_stretch > 0: the plain solve applies)."""
    if not use_stretch:
        return None
    try:
        bones, _ = read.chain_pose_bones(obj_eval, tip, length, use_tail)
    except ValueError:
        return None  # the ordinary read reports it
    w = [float(b.ik_stretch) for b in bones]
    return w if any(x > 0.0 for x in w) else None


def stretched(scales: dict[str, float]) -> bool:
    """Whether own Y channels (rig.unit.stretch_branch, `stretch_tree`) lengthen anything (soft IK
    then solves the target itself: the soft stretch already bends the chain as the soft chain bends)."""
    return any(y != 1.0 for y in scales.values())


def check_followed(bones, links, world, bent: bool = False) -> None:
    """Refuse a stretch the plan cannot follow: the plan scales a bone that inherits its stretched
    parent's Y scale along its own Y axis (solvers.stretch), which is what Blender does for Inherit
    Scale Aligned, and for Full (and Fix Shear, from a rest pose along the parent) while the bone
    stays along its parent's Y axis, as the straight chain at full stretch keeps it when every link
    runs along its bone (within the shear that leaves, up to read.RIGID_TOLERANCE, the same bound
    the rigidity check puts on an inherited scale: float32 noise never refuses). Otherwise Blender
    shears or scales the bone (Average: uniformly) and the tip misses by up to the stretch (0.5 on a
    3-unit chain). `bent`: soft IK's stretch, which lengthens the chain while it still bends
    (solvers.common.soft), so Full and Fix Shear shear."""
    for i in range(1, len(bones)):
        if world[i - 1] == 1.0:
            continue  # the parent is not stretched
        bone = bones[i].bone
        mode = bone.inherit_scale
        if mode in ("ALIGNED", "NONE", "NONE_LEGACY"):
            continue
        # Straight at full stretch, the bone's Y axis is within the two links' angles off their
        # bones of its parent's: below the rigidity check's tolerance Blender's shear is float32
        # noise (connected bones read ~1e-6 off), not a gap sideways of the bone.
        s = world[i - 1]
        angle = plan_stretch.off_axis(links[i - 1], s) + plan_stretch.off_axis(links[i], world[i])
        straight = not bent and _unsheared(angle, s)
        if mode == "FULL" and straight:
            continue
        if mode == "FIX_SHEAR" and straight and _unsheared(_rest_angle(bone), s):
            continue
        why = {
            "AVERAGE": "scales it uniformly",
            "FULL": "shears it: its link or its parent's does not run along the bone",
        }
        reason = why.get(mode, "shears it: it does not rest along its parent")
        if bent and mode != "AVERAGE":
            reason = "shears it: with Softness the chain stretches while it still bends"
        raise ValueError(
            f"IK stretch: bone '{bone.name}' inherits the stretch of '{bone.parent.name}' with Inherit Scale "
            f"'{mode}', which {reason}; "
            f"set its Inherit Scale to Aligned or None, or IK Stretch to 0 above it"
        )


def _unsheared(angle: float, s: float) -> bool:
    """Whether a bone `angle` (an upper bound) off its parent's Y axis, inheriting a Y stretch `s`,
    keeps its shape within read.RIGID_TOLERANCE. The shear grows with the angle only up to 45
    degrees (it is 0 again at 90, where Blender stretches the bone across instead): a bound beyond
    that says nothing, so it refuses (review11b)."""
    return angle <= math.pi / 4 and plan_stretch.inherited_shear(angle, s) <= read.RIGID_TOLERANCE


def _rest_angle(bone) -> float:
    """The angle (radians) between the bone's rest Y axis and its parent's."""
    y, parent_y = bone.matrix_local.col[1].xyz, bone.parent.matrix_local.col[1].xyz
    return math.atan2(y.cross(parent_y).length, y.dot(parent_y))


def blend(pose_bones, scales: dict[str, float], influence: float) -> tuple[dict[str, float], dict[str, float]]:
    """(Y scales to write, blended by `influence` from the channels of `pose_bones` (the original
    object's, or a bake's evaluated ones); those channels)."""
    before = {n: float(pose_bones[n].scale[1]) for n in scales}
    values = {n: before[n] + (y - before[n]) * influence for n, y in scales.items()}
    if not all(map(math.isfinite, values.values())):
        raise ValueError("the planned stretch is not finite; pose left unchanged")
    return values, before


def apply(obj, scales: dict[str, float]) -> None:
    """Write Y scale channels (X and Z kept)."""
    bones = obj.pose.bones
    for name, y in scales.items():
        bones[name].scale[1] = y


def insert_keyframes(obj, names, frame: float) -> None:
    """Auto-keying: key the Y scale a Solve wrote (that channel only)."""
    for name in names:
        obj.pose.bones[name].keyframe_insert("scale", index=1, frame=frame, group=name)


# Chains solved together (a tree, rig.tree): the stretch planned per effector's branch
# (solvers.skeleton_stretch), read and written as for a chain alone.


def tree_inherit(obj, names, parents) -> list[bool]:
    """Per tree bone: it inherits its tree parent's Y scale (`parents` as rig.tree.TreeLayout's)."""
    bones = obj.pose.bones
    return [p != -1 and bones[n].bone.inherit_scale in INHERITS_Y for n, p in zip(names, parents, strict=True)]


def unstretched(obj_eval, names, w, pose: fk.PoseFK | None = None) -> fk.PoseFK:
    """The evaluated pose with the Y scale channel (Chain IK's) of each bone of `names` whose
    weight in `w` is above 0 back at 1, and `pose`'s replaced rotations (a bake's bones above)."""
    bones = obj_eval.pose.bones
    scales = {}
    for name, wi in zip(names, w, strict=True):
        if wi > 0.0:
            x, _, z = bones[name].scale
            scales[name] = Vector((x, 1.0, z))
    return fk.PoseFK(obj_eval, {} if pose is None else pose.rotations, scales)


def stretch_tree(obj_eval, names, skeleton, local, effectors, w, inherit) -> tuple:
    """(the skeleton stretched toward `effectors` (read unstretched: `unstretched`), own Y channel
    per bone of `names` with a weight above 0, the effectors to solve it toward: soft IK's cleared
    where their branch stretched, solvers.skeleton_stretch), refusing a stretch the plan cannot follow."""
    out = stretch_skeleton(skeleton, local, effectors, w, inherit)
    bones = obj_eval.pose.bones
    for i, p in enumerate(skeleton.parents):
        if p == -1 or out.world[p] == 1.0:
            continue
        bone = bones[names[i]].bone
        mode = bone.inherit_scale
        if mode not in ("ALIGNED", "NONE", "NONE_LEGACY"):
            # A chain alone is solved straight at full stretch, where Full follows (check_followed);
            # a tree's branches are not held straight (solvers.skeleton_stretch.SLACK), so Blender
            # would apply the parent's stretch across the bent bone.
            raise ValueError(
                f"IK stretch in a group: bone '{bone.name}' inherits the stretch of '{bone.parent.name}' with"
                f" Inherit Scale '{mode}', which shears it when it turns: set its Inherit Scale to Aligned or"
                " None, or IK Stretch to 0 above it"
            )
    return out.skeleton, {n: y for n, y, wi in zip(names, out.own, w, strict=True) if wi > 0.0}, list(out.effectors)
