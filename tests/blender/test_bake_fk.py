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


def _angle64(a, b) -> float:
    """Degrees between two pose matrices' rotations, in float64 from the relative rotation (scale out)."""
    import numpy as np

    ma, mb = (np.array(m.to_3x3(), dtype=float) for m in (a, b))
    ma, mb = ma / np.linalg.norm(ma, axis=0), mb / np.linalg.norm(mb, axis=0)
    rel = ma.T @ mb
    sine = np.linalg.norm([rel[2, 1] - rel[1, 2], rel[0, 2] - rel[2, 0], rel[1, 0] - rel[0, 1]]) / 2.0
    return math.degrees(math.atan2(sine, (np.trace(rel) - 1.0) / 2.0))


def _reported(out: str, pattern: str) -> float:
    import re

    return float(re.search(pattern, out).group(1))


def test_rigify_follow_angle_is_measured_in_float64_and_not_warned(rigify_file, capfd):
    """Issue 22 §8a: a float32 2 acos|dot| reported 0.04-0.07° (and warned) where the FK bones
    follow to 3e-5°."""
    rig = _open(rigify_file)
    rig.pose.bones["upper_arm_parent.L"]["IK_FK"] = 0.0
    _animate(rig, "hand_ik.L", Vector((-0.15, 0.25, 0.3)))
    capfd.readouterr()
    assert bpy.ops.chain_ik.bake_fk(pairs=", ".join(ARM), frame_start=FRAMES[0], frame_end=FRAMES[1]) == {"FINISHED"}
    out = capfd.readouterr().out
    reported = _reported(out, r"they follow within ([0-9.e+-]+)°")
    assert "Warning" not in out, out
    worst = 0.0
    for frame in range(FRAMES[0], FRAMES[1] + 1):
        bpy.context.scene.frame_set(frame)
        for fk in ARM:
            org = "ORG-" + fk.replace("_fk", "")
            worst = max(worst, _angle64(rig.pose.bones[fk].matrix, rig.pose.bones[org].matrix))
    assert worst < 1e-4 and reported < 1e-4
    assert reported == pytest.approx(worst, abs=1e-5)  # the same float64 figure, to float32 noise
    # Rigify stretches its IK limb a little within reach; rotation keys do not, and it is said.
    assert "the followed bones are stretched up to" in out


def test_a_real_miss_is_warned_with_its_measured_angle_and_cause(scene, capfd):
    rig = make_armature(
        [
            ("a1", (0, 0, 0), (0, 0, 1), None, False, 0.0),
            ("a2", (0, 0, 1), (0, 0.3, 2), "a1", True, 0.0),
            ("f1", (0, 0, 0), (0, 0, 1), None, False, 0.0),
            ("f2", (0, 0, 1), (0, 0.3, 2), "f1", True, 0.0),
        ]
    )
    target = add_empty(location=(0.8, 0.4, 1.2))
    rig.pose.bones["a2"].constraints.new("IK").target = target
    rig.pose.bones["f2"].lock_rotation[0] = True  # the FK bone cannot turn about X
    capfd.readouterr()
    assert bpy.ops.chain_ik.bake_fk(pairs="f1:a1, f2:a2", frame_start=1, frame_end=2) == {"FINISHED"}
    out = capfd.readouterr().out
    warned = _reported(out, r"miss their partners by up to ([0-9.e+-]+)° on playback \(locked rotation channels on f2")
    bpy.context.scene.frame_set(1)
    worst = max(_angle64(rig.pose.bones[f].matrix, rig.pose.bones[a].matrix) for f, a in (("f1", "a1"), ("f2", "a2")))
    assert worst > 1.0 and warned == pytest.approx(worst, rel=1e-2)


def _live_arm(method: str = "triangulation"):
    """Chain IK's Live chain 'Arm' drives a1-a2 toward a keyed target; f1-f2 are the FK copies."""
    rig = make_armature(
        [
            ("a1", (0, 0, 0), (0, 0, 1), None, False, 0.0),
            ("a2", (0, 0, 1), (0, 0.3, 2), "a1", True, 0.0),
            ("f1", (0, 0, 0), (0, 0, 1), None, False, 40.0),
            ("f2", (0, 0, 1), (0, 0.3, 2), "f1", True, -25.0),
        ]
    )
    target = add_empty(location=(0.8, 0.4, 1.2))
    target.keyframe_insert("location", frame=1)
    target.location = (-0.5, 0.9, 1.0)
    target.keyframe_insert("location", frame=10)
    item = rig.chain_ik.chains.add()
    item.name, item.tip, item.chain_length, item.target, item.method = "Arm", "a2", 2, target, method
    item.live = True
    bpy.context.scene.frame_set(1)
    return rig, target, item


