"""A planted bake's rotation keys play continuously with the kept keys around them, in every rotation
mode (rig.key_continuity): a built walk whose leg bones are keyed the way Blender converts a rotation
(axis-angle with its angle positive, so the axis turns over where a swing passes zero; quaternions
with w positive; Euler angles), contacts detected on a ground plane, baked over the whole range and
over part of it (a user's trial: axis-angle keys of 'thigh.L' met a kept key the other way round,
the half frame between them playing a near-zero axis instead of ~9 degrees)."""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest
from builders import make_armature
from mathutils import Euler, Quaternion

MODES = ("QUATERNION", "AXIS_ANGLE", "XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")
FIRST, LAST, PERIOD = 1, 120, 32
SWING, KNEE = 0.35, 0.9
LEGS = [f"{part}.{side}" for side in "LR" for part in ("thigh", "shin", "foot")]


def channels(pbone) -> str:
    return {"QUATERNION": "rotation_quaternion", "AXIS_ANGLE": "rotation_axis_angle"}.get(
        pbone.rotation_mode, "rotation_euler"
    )


def set_rotation(pbone, angle: float) -> None:
    """A turn about the bone's X in its mode, as Blender converts it (to_axis_angle: angle >= 0)."""
    q = Quaternion((1.0, 0.0, 0.0), angle)
    if pbone.rotation_mode == "QUATERNION":
        pbone.rotation_quaternion = q
    elif pbone.rotation_mode == "AXIS_ANGLE":
        axis, turn = q.to_axis_angle()
        pbone.rotation_axis_angle = (turn, *axis)
    else:
        pbone.rotation_euler = q.to_euler(pbone.rotation_mode)


def built_walk(mode: str, contacts: bool = True):
    """Hips walking forward 4 cm a frame, bobbing; each leg swinging (thigh), bending in its swing
    (shin), the foot about level; every leg bone keyed on every frame in `mode` (LINEAR, so a half
    frame plays the keys' mean); a ground plane under the toes and contacts detected on it (unless
    not `contacts`)."""
    bones = [("hips", (0, 0, 0.95), (0, 0, 1.1), None, False, 0.0)]
    for side, x in (("L", 0.1), ("R", -0.1)):
        bones += [
            (f"thigh.{side}", (x, 0, 0.95), (x, 0, 0.5), "hips", False, 0.0),
            (f"shin.{side}", (x, 0, 0.5), (x, 0, 0.08), f"thigh.{side}", True, 0.0),
            (f"foot.{side}", (x, 0, 0.08), (x, -0.15, 0.0), f"shin.{side}", True, 0.0),
        ]
    obj = make_armature(bones)
    bpy.ops.object.mode_set(mode="OBJECT")
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = 24, 1.0
    scene.frame_start, scene.frame_end = FIRST, LAST
    pose = obj.pose.bones
    for name in LEGS:
        pose[name].rotation_mode = mode
    for frame in range(FIRST, LAST + 1):
        phase = 2 * math.pi * (frame - FIRST) / PERIOD
        stance = []
        for side, offset in (("L", 0.0), ("R", math.pi)):
            swing = SWING * math.sin(phase + offset)
            knee = max(0.0, KNEE * math.cos(phase + offset))
            stance.append((math.cos(phase + offset), swing))
            for part, angle in (("thigh", -swing), ("shin", knee), ("foot", swing - knee)):
                pbone = pose[f"{part}.{side}"]
                set_rotation(pbone, angle)
                pbone.keyframe_insert(channels(pbone), frame=frame)
        swing = min(stance)[1]
        pose["hips"].location = (0.0, -0.87 * (1 - math.cos(swing)), 0.04 * (frame - FIRST))
        pose["hips"].keyframe_insert("location", frame=frame)
    from chain_ik.rig import keys

    for fc in keys.assigned_fcurves(obj):
        for point in fc.keyframe_points:
            point.interpolation = "LINEAR"
    for side in "LR":
        item = obj.chain_ik.chains.add()
        item.name, item.tip, item.chain_length, item.use_tail = f"{side} leg", f"foot.{side}", 3, True
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    if contacts:
        bpy.ops.mesh.primitive_plane_add(size=20.0, location=(0.0, 0.0, 0.0))
        obj.chain_ik.ground = bpy.context.object
        bpy.context.view_layer.objects.active = obj
        assert bpy.ops.chain_ik.detect_contacts(frame_start=FIRST, frame_end=LAST) == {"FINISHED"}
    return obj


