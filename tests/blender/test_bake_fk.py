"""chain_ik.bake_fk (IK -> FK over a range): Rigify's FK controls take the IK limb's pose on every
frame, elbows and knees included, so switching the limb to FK shows no change."""

from __future__ import annotations

import math

import bpy
import pytest
from builders import add_empty, make_armature
from mathutils import Vector

FRAMES = (1, 12)
ARM = ("upper_arm_fk.L", "forearm_fk.L", "hand_fk.L")
LEG = ("thigh_fk.L", "shin_fk.L", "foot_fk.L")


def _select(pbone, state: bool) -> None:
    if hasattr(pbone, "select"):  # 5.0: selection lives on the pose bone
        pbone.select = state
    else:
        pbone.bone.select = state


def _open(path):
    bpy.ops.wm.open_mainfile(filepath=path)
    rig = bpy.data.objects["rig"]
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode="POSE")
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = FRAMES
    return rig


def _animate(rig, control: str, offset: Vector) -> None:
    """Two location keys on an IK control: the limb bends and its elbow/knee swings."""
    pb = rig.pose.bones[control]
    pb.location = (0, 0, 0)
    pb.keyframe_insert("location", frame=FRAMES[0])
    pb.location = offset
    pb.keyframe_insert("location", frame=FRAMES[1])


def _org_pose(rig, names) -> dict:
    """Per frame, the world head and tail of the ORG bones the limb deforms with."""
    out = {}
    for frame in range(FRAMES[0], FRAMES[1] + 1):
        bpy.context.scene.frame_set(frame)
        m = rig.matrix_world
        out[frame] = [(m @ rig.pose.bones[n].head, m @ rig.pose.bones[n].tail) for n in names]
    return out


def _worst_distance(a: dict, b: dict) -> float:
    pairs = (zip(pa, pb, strict=True) for f in a for pa, pb in zip(a[f], b[f], strict=True))
    return max((p - q).length for pair in pairs for p, q in pair)


@pytest.mark.parametrize(
    ("fk_bones", "switch", "control", "offset"),
    [
        (ARM, "upper_arm_parent.L", "hand_ik.L", Vector((-0.15, 0.25, 0.3))),
        (LEG, "thigh_parent.L", "foot_ik.L", Vector((0.05, -0.3, 0.35))),
    ],
)
def test_rigify_fk_follows_the_ik_limb_on_every_frame(rigify_file, fk_bones, switch, control, offset):
    rig = _open(rigify_file)
    rig.pose.bones[switch]["IK_FK"] = 0.0  # IK: the ORG bones follow the IK chain
    _animate(rig, control, offset)
    orgs = ["ORG-" + n.replace("_fk", "") for n in fk_bones]
    ik_pose = _org_pose(rig, orgs)
    first = {f: ik_pose[FRAMES[0]] for f in ik_pose}
    assert _worst_distance(ik_pose, first) > 0.05  # the limb really moves over the range

    assert bpy.ops.chain_ik.bake_fk(pairs=", ".join(fk_bones), frame_start=FRAMES[0], frame_end=FRAMES[1]) == {
        "FINISHED"
    }
    rig.pose.bones[switch]["IK_FK"] = 1.0  # FK: the ORG bones now follow the baked FK controls
    fk_pose = _org_pose(rig, orgs)
    # Elbow/knee and wrist/ankle where the IK limb had them (the complaint: a 2.6 cm knee).
    assert _worst_distance(ik_pose, fk_pose) < 1e-4