def _follow_angle(rig, frames) -> float:
    """The largest angle between f1/f2 and a1/a2 (from rest) over `frames`, played with Live on."""
    worst = 0.0
    for frame in frames:
        bpy.context.scene.frame_set(frame)
        for fk, follow in (("f1", "a1"), ("f2", "a2")):
            have, want = (rig.pose.bones[n].matrix @ rig.data.bones[n].matrix_local.inverted() for n in (fk, follow))
            worst = max(worst, _angle64(have, want))
    return worst


@pytest.mark.parametrize("method", ["triangulation", "jacobian"])
def test_fk_follows_a_live_chain_frame_by_frame_and_says_how(scene, capfd, method):
    """Issue 22 §8b: Live was held off through the bake, so the keys froze on one pose while the
    report said they follow."""
    rig, target, item = _live_arm(method)
    before = {n: tuple(rig.pose.bones[n].rotation_quaternion) for n in ("a1", "a2")}
    capfd.readouterr()
    assert bpy.ops.chain_ik.bake_fk(pairs="f1:a1, f2:a2", frame_start=1, frame_end=10) == {"FINISHED"}
    out = capfd.readouterr().out
    assert "Live chain(s) 'Arm' solved at every frame, from frame 1 on and from their pose now" in out
    for n in ("a1", "a2"):  # put back (Live solves it again from there: float32 noise)
        assert tuple(rig.pose.bones[n].rotation_quaternion) == pytest.approx(before[n], abs=1e-6)
    assert item.live  # it poses the followed bones, not the FK ones: still Live
    # Played from here, as the bake did: the FK bones are where Live puts the IK chain, every frame.
    assert _follow_angle(rig, range(1, 11)) < 1e-3
    assert _reported(out, r"they follow within ([0-9.e+-]+)°") < 1e-3
    # Live turns from the last pose: played again from frame 10, its twist differs. Said, with the figure.
    looped = _reported(out, r"played again from the last frame, the followed bones stray up to ([0-9.e+-]+)°")
    assert looped == pytest.approx(_follow_angle(rig, range(1, 11)), rel=1e-2)
    assert looped > 1.0  # measured: 10.6° (triangulation), 13° (Jacobian)


def test_live_chains_on_the_fk_side(scene, capfd):
    rig, target, item = _live_arm()
    fk_live = rig.chain_ik.chains.add()
    fk_live.name, fk_live.tip, fk_live.chain_length, fk_live.target = "FK", "f2", 2, add_empty("G", (0.5, 0.5, 1.5))
    fk_live.live = True
    bpy.context.view_layer.update()
    capfd.readouterr()
    assert bpy.ops.chain_ik.bake_fk(pairs="f1:a1, f2:a2", frame_start=1, frame_end=4) == {"FINISHED"}
    assert "Live switched off on 'FK': it posed FK bones" in capfd.readouterr().out
    assert not fk_live.live and item.live
    # A Live chain led by an FK bone (its target is one) would chase the keys: refused, nothing keyed.
    item.target, item.target_bone = rig, "f2"
    keys_before = len(rig.animation_data.action.fcurves) if bpy.app.version < (4, 4) else None
    with pytest.raises(RuntimeError, match="Live chain 'Arm' moves with the FK bones \\(through 'f1'\\)"):
        bpy.ops.chain_ik.bake_fk(pairs="f1:a1, f2:a2", frame_start=1, frame_end=4)
    if keys_before is not None:
        assert len(rig.animation_data.action.fcurves) == keys_before


def test_a_live_chain_that_cannot_be_solved_stops_the_bake(scene):
    rig, target, item = _live_arm()
    bpy.data.objects.remove(target)
    with pytest.raises(RuntimeError, match="Live chain 'Arm' cannot be solved at frame 1: .*nothing was keyed"):
        bpy.ops.chain_ik.bake_fk(pairs="f1:a1, f2:a2", frame_start=1, frame_end=4)
    assert rig.animation_data is None or rig.animation_data.action is None


def _odd_fk_channels(rig) -> None:
    """Channels a matrix round trip would change: an Euler Z past a full turn, an unnormalised
    quaternion with a negative w, a location and a scale."""
    f1, f2 = rig.pose.bones["f1"], rig.pose.bones["f2"]
    f1.rotation_mode = "XYZ"
    f1.rotation_euler = (0.1, -0.2, math.radians(370.0))
    f1.location, f1.scale = (0.01, 0.02, -0.03), (1.0, 1.1, 0.9)
    f2.rotation_quaternion = (-0.9, 0.1, 0.2, 0.3)


