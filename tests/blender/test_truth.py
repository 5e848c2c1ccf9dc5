"""Results that once looked right and were not: bone names that need escaping in data paths,
armatures and targets disabled in viewports, channels that playback changes (drivers, muted
curves, F-Curve modifiers), tip errors read off the written pose, and rigs Blender's IK
solves that were refused (a child at its parent's head, float32 scale noise on long chains)."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from builders import add_empty, make_armature, playback_error, straight_chain, world_point
from mathutils import Quaternion

TOL = 1e-4


def _quoted_rig():
    """A root (keyed twisting about its axis over frames 1-20) above a 3-bone chain; every name needs escaping."""
    names = ['ro"ot', "a\\b", 'c"\\d', 'e\\"f']
    bones = [(names[0], (0, 0, 0), (0, 0, 1), None, False, 0.0)]
    for i, name in enumerate(names[1:], start=1):
        bones.append((name, (0, 0, i), (0, 0, i + 1), names[i - 1], True, 0.0))
    obj = make_armature(bones)
    root = obj.pose.bones[names[0]]
    root.rotation_quaternion = (1, 0, 0, 0)
    root.keyframe_insert("rotation_quaternion", frame=1)
    root.rotation_quaternion = Quaternion((0, 1, 0), 1.2)
    root.keyframe_insert("rotation_quaternion", frame=20)
    bpy.context.scene.frame_set(1)
    return obj, names


def test_bake_follows_an_animated_parent_whose_name_needs_escaping(scene):
    obj, names = _quoted_rig()
    target = add_empty("T", (1.2, 0.4, 2.5))
    result = bpy.ops.chain_ik.bake(tip=names[-1], chain_length=3, target="T", frame_start=1, frame_end=20)
    assert result == {"FINISHED"}
    assert playback_error(obj, names[-1], target, range(1, 21)) < TOL


def test_bake_sees_animated_locations_on_chain_bones_whose_names_need_escaping(scene):
    obj, names = _quoted_rig()
    middle = obj.pose.bones[names[2]]
    middle.location = (0.0, 0.0, 0.0)
    middle.keyframe_insert("location", frame=1)
    middle.location = (0.3, 0.0, 0.2)
    middle.keyframe_insert("location", frame=20)
    target = add_empty("T", (1.2, 0.4, 2.5))
    result = bpy.ops.chain_ik.bake(tip=names[-1], chain_length=3, target="T", frame_start=1, frame_end=20)
    assert result == {"FINISHED"}
    assert playback_error(obj, names[-1], target, range(1, 21)) < TOL


@pytest.mark.parametrize("op", ["solve", "bake"])
def test_an_armature_disabled_in_viewports_is_refused(scene, capsys, op):
    """It is not evaluated: its pose and transform would be stale (the move below never reaches it)."""
    obj = straight_chain(3)
    add_empty("T", (1.0, 0.0, 2.0))
    obj.hide_viewport = True
    obj.location = (5.0, 0.0, 0.0)
    before = [tuple(pb.rotation_quaternion) for pb in obj.pose.bones]
    kwargs = {"frame_start": 1, "frame_end": 3} if op == "bake" else {}
    with pytest.raises(RuntimeError, match="disabled in viewports"):
        getattr(bpy.ops.chain_ik, op)(tip="b2", chain_length=3, target="T", **kwargs)
    assert [tuple(pb.rotation_quaternion) for pb in obj.pose.bones] == before
    assert obj.animation_data is None or obj.animation_data.action is None


def _keyed_chain():
    obj = straight_chain(3)
    for name in ("b0", "b1", "b2"):
        obj.pose.bones[name].keyframe_insert("rotation_quaternion", frame=1)
    return obj


def _fcurve(obj, path: str, index: int):
    from chain_ik.rig.keys import action_fcurves

    return next(
        fc for fc in action_fcurves(obj.animation_data.action) if (fc.data_path, fc.array_index) == (path, index)
    )


def test_bake_warns_of_muted_curves_and_modifiers_on_baked_channels(scene, capsys):
    obj = _keyed_chain()
    _fcurve(obj, 'pose.bones["b1"].rotation_quaternion', 2).mute = True
    _fcurve(obj, 'pose.bones["b2"].rotation_quaternion', 0).modifiers.new("NOISE")
    add_empty("T", (1.0, 0.0, 2.0))
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.chain_ik.bake(tip="b2", chain_length=3, target="T", frame_start=1, frame_end=5) == {"FINISHED"}
    out = capsys.readouterr().out
    assert "muted F-Curves on b1" in out
    assert "F-Curve modifiers on b2" in out


def test_bake_does_not_warn_of_curves_it_does_not_bake(scene, capsys):
    obj = _keyed_chain()
    obj.pose.bones["b0"].keyframe_insert("location", frame=1)
    _fcurve(obj, 'pose.bones["b0"].location', 0).modifiers.new("NOISE")
    add_empty("T", (1.0, 0.0, 2.0))
    assert bpy.ops.chain_ik.bake(tip="b2", chain_length=3, target="T", frame_start=1, frame_end=5) == {"FINISHED"}
    out = capsys.readouterr().out
    assert "F-Curve modifiers" not in out and "muted" not in out


@pytest.mark.parametrize(
    ("mode", "index"), [("QUATERNION", 3), ("AXIS_ANGLE", 3), ("XYZ", 2), ("ZXY", 0), ("QUATERNION", None)]
)
def test_playback_overrides_look_at_every_channel_of_the_rotation(scene, mode, index):
    """rig.keys.playback_overrides finds each baked bone's rotation curves by path and index (every
    channel of its mode: the 4th of a quaternion or axis-angle too) and their group: a curve
    playback skips (muted, or in a muted group on 4.2's actions) and a modifier in use on any
    channel are named; other bones' curves are not."""
    from chain_ik.rig import keys

    obj = straight_chain(3)
    for name in ("b1", "b2"):
        pb = obj.pose.bones[name]
        pb.rotation_mode = mode
        pb.keyframe_insert(keys.rotation_property(pb), frame=1, group=name)
    path = keys.data_path("b1", keys.rotation_property(obj.pose.bones["b1"]))
    curve = keys.assigned_fcurve(obj, path, index or 0)
    assert curve is not None and curve.group is not None
    if index is None:
        curve.group.mute = True
    else:
        curve.mute = True
    # Whether playback skips the curve (a muted group's: on 4.2's actions, not 5.0's layered ones)
    keyed = curve.evaluate(1.0)
    obj.path_resolve(path)[index or 0] = keyed + 0.25
    bpy.context.scene.frame_set(1)
    skipped = obj.path_resolve(path)[index or 0] != np.float32(keyed)
    assert skipped or (index is None and bpy.app.version >= (4, 4))
    want = {"muted F-Curves": ("b1",)} if skipped else {}
    assert keys.playback_overrides(obj, ["b0", "b1", "b2"]) == want
    assert keys.playback_overrides(obj, ["b2"]) == {}
    curve.group.mute = curve.mute = False
    curve.modifiers.new("NOISE")
    assert keys.playback_overrides(obj, ["b1", "b2"]) == {"F-Curve modifiers": ("b1",)}
    curve.modifiers[0].mute = True  # a muted modifier changes nothing
    assert keys.playback_overrides(obj, ["b1", "b2"]) == {}


def _panel_chain(obj, target):
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target = "b2", 3, target
    return item


def test_solve_warns_of_drivers_and_stores_the_error_of_the_written_pose(scene, capsys):
    obj = straight_chain(3)
    fcurve = obj.pose.bones["b1"].driver_add("rotation_quaternion", 1)
    fcurve.driver.expression = "0.5"
    target = add_empty("T", (1.0, 0.0, 2.0))
    item = _panel_chain(obj, target)
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    out = capsys.readouterr().out
    assert "drivers on the rotation of b1" in out
    written = float(np.linalg.norm(world_point(obj, "b2") - np.array(target.location)))
    assert written > 0.05
    assert item.result.error == pytest.approx(written, rel=1e-4, abs=1e-6)
    assert f"tip error {written:.3g}" in out


def test_solve_reports_the_error_a_chain_constraint_leaves(scene, capsys):
    obj = straight_chain(3)
    con = obj.pose.bones["b1"].constraints.new("LIMIT_ROTATION")
    con.use_limit_x = con.use_limit_y = con.use_limit_z = True
    target = add_empty("T", (1.0, 0.0, 2.0))
    item = _panel_chain(obj, target)
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    written = float(np.linalg.norm(world_point(obj, "b2") - np.array(target.location)))
    assert written > 0.05
    assert item.result.error == pytest.approx(written, rel=1e-4, abs=1e-6)


def test_solve_follows_a_target_disabled_in_viewports(scene):
    """As Blender's IK constraint does: the target's own transform, not a stale matrix."""
    obj = straight_chain(3)
    parent = add_empty("P", (0.5, 0.0, 0.0))
    target = add_empty("T", (0.5, 0.0, 2.0))
    target.parent = parent
    bpy.context.view_layer.update()
    target.hide_viewport = True
    target.location = (0.5, 0.5, 2.0)  # world (1.0, 0.5, 2.0) through the parent
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.chain_ik.solve(tip="b2", chain_length=3, target="T") == {"FINISHED"}
    assert np.linalg.norm(world_point(obj, "b2") - np.array((1.0, 0.5, 2.0))) < TOL


def test_bake_follows_an_animated_target_disabled_in_viewports(scene):
    obj = straight_chain(3)
    obj.pose.bones["b0"].constraints.new("COPY_SCALE")  # any constraint: the per-frame path
    target = add_empty("T", (1.0, 0.0, 2.0))
    target.keyframe_insert("location", frame=1)
    target.location = (0.0, 1.0, 2.2)
    target.keyframe_insert("location", frame=10)
    target.hide_viewport = True
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.chain_ik.bake(tip="b2", chain_length=3, target="T", frame_start=1, frame_end=10) == {"FINISHED"}
    target.hide_viewport = False
    assert playback_error(obj, "b2", target, range(1, 11)) < TOL


@pytest.mark.parametrize("muted", ["curve", "group"])
def test_a_target_disabled_in_viewports_plays_its_curves_as_blender_does(scene, muted):
    """rig.unevaluated's stand-in transform skips the curves playback skips: a muted one, and on
    4.2's actions a muted group's (5.0's layered actions play those)."""
    from chain_ik.rig import unevaluated

    target = add_empty("T", (1.0, 0.0, 2.0))
    target.keyframe_insert("location", frame=1, group="G")
    target.location = (0.0, 1.0, 2.2)
    target.keyframe_insert("location", frame=10, group="G")
    curve = next(fc for fc in _target_curves(target) if fc.array_index == 1)
    if muted == "curve":
        curve.mute = True
    else:
        curve.group.mute = True
    target.location = (0.3, 0.4, 0.5)
    target.hide_viewport = True
    stand_in = unevaluated.world_matrix(target, bpy.context.evaluated_depsgraph_get(), 5.0)
    target.hide_viewport = False
    bpy.context.scene.frame_set(5)
    assert np.allclose(np.array(stand_in), np.array(target.matrix_world), atol=1e-6)


def _target_curves(ob) -> list:
    from chain_ik.rig.keys import assigned_fcurves

    return assigned_fcurves(ob)


@pytest.mark.parametrize("op", ["solve", "bake"])
def test_a_disconnected_child_at_its_parents_head_is_solved(scene, op):
    """Blender's IK solves it; the parent's turn only turns the child there."""
    bones = [
        ("a", (0, 0, 0), (0, 0, 1), None, False, 0.0),
        ("b", (0, 0, 0), (0, 0.2, 1), "a", False, 0.0),
        ("c", (0, 0.2, 1), (0, 0.2, 2), "b", True, 0.0),
    ]
    obj = make_armature(bones)
    target = add_empty("T", (0.8, 0.3, 1.4))
    kwargs = {"frame_start": 1, "frame_end": 3} if op == "bake" else {}
    assert getattr(bpy.ops.chain_ik, op)(tip="c", chain_length=3, target="T", **kwargs) == {"FINISHED"}
    assert np.linalg.norm(world_point(obj, "c") - np.array(target.location)) < TOL


def test_a_hundred_bone_chain_with_float32_scale_noise_is_accepted(scene):
    n = 100
    obj = straight_chain(n)
    rng = np.random.default_rng(3)
    for i in range(n):
        obj.pose.bones[f"b{i}"].scale = tuple(1.0 + 1e-6 * rng.uniform(0.5, 1.0, 3) * (1, -1, 1))
    target = add_empty("T", (20.0, 0.0, 60.0))
    assert bpy.ops.chain_ik.solve(tip=f"b{n - 1}", chain_length=n, target="T", method="fabrik") == {"FINISHED"}
    assert np.linalg.norm(world_point(obj, f"b{n - 1}") - np.array(target.location)) < 1e-2  # FABRIK tolerance + noise


def test_a_pole_disabled_in_viewports_is_followed(scene):
    obj = straight_chain(3)
    add_empty("T", (1.0, 0.0, 2.0))
    pole = add_empty("Pole", (0.0, 0.0, 0.0))
    kwargs = {"tip": "b2", "chain_length": 3, "target": "T", "pole": "Pole", "method": "fabrik"}
    pole.location = (0.0, -2.0, 1.0)
    assert bpy.ops.chain_ik.solve(**kwargs) == {"FINISHED"}
    seen = [tuple(pb.rotation_quaternion) for pb in obj.pose.bones]
    for pb in obj.pose.bones:
        pb.rotation_quaternion = (1, 0, 0, 0)
    pole.location = (0.0, 0.0, 0.0)
    bpy.context.view_layer.update()
    pole.hide_viewport = True
    pole.location = (0.0, -2.0, 1.0)  # never evaluated: its matrix_world still says the origin
    assert bpy.ops.chain_ik.solve(**kwargs) == {"FINISHED"}
    assert np.allclose([tuple(pb.rotation_quaternion) for pb in obj.pose.bones], seen, atol=1e-6)


def test_a_target_disabled_in_viewports_that_cannot_be_followed_is_refused_by_name(scene):
    obj = straight_chain(3)
    target = add_empty("T", (1.0, 0.0, 2.0))
    target.constraints.new("COPY_LOCATION")
    target.hide_viewport = True
    bpy.context.view_layer.objects.active = obj
    with pytest.raises(RuntimeError, match="target 'T' is disabled in viewports.*has constraints"):
        bpy.ops.chain_ik.solve(tip="b2", chain_length=3, target="T")


@pytest.mark.parametrize("locked", [False, True])
def test_live_stores_the_error_of_the_written_pose(scene, locked):
    """Live's panel figures come from the pose it wrote: a lock that keeps the tip away is not
    shown as reached with the solver's zero error."""
    obj = straight_chain(3)
    target = add_empty(location=(1.0, 0.5, 2.0))
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target = "b2", 3, target
    if locked:
        obj.pose.bones["b1"].lock_rotation = (True, True, True)
    item.live = True
    target.location = (1.0, 0.4, 1.9)
    bpy.context.view_layer.update()  # Live solves and writes
    actual = float(np.linalg.norm(world_point(obj, "b2") - np.array(target.location[:])))
    assert item.has_result and item.result.error == pytest.approx(actual, abs=1e-6)
    assert item.result.reached is (not locked)
    assert (actual > 0.1) is locked