def rotation(mode: str, values) -> Quaternion:
    if mode == "QUATERNION":
        return Quaternion(values).normalized()
    if mode == "AXIS_ANGLE":
        return Quaternion(values[1:], values[0]) if math.hypot(*values[1:]) > 0 else Quaternion()
    return Euler(values, mode).to_quaternion()


def played(obj, name: str, frame: float) -> Quaternion:
    from chain_ik.rig import keys

    pbone = obj.pose.bones[name]
    path = keys.data_path(name, channels(pbone))
    curves = {fc.array_index: fc for fc in keys.assigned_fcurves(obj) if fc.data_path == path}
    return rotation(pbone.rotation_mode, [curves[i].evaluate(frame) for i in sorted(curves)])


def angle(a: Quaternion, b: Quaternion) -> float:
    turn = a.rotation_difference(b).angle
    return min(turn, 2 * math.pi - turn)


def worst_half_frames(obj, first: int, last: int) -> list[tuple[float, float, str, float]]:
    """Per half frame of [first, last] and leg bone: (how far the played rotation is from the slerp
    of the whole frames either side, less the turn between them, name, frame), worst first."""
    out = []
    for name in LEGS:
        for frame in range(first, last):
            a, b = played(obj, name, frame), played(obj, name, frame + 1)
            off = angle(played(obj, name, frame + 0.5), a.slerp(b, 0.5))
            out.append((off - angle(a, b), off, name, frame + 0.5))
    return sorted(out, reverse=True)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("first, last", [(FIRST, LAST), (20, 100)])
def test_planted_keys_play_continuously_with_the_kept_ones(scene, mode, first, last):
    obj = built_walk(mode)
    result = bpy.ops.chain_ik.bake(frame_start=first, frame_end=last, interpolation="LINEAR")
    assert result == {"FINISHED"}
    # A flip plays about the whole rotation away from the slerp halfway; where axis-angle keys must
    # turn their axis over (the kept keys either side have it both ways: the input's own flips
    # where a swing passes zero) the switch sits where the rotation passes zero, less than the
    # frame's turn away. Quaternion and Euler keys of these swings play the slerp itself.
    excess, off, name, frame = worst_half_frames(obj, first, last)[0]
    if mode == "AXIS_ANGLE":
        assert excess <= math.radians(0.05), (name, frame, math.degrees(off))
    else:
        assert off <= math.radians(0.05), (name, frame, math.degrees(off))
    # The legs were written (the planting changed them).
    from chain_ik.rig import keys

    written = {fc.data_path for fc in keys.assigned_fcurves(obj) if "thigh.L" in fc.data_path}
    assert written


def test_the_user_trial_half_frame_plays_its_rotation(scene):
    """s4b_axis: frames 20-100, axis-angle, contacts; the half frames 62.5 and 94.5 of 'thigh.L'."""
    obj = built_walk("AXIS_ANGLE")
    assert bpy.ops.chain_ik.bake(frame_start=20, frame_end=100) == {"FINISHED"}
    for frame in (62.5, 94.5):
        a, b = played(obj, "thigh.L", math.floor(frame)), played(obj, "thigh.L", math.ceil(frame))
        assert angle(played(obj, "thigh.L", frame), a.slerp(b, 0.5)) < math.radians(3.0), frame