@pytest.mark.parametrize(
    "refusal", ["live target deleted", "keyed, then changed", "limb follows fk", "fk follows itself"]
)
def test_a_refused_bake_leaves_every_channel_bit_identical(scene, refusal):
    """Was: a refused IK -> FK bake put the FK bones back through matrix_basis (370° became 10°, the
    quaternion normalised and its sign flipped), with no undo step."""
    from builders import channel_state

    rig, target, item = _live_arm()
    if refusal == "keyed, then changed":  # keys on the FK bones, and a change not keyed (yet): both kept
        for frame in (1, 4):
            rig.pose.bones["f1"].keyframe_insert("rotation_quaternion", frame=frame)
            rig.pose.bones["f1"].keyframe_insert("location", frame=frame)
        refusal = "live target deleted"
    _odd_fk_channels(rig)
    if refusal == "live target deleted":
        bpy.data.objects.remove(target)
        pairs, match = "f1:a1, f2:a2", "cannot be solved at frame 1"
    elif refusal == "limb follows fk":
        item.live = False
        con = rig.pose.bones["a1"].constraints.new("COPY_ROTATION")  # the followed bone follows f1
        con.target, con.subtarget = rig, "f1"
        pairs, match = "f1:a1, f2:a2", "'a1' moves with the FK bones"
    else:
        pairs, match = "f1:f1", "cannot follow itself"
    bpy.context.view_layer.update()
    before = channel_state(rig)
    curves = sorted((fc.data_path, fc.array_index, len(fc.keyframe_points)) for fc in _curves(rig))
    with pytest.raises(RuntimeError, match=match):
        bpy.ops.chain_ik.bake_fk(pairs=pairs, frame_start=1, frame_end=4)
    assert channel_state(rig) == before
    assert sorted((fc.data_path, fc.array_index, len(fc.keyframe_points)) for fc in _curves(rig)) == curves


def _curves(obj) -> list:
    return _fcurves(obj) if obj.animation_data and obj.animation_data.action else []


def test_the_dependency_check_puts_the_channels_back_exactly_before_baking(scene):
    rig, target, item = _live_arm()
    item.live = False
    _odd_fk_channels(rig)
    from builders import channel_state

    before = channel_state(rig)
    # Nothing keyed on f1/f2 before; the check turns them, then the bake starts from them as they were.
    ext = __import__("chain_ik")
    plan = ext.rig.fk_follow.make_plan(rig, [("f1", "a1"), ("f2", "a2")])
    ext.app.bake.fk_bake.check_independent(bpy.context, rig, plan)
    assert channel_state(rig) == before


def _fast_arm():
    """a1-a2 under Blender's IK toward a target that swings fast (a new side every few frames)."""
    rig = make_armature(
        [
            ("a1", (0, 0, 0), (0, 0, 1), None, False, 0.0),
            ("a2", (0, 0, 1), (0, 0.3, 2), "a1", True, 0.0),
            ("f1", (0, 0, 0), (0, 0, 1), None, False, 0.0),
            ("f2", (0, 0, 1), (0, 0.3, 2), "f1", True, 0.0),
        ]
    )
    target = add_empty(location=(0.8, 0.4, 1.2))
    rig.pose.bones["a2"].constraints.new("IK").target = target
    for frame in range(1, 16):
        target.location = (1.2 * math.cos(frame), 1.2 * math.sin(frame), 1.2)
        target.keyframe_insert("location", frame=frame)
    return rig


def test_with_a_step_every_frame_of_the_range_is_measured_and_said(scene, capfd):
    """Was: with step 7 only the 3 keyed frames were measured: 'follow within 2.1e-05°' while the
    FK bones missed by 87° in between."""
    rig = _fast_arm()
    capfd.readouterr()
    assert bpy.ops.chain_ik.bake_fk(pairs="f1:a1, f2:a2", frame_start=1, frame_end=15, step=7) == {"FINISHED"}
    out = capfd.readouterr().out
    worst = 0.0
    for frame in range(1, 16):
        bpy.context.scene.frame_set(frame)
        pose = rig.pose.bones
        worst = max(worst, *(_angle64(pose[f].matrix, pose[a].matrix) for f, a in (("f1", "a1"), ("f2", "a2"))))
    assert worst > 10.0  # the keys' interpolation cannot follow a target this fast
    said = _reported(out, r"on playback over every frame 1-15 they stray up to ([0-9.e+-]+)°")
    assert said == pytest.approx(worst, rel=1e-2)
    assert _reported(out, r"at the 3 keyed frames within ([0-9.e+-]+)°") < 1e-3
    assert "between the keys (one every 7 frames) the FK bones stray up to" in out and "smaller step" in out
    assert "follow within" not in out
    # Every frame keyed: every frame follows, and it says so.
    capfd.readouterr()
    assert bpy.ops.chain_ik.bake_fk(pairs="f1:a1, f2:a2", frame_start=1, frame_end=15) == {"FINISHED"}
    out = capfd.readouterr().out
    assert _reported(out, r"on playback over every frame 1-15 they follow within ([0-9.e+-]+)°") < 1e-3
    assert "keyed frames" not in out and "Warning" not in out


