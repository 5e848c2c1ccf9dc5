"""IK Stretch across bakes (user11): whether a stretch bake is refused depends on the scene alone,
not on the keys earlier bakes left; a bake with Stretch off after a Stretch bake names the scale
keys that bake left when they shear the chain, and bakes once they are cleared."""

from __future__ import annotations

import math

import bpy
import pytest
from builders import add_empty, metarig
from mathutils import Vector

BONES = ("upper_arm.L", "forearm.L", "hand.L")
FRAMES = (1, 40)


def _arm(location=(0.0, 0.0, 0.0), turn: float = 0.0, scale: float = 1.0):
    """The metarig's left arm as one chain, its target from within to beyond reach (frames 1-40)."""
    obj = metarig(location=location, turn=turn, scale=scale)
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.method = "hand.L", 3, "triangulation"
    bpy.ops.object.mode_set(mode="OBJECT")
    shoulder = obj.matrix_world @ obj.data.bones["upper_arm.L"].head_local
    reach = sum(obj.data.bones[n].length for n in BONES) * scale
    goal = add_empty("Goal")
    way = Vector((0.6, -0.5, -0.3)).normalized()
    for f in range(FRAMES[0], FRAMES[1] + 1):
        goal.location = shoulder + way * reach * (0.9 + 0.2 * f / 40) + Vector((0, 0.002 * f, 0))
        goal.keyframe_insert("location", frame=f)
    item.target = goal
    bpy.context.view_layer.objects.active = obj
    return obj, goal


def _stretch(obj, weight: float) -> None:
    for n in BONES:
        obj.pose.bones[n].ik_stretch = weight


def _bake():
    return bpy.ops.chain_ik.bake(chain_index=0, frame_start=FRAMES[0], frame_end=FRAMES[1])


def _shear(m3) -> float:
    """The largest angle (radians) by which the bone's axes depart from right angles."""
    x, y, z = (m3.col[i].normalized() for i in range(3))
    return max(abs(math.asin(max(-1.0, min(1.0, a.dot(b))))) for a, b in ((x, y), (y, z), (x, z)))


def _played(obj, goal) -> tuple[float, float, float]:
    """(worst forearm shear, worst tip error, largest upper arm Y scale) over the baked frames."""
    shear = miss = y = 0.0
    for f in range(FRAMES[0], FRAMES[1] + 1):
        bpy.context.scene.frame_set(f)
        pose = obj.pose.bones
        shear = max(shear, _shear(pose["forearm.L"].matrix.to_3x3()))
        miss = max(miss, ((obj.matrix_world @ pose["hand.L"].tail) - goal.matrix_world.translation).length)
        y = max(y, pose["upper_arm.L"].scale[1])
    return shear, miss, y


@pytest.mark.parametrize("earlier", ["none", "plain bake"])
@pytest.mark.parametrize(("location", "turn", "scale"), [((0.0, 0.0, 0.0), 0.0, 1.0), ((1.0, -2.0, 0.3), 0.6, 1.3)])
def test_stretch_bake_verdict_does_not_depend_on_earlier_keys(scene, rigify, location, turn, scale, earlier):
    """Connected arm bones, Inherit Scale Full: the chain stretches straight, so the forearm follows
    its parent's stretch along its own axis and Blender does not shear it. The bake is accepted on
    a fresh pose (was refused: float32 noise in the links read as a gap sideways) as after a plain
    bake of the same range, and plays back unsheared, on target, stretched."""
    obj, goal = _arm(location, turn, scale)
    if earlier == "plain bake":
        assert _bake() == {"FINISHED"}
    _stretch(obj, 0.1)
    bpy.context.scene.frame_set(1)
    assert _bake() == {"FINISHED"}
    shear, miss, y = _played(obj, goal)
    assert shear < 1e-5 and miss < 1e-5 * scale and y > 1.02, (shear, miss, y)


def test_a_real_gap_still_refused_in_a_bake(scene, rigify):
    """The same arm with the forearm moved off the upper arm's tail, sideways (a gap Blender's Full
    inheritance shears across): the stretch bake is refused, naming the bone, and keys nothing."""
    obj, _ = _arm()
    _stretch(obj, 0.1)
    bpy.ops.object.mode_set(mode="EDIT")
    fore = obj.data.edit_bones["forearm.L"]
    fore.use_connect = False
    fore.head += obj.data.edit_bones["upper_arm.L"].x_axis * 0.02  # sideways of the upper arm's tail
    bpy.ops.object.mode_set(mode="OBJECT")
    with pytest.raises(RuntimeError, match="bone 'forearm.L' inherits the stretch"):
        _bake()
    action = obj.animation_data.action if obj.animation_data else None
    assert action is None or not [c for c in _fcurves(obj) if "scale" in c.data_path]


def _fcurves(obj):
    from chain_ik.rig import keys

    return keys.assigned_fcurves(obj)


def test_stretch_off_rebake_names_the_scale_keys_a_stretch_bake_left(scene, rigify):
    """Plain bake, Stretch bake (keys scale[1] on the chain bones), IK Stretch back to 0, the same
    range again: the Y scale keys the Stretch bake left shear the forearm, so the bake is refused
    (nothing keyed), and the message names them (bone, channel, frames) and how to clear them.
    Cleared as it says, the bake runs and plays back unstretched and on target within reach."""
    obj, goal = _arm()
    assert _bake() == {"FINISHED"}
    _stretch(obj, 0.1)
    assert _bake() == {"FINISHED"}
    _stretch(obj, 0.0)
    before = {(c.data_path, c.array_index): [tuple(k.co) for k in c.keyframe_points] for c in _fcurves(obj)}
    with pytest.raises(RuntimeError) as exc:
        _bake()
    message = str(exc.value)
    assert "bone 'forearm.L' inherits a non-uniform scale" in message
    assert "'upper_arm.L' Y Scale (scale[1]) keyed on frames 1-40" in message, message
    assert "IK Stretch" in message and "delete those keys" in message, message
    after = {(c.data_path, c.array_index): [tuple(k.co) for k in c.keyframe_points] for c in _fcurves(obj)}
    assert after == before
    for c in list(_fcurves(obj)):  # as the message says: delete the Y Scale keys
        if c.data_path.endswith(".scale") and c.array_index == 1:
            for k in reversed(list(c.keyframe_points)):
                c.keyframe_points.remove(k)
    for n in BONES:
        obj.pose.bones[n].scale = (1.0, 1.0, 1.0)
    assert _bake() == {"FINISHED"}
    shear, _, y = _played(obj, goal)
    assert shear < 1e-5 and y == 1.0


def test_an_angle_bound_past_45_degrees_is_refused():
    """The shear Blender gives a bone inheriting a stretch grows with its angle off the parent's axis
    only up to 45 degrees (0 again at 90, where it stretches the bone across instead): a bound
    beyond that is refused, not read as no shear (review11b)."""
    from chain_ik.rig import stretch as rig_stretch

    assert rig_stretch._unsheared(1e-6, 1.5)  # float32 noise on connected bones
    assert not rig_stretch._unsheared(0.01, 1.5)  # a real gap: sheared beyond the tolerance
    for angle in (math.pi / 2, math.pi, 2.0):
        assert not rig_stretch._unsheared(angle, 1.5)