def test_keys_only_fk_rotations_in_range(rigify_file):
    rig = _open(rigify_file)
    rig.pose.bones["upper_arm_parent.L"]["IK_FK"] = 0.0
    _animate(rig, "hand_ik.L", Vector((-0.1, 0.2, 0.2)))
    before = {(fc.data_path, fc.array_index) for fc in _fcurves(rig)}
    assert bpy.ops.chain_ik.bake_fk(pairs=", ".join(ARM), frame_start=3, frame_end=9) == {"FINISHED"}
    new = {(fc.data_path, fc.array_index): fc for fc in _fcurves(rig)}
    added = set(new) - before
    assert added == {(f'pose.bones["{n}"].rotation_quaternion', i) for n in ARM for i in range(4)}
    for key in added:
        frames = sorted(k.co[0] for k in new[key].keyframe_points)
        assert frames == [float(f) for f in range(3, 10)]


def _fcurves(obj):
    action = obj.animation_data.action
    if hasattr(action, "layers"):
        return [fc for layer in action.layers for s in layer.strips for bag in s.channelbags for fc in bag.fcurves]
    return list(action.fcurves)


def test_refused_when_the_limb_follows_fk(rigify_file):
    rig = _open(rigify_file)
    rig.pose.bones["upper_arm_parent.L"]["IK_FK"] = 1.0  # FK mode: ORG follows the FK bones themselves
    action = rig.animation_data.action if rig.animation_data else None
    keys_before = len(_fcurves(rig)) if action else 0
    with pytest.raises(RuntimeError, match="moves with the FK bones"):
        bpy.ops.chain_ik.bake_fk(pairs=", ".join(ARM), frame_start=1, frame_end=3)
    action = rig.animation_data.action if rig.animation_data else None
    assert (len(_fcurves(rig)) if action else 0) == keys_before


def test_selected_rigify_controls_and_bad_names(rigify_file):
    rig = _open(rigify_file)
    rig.pose.bones["thigh_parent.L"]["IK_FK"] = 0.0
    for pb in rig.pose.bones:
        _select(pb, pb.name in LEG)
    assert bpy.ops.chain_ik.bake_fk(frame_start=1, frame_end=2) == {"FINISHED"}
    _select(rig.pose.bones["root"], True)
    with pytest.raises(RuntimeError, match="no bone to follow for root"):
        bpy.ops.chain_ik.bake_fk(frame_start=1, frame_end=2)
    with pytest.raises(RuntimeError, match="'nope' is not a bone"):
        bpy.ops.chain_ik.bake_fk(pairs="thigh_fk.L:nope")


def test_plain_rig_rolled_euler_fk_chain_follows_ik_chain(scene):
    """Not Rigify: an IK-driven chain and a separate FK chain with another roll and Euler channels."""
    rig = make_armature(
        [
            ("a1", (0, 0, 0), (0, 0, 1), None, False, 0.0),
            ("a2", (0, 0, 1), (0, 0.3, 2), "a1", True, 0.0),
            ("f1", (0, 0, 0), (0, 0, 1), None, False, 40.0),
            ("f2", (0, 0, 1), (0, 0.3, 2), "f1", True, -25.0),
        ]
    )
    target = add_empty(location=(0.8, 0.4, 1.2))
    ik = rig.pose.bones["a2"].constraints.new("IK")
    ik.target, ik.chain_count = target, 2
    target.keyframe_insert("location", frame=1)
    target.location = (-0.5, 0.9, 1.0)
    target.keyframe_insert("location", frame=10)
    for name in ("f1", "f2"):
        rig.pose.bones[name].rotation_mode = "ZXY"
    assert bpy.ops.chain_ik.bake_fk(pairs="f1:a1, f2:a2", frame_start=1, frame_end=10) == {"FINISHED"}
    for frame in range(1, 11):
        bpy.context.scene.frame_set(frame)
        for fk, follow in (("f1", "a1"), ("f2", "a2")):
            # Same rotation from rest: the FK bone keeps its own roll.
            have, want = (
                rig.pose.bones[n].matrix.to_quaternion() @ rig.data.bones[n].matrix_local.to_quaternion().inverted()
                for n in (fk, follow)
            )
            assert math.degrees(have.rotation_difference(want).angle) < 1e-3