def test_with_a_step_a_live_chain_is_followed_through_every_frame_as_playback_plays_it(scene, capfd):
    """Live turns from the frame before: the keys' pass plays every frame of the range, as the
    playback that measures them does, so the keyed frames hold."""
    rig, target, item = _live_arm()
    capfd.readouterr()
    assert bpy.ops.chain_ik.bake_fk(pairs="f1:a1, f2:a2", frame_start=1, frame_end=10, step=3) == {"FINISHED"}
    out = capfd.readouterr().out
    assert _reported(out, r"at the 4 keyed frames within ([0-9.e+-]+)°") < 1e-3, out


def _hide(pbone) -> None:
    """Hide a bone in Pose Mode as the Bone tab's Hide does (PoseBone.hide in 5.0, Bone.hide in 4.2)."""
    if "hide" in pbone.bl_rna.properties:
        pbone.hide = True
    else:
        pbone.bone.hide = True


@pytest.mark.parametrize("how", ["hidden", "hidden collection"])
def test_a_hidden_control_is_not_taken_though_selected(scene, capfd, how):
    """Was: on 5.0 a bone hidden in Pose Mode (PoseBone.hide) but still selected was keyed."""
    rig = make_armature(
        [
            ("ORG-a.L", (0, 0, 0), (0, 0, 1), None, False, 0.0),
            ("ORG-b.L", (0, 0, 1), (0, 0.3, 2), "ORG-a.L", True, 0.0),
            ("a_fk.L", (0, 0, 0), (0, 0, 1), None, False, 0.0),
            ("b_fk.L", (0, 0, 1), (0, 0.3, 2), "a_fk.L", True, 0.0),
        ]
    )
    rig.pose.bones["ORG-b.L"].constraints.new("IK").target = add_empty(location=(0.8, 0.4, 1.2))
    for pb in rig.pose.bones:
        _select(pb, pb.name.endswith("_fk.L"))
    hidden = rig.pose.bones["b_fk.L"]
    if how == "hidden":
        _hide(hidden)
    else:
        collection = rig.data.collections.new("FK hidden")
        collection.assign(hidden.bone)
        collection.is_visible = False
    capfd.readouterr()
    assert bpy.ops.chain_ik.bake_fk(frame_start=1, frame_end=2) == {"FINISHED"}
    assert "onto a_fk.L:" in capfd.readouterr().out
    assert all('"b_fk.L"' not in fc.data_path for fc in _fcurves(rig))
    _select(rig.pose.bones["a_fk.L"], False)  # only the hidden one selected: none to bake
    with pytest.raises(RuntimeError, match="select the FK control bones"):
        bpy.ops.chain_ik.bake_fk(frame_start=1, frame_end=2)


def test_rigify_fk_follows_an_adopted_live_ik_chain(rigify_file, capfd):
    """Rigify's ORG bones copy the MCH IK bones through constraints: a Live chain adopted from the
    arm's IK constraint poses them from there, not from above, and is still followed frame by frame."""
    rig = _open(rigify_file)
    rig.pose.bones["upper_arm_parent.L"]["IK_FK"] = 0.0
    _animate(rig, "hand_ik.L", Vector((-0.15, 0.25, 0.3)))
    assert bpy.ops.chain_ik.chains_from_constraints() == {"FINISHED"}
    arm = rig.chain_ik.chains["MCH-forearm_ik.L"]
    arm.live = True
    bpy.context.scene.frame_set(FRAMES[0])
    capfd.readouterr()
    assert bpy.ops.chain_ik.bake_fk(pairs=", ".join(ARM), frame_start=FRAMES[0], frame_end=FRAMES[1]) == {"FINISHED"}
    out = capfd.readouterr().out
    assert "Live chain(s) 'MCH-forearm_ik.L' solved at every frame" in out, out
    assert _reported(out, r"they follow within ([0-9.e+-]+)°") < 1e-3