def test_meet_switches_where_an_axis_angle_passes_zero(ext):
    from chain_ik.rig import key_continuity, modes

    turns = np.linspace(-0.3, 0.25, 12)  # about X, passing zero between the 6th and 7th frames
    quats = np.array([Quaternion((1, 0, 0), t)[:] for t in turns])
    before = np.array([0.35, -1.0, 0.0, 0.0])  # the kept keys: angle positive, axis either way
    after = np.array([0.3, 1.0, 0.0, 0.0])
    values = modes.series_values("AXIS_ANGLE", quats, tuple(before))
    assert values[-1, 1] < 0.0  # continuous from the key before: the other way round from the one after
    met = key_continuity.meet("AXIS_ANGLE", values, quats, before, after)
    assert np.array_equal(met[:6], values[:6])
    assert np.all(met[6:, 1] > 0.0)
    for row, q in zip(met, quats, strict=True):  # the same rotations
        assert angle(rotation("AXIS_ANGLE", row), Quaternion(q)) < 1e-6
    # Values meeting both sides are returned as they are.
    assert key_continuity.meet("AXIS_ANGLE", met, quats, before, after) is met
    # No key after (a bake range's last frame): continuous from the one before.
    assert key_continuity.meet("AXIS_ANGLE", values, quats, before, None) is values


@pytest.mark.parametrize("mode", ["QUATERNION", "XYZ"])
def test_meet_turns_quaternions_and_euler_to_the_kept_key_after(ext, mode):
    """A stretch whose key after holds its rotation the other way (-q; Euler a full turn on) with a
    key before that has no angle (any representation meets it): the stretch takes the one after's."""
    from chain_ik.rig import key_continuity, modes

    quats = np.array([Quaternion((0, 0, 1), t)[:] for t in np.linspace(0.1, 0.6, 8)])
    values = modes.series_values(mode, quats, (1.0, 0.0, 0.0, 0.0) if mode == "QUATERNION" else (0.0, 0.0, 0.0))
    last = Quaternion((0, 0, 1), 0.65)
    if mode == "QUATERNION":
        after, other = -np.array(last[:]), -values
    else:
        after, other = np.array(last.to_euler(mode)[:]) + (0, 0, 2 * math.pi), values + (0, 0, 2 * math.pi)
    assert np.allclose(key_continuity.meet(mode, values, quats, None, after), other, atol=1e-5)


@pytest.mark.parametrize("mode", ["AXIS_ANGLE", "QUATERNION", "XYZ"])
def test_an_ordinary_bake_of_part_of_the_range_meets_the_kept_keys(scene, mode):
    """No contacts: each thigh a one-bone chain reaching for an empty that follows its input tail
    (the bake reproduces the input), baked over frames 20-100 of 1-120: the half frames 19.5 and
    100.5 between a written key and a kept one play their rotation like the others."""
    obj = built_walk(mode, contacts=False)
    scene = bpy.context.scene
    for side, item in zip("LR", obj.chain_ik.chains, strict=True):
        item.tip, item.chain_length = f"thigh.{side}", 1
        target = bpy.data.objects.new(f"Knee.{side}", None)
        scene.collection.objects.link(target)
        for frame in range(FIRST, LAST + 1):
            scene.frame_set(frame)
            target.location = obj.matrix_world @ obj.pose.bones[f"thigh.{side}"].tail
            target.keyframe_insert("location", frame=frame)
        item.target = target
    scene.frame_set(FIRST)
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.chain_ik.bake(frame_start=20, frame_end=100, interpolation="LINEAR") == {"FINISHED"}
    for name in ("thigh.L", "thigh.R"):
        for frame in (19, 100):
            a, b = played(obj, name, frame), played(obj, name, frame + 1)
            off = angle(played(obj, name, frame + 0.5), a.slerp(b, 0.5))
            assert off - angle(a, b) <= math.radians(0.05), (name, frame + 0.5, math.degrees(off))
