"""Move Root (issue 20 item 1) in real Blender: Rigify's metarig reaching beyond its arm with both feet
pinned, in every method (and honestly missed with Move Root off); a lone chain on a built armature
moving its root to reach (Solve, the operator's arguments, Live, Bake keying location only when it
moved); a connected or location-locked top bone refused."""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest
from builders import add_empty, make_armature, metarig, world_point
from mathutils import Vector

METHODS = ("triangulation", "fabrik", "ccd", "jacobian")
HAND = ("hand.L", 8)  # hand, forearm, upper arm, shoulder, spine.003 .. spine (the hips)
FEET = (("foot.L", 4), ("foot.R", 4))  # foot, shin, thigh, spine: every chain meets at the hips


def _metarig(method: str, move_root: bool, stiffness: float = 0.5):
    """The metarig (moved and turned in the world), the hand chain leading with a target 25% beyond its
    reach measured from the hips, level with the hips' head and in front; both feet pinned."""
    obj = metarig(location=(0.4, -0.2, 0.1), turn=0.5, scale=1.0)
    bpy.context.view_layer.update()
    from chain_ik import rig

    names = rig.chain_bone_names(obj, *HAND)
    heads = [world_point(obj, n, use_tail=False) for n in names]
    reach = sum(np.linalg.norm(b - a) for a, b in zip(heads, heads[1:], strict=False))
    reach += float(np.linalg.norm(world_point(obj, names[-1]) - heads[-1]))
    forward = np.array((obj.matrix_world.to_3x3() @ Vector((0.0, -1.0, 0.0)))[:])  # the metarig faces -Y
    forward[2] = 0.0
    forward /= np.linalg.norm(forward)
    hips = heads[0]
    target = add_empty("Goal", tuple(hips + 1.25 * reach * forward))
    item = obj.chain_ik.chains.add()
    item.name, item.tip, item.chain_length, item.target, item.method = "hand", *HAND, target, method
    item.move_root, item.root_stiffness = move_root, stiffness
    for tip, length in FEET:
        foot = obj.chain_ik.chains.add()
        foot.name, foot.tip, foot.chain_length, foot.pin = tip, tip, length, True
    bpy.context.view_layer.objects.active = obj
    bpy.context.view_layer.update()
    return obj, np.array(target.location), reach


def _tolerance(obj, item) -> float:
    from chain_ik.app import spec
    from chain_ik.app.solve import result

    return result.world_tolerance(obj, spec.spec_from_item(item))


@pytest.mark.parametrize("method", METHODS)
def test_metarig_reaches_beyond_its_arm_with_the_hips_moving_and_the_feet_put(rigify, method, capfd):
    obj, target, reach = _metarig(method, True)
    feet = {tip: world_point(obj, tip) for tip, _ in FEET}
    hips = world_point(obj, "spine", use_tail=False)
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    hand = obj.chain_ik.chains[0]
    error = float(np.linalg.norm(world_point(obj, "hand.L") - target))
    tol = _tolerance(obj, hand)
    assert hand.result.reached and error <= tol, (error, tol)
    for k, (tip, _) in enumerate(FEET, 1):
        moved = float(np.linalg.norm(world_point(obj, tip) - feet[tip]))
        assert moved <= _tolerance(obj, obj.chain_ik.chains[k]), (tip, moved)
        assert obj.chain_ik.chains[k].result.reached
    shift = float(np.linalg.norm(world_point(obj, "spine", use_tail=False) - hips))
    assert shift > 0.1 * reach
    out = capfd.readouterr().out
    assert f"Move Root moved bone 'spine' by {shift:.3g} (world units)" in out
    print(f"{method}: hand {error:.2e} (tol {tol:.2e}), feet {max_feet(obj, feet):.2e}, hips moved {shift:.3f}")


def max_feet(obj, feet) -> float:
    return max(float(np.linalg.norm(world_point(obj, tip) - p)) for tip, p in feet.items())


@pytest.mark.parametrize("method", METHODS)
def test_with_move_root_off_the_same_target_is_honestly_missed(rigify, method):
    obj, target, reach = _metarig(method, False)
    hips = tuple(obj.pose.bones["spine"].location)
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    hand = obj.chain_ik.chains[0]
    error = float(np.linalg.norm(world_point(obj, "hand.L") - target))
    assert not hand.result.reached and error > 0.2 * reach
    assert hand.result.error == pytest.approx(error, rel=1e-4)
    assert tuple(obj.pose.bones["spine"].location) == hips


def _lone(connected: bool = False):
    """A root bone (not connected: no parent) and two connected bones above it, reach 3."""
    bpy.ops.wm.read_homefile(use_empty=True)
    bones = [
        ("base", (0, 0, 0), (0, 0, 1), None, False, 0.0),
        ("mid", (0, 0, 1), (0, 0, 2), "base", True, 0.0),
        ("tip", (0, 0, 2), (0, 0, 3), "mid", True, 0.0),
    ]
    obj = make_armature(bones)
    target = add_empty("Goal", (2.0, 0.0, 3.0))  # 3.6 from the root: beyond reach
    item = obj.chain_ik.chains.add()
    item.name, item.tip, item.target, item.method = "arm", "tip", target, "fabrik"
    item.chain_length = 2 if connected else 3
    bpy.context.view_layer.update()
    return obj, item, target


def test_a_lone_chain_moves_its_root_to_reach_and_says_how_far(ext, capfd):
    obj, item, target = _lone()
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert not item.result.reached and tuple(obj.pose.bones["base"].location) == (0.0, 0.0, 0.0)
    item.move_root = True
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    error = float(np.linalg.norm(world_point(obj, "tip") - np.array(target.location)))
    assert item.result.reached and error <= _tolerance(obj, item)
    moved = float(np.linalg.norm(obj.pose.bones["base"].location))
    assert moved > 0.5
    assert f"Move Root moved bone 'base' by {moved:.3g}" in capfd.readouterr().out
    # The operator's arguments: off over the panel's on leaves the root where it is.
    obj.pose.bones["base"].location = (0.0, 0.0, 0.0)
    assert bpy.ops.chain_ik.solve(move_root=False) == {"FINISHED"}
    assert tuple(obj.pose.bones["base"].location) == (0.0, 0.0, 0.0) and not item.result.reached
    assert bpy.ops.chain_ik.solve(move_root=True, root_stiffness=1.0) == {"FINISHED"}
    assert tuple(obj.pose.bones["base"].location) == (0.0, 0.0, 0.0)


def test_a_connected_or_locked_top_bone_is_refused(ext):
    obj, item, _ = _lone(connected=True)
    item.move_root = True
    before = {pb.name: tuple(pb.rotation_quaternion) for pb in obj.pose.bones}
    with pytest.raises(RuntimeError, match="bone 'mid', the top of the chains it moves, is connected to its parent"):
        bpy.ops.chain_ik.solve()
    assert before == {pb.name: tuple(pb.rotation_quaternion) for pb in obj.pose.bones}
    item.chain_length = 3
    obj.pose.bones["base"].lock_location[1] = True
    with pytest.raises(RuntimeError, match=r"bone 'base' has its location locked \(Y\)"):
        bpy.ops.chain_ik.solve()
    with pytest.raises(RuntimeError, match=r"bone 'base' has its location locked \(Y\)"):
        bpy.ops.chain_ik.bake()
    assert obj.animation_data is None or not _location_curves(obj, "base")
    obj.pose.bones["base"].lock_location[1] = False
    with pytest.raises(RuntimeError, match="root stiffness must be within 0..1"):
        bpy.ops.chain_ik.solve(root_stiffness=1.5)
    assert before == {pb.name: tuple(pb.rotation_quaternion) for pb in obj.pose.bones}


def _location_curves(obj, name: str) -> list:
    from chain_ik.rig import keys

    path = keys.data_path(name, "location")
    return [fc for fc in keys.assigned_fcurves(obj) if fc.data_path == path]


@pytest.mark.parametrize("reduce", [False, True])
def test_bake_keys_the_root_location_only_where_it_moved(ext, reduce):
    obj, item, target = _lone()
    item.move_root = True
    target.location = (0.0, 1.0, 2.0)  # within reach on frame 1
    target.keyframe_insert("location", frame=1)
    target.location = (2.0, 0.0, 3.0)  # beyond on frame 3
    target.keyframe_insert("location", frame=3)
    bake = obj.chain_ik.bake
    bake.use_scene_range, bake.frame_start, bake.frame_end, bake.reduce = False, 1, 3, reduce
    assert bpy.ops.chain_ik.bake() == {"FINISHED"}
    curves = _location_curves(obj, "base")  # keyed on every frame, reduced or not (not reduced)
    assert sorted(fc.array_index for fc in curves) == [0, 1, 2]
    assert all(len(fc.keyframe_points) == 3 for fc in curves)
    for frame in (1, 2, 3):
        bpy.context.scene.frame_set(frame)
        error = float(np.linalg.norm(world_point(obj, "tip") - np.array(target.matrix_world.translation)))
        assert error <= 1e-3 * 3 * 1.01, (frame, error)
    bpy.context.scene.frame_set(1)
    assert math.dist(obj.pose.bones["base"].location, (0, 0, 0)) < 1e-6  # frame 1: within reach, stayed
    bpy.context.scene.frame_set(3)
    assert math.dist(obj.pose.bones["base"].location, (0, 0, 0)) > 0.5


def test_bake_within_reach_keys_no_location(ext):
    obj, item, target = _lone()
    item.move_root = True
    target.location = (0.0, 1.0, 2.0)
    target.keyframe_insert("location", frame=1)
    target.location = (1.0, 0.0, 2.0)
    target.keyframe_insert("location", frame=3)
    bake = obj.chain_ik.bake
    bake.use_scene_range, bake.frame_start, bake.frame_end, bake.reduce = False, 1, 3, False
    assert bpy.ops.chain_ik.bake() == {"FINISHED"}
    assert not _location_curves(obj, "base")


def test_live_moves_the_root(ext):
    obj, item, target = _lone()
    item.move_root = True
    item.live = True
    target.location = (2.5, 0.0, 3.0)
    bpy.context.view_layer.update()
    bpy.context.view_layer.update()
    error = float(np.linalg.norm(world_point(obj, "tip") - np.array(target.location)))
    assert item.result.reached and error <= _tolerance(obj, item), error
    assert math.dist(obj.pose.bones["base"].location, (0, 0, 0)) > 0.5
    item.live = False


def test_auto_keying_keys_the_moved_root(ext):
    obj, item, target = _lone()
    item.move_root = True
    bpy.context.scene.tool_settings.use_keyframe_insert_auto = True
    try:
        assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    finally:
        bpy.context.scene.tool_settings.use_keyframe_insert_auto = False
    curves = _location_curves(obj, "base")
    assert sorted(fc.array_index for fc in curves) == [0, 1, 2]
    assert [tuple(fc.keyframe_points[0].co) for fc in curves] == [
        (1.0, pytest.approx(v, abs=1e-6)) for v in obj.pose.bones["base"].location
    ]


def test_cli_move_root(ext, tmp_path):
    """cli.py --move-root on: the root's location keyed, the move reported; a bad stiffness refused."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    obj, item, target = _lone()
    target.keyframe_insert("location", frame=1)
    target.location = (2.5, 0.0, 3.0)
    target.keyframe_insert("location", frame=3)
    bpy.ops.object.mode_set(mode="OBJECT")
    path = tmp_path / "scene.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    cli = Path(__file__).resolve().parents[2] / "cli.py"
    base = [sys.executable, str(cli), str(path), "--", "--armature", "Rig", "--chain", "tip:3", "--target", "Goal"]
    base += ["--frames", "1-3"]
    summary = tmp_path / "s.json"
    argv = [*base, "--move-root", "on", "--json", str(summary)]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    data = json.loads(summary.read_text())
    assert data["root_moved"]["base"] > 0.5 and data["playback_error"] < 1e-3
    assert "Move Root keyed the location of bone 'base'" in run.stdout
    run = subprocess.run([*base, "--root-stiffness", "2"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "argument --root-stiffness: must be within 0..1" in run.stderr


def test_the_root_returns_home_when_the_target_comes_back_within_reach(ext):
    """Solve (and Live) start a moved root from where the user put it: the hips that stepped forward for
    a far target come back when it comes back; a root the user moved since stays where they put it."""
    obj, item, target = _lone()
    item.move_root = True
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert math.dist(obj.pose.bones["base"].location, (0, 0, 0)) > 0.5
    target.location = (0.0, 1.0, 2.0)  # within reach from home
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert tuple(obj.pose.bones["base"].location) == (0.0, 0.0, 0.0) and item.result.reached
    target.location = (2.0, 0.0, 3.0)
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    obj.pose.bones["base"].location = (0.3, 0.0, 0.0)  # the user moves it: that is home now
    target.location = (0.3, 1.0, 2.0)
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert tuple(obj.pose.bones["base"].location) == pytest.approx((0.3, 0.0, 0.0)) and item.result.reached
    # Live: the same, update after update
    obj.pose.bones["base"].location = (0.0, 0.0, 0.0)
    item.live = True
    for goal, away in (((2.5, 0.0, 3.0), True), ((0.0, 1.0, 2.0), False), ((2.5, 0.0, 3.0), True)):
        target.location = goal
        bpy.context.view_layer.update()
        bpy.context.view_layer.update()
        assert item.result.reached
        assert (math.dist(obj.pose.bones["base"].location, (0, 0, 0)) > 0.5) == away
    item.live = False


@pytest.mark.parametrize("method", ("fabrik", "jacobian"))
def test_live_on_the_metarig_keeps_the_feet_and_brings_the_hips_home(rigify, method):
    obj, far, reach = _metarig(method, True)
    target = bpy.data.objects["Goal"]
    feet = {tip: world_point(obj, tip) for tip, _ in FEET}
    hips = world_point(obj, "spine", use_tail=False)
    near = hips + 0.5 * (far - hips) / 1.25  # within reach, in front
    hand = obj.chain_ik.chains[0]
    hand.live = True
    try:
        for goal, away in ((far, True), (near, False), (far, True), (near, False)):
            target.location = tuple(goal)
            bpy.context.view_layer.update()
            bpy.context.view_layer.update()
            assert hand.result.reached, (goal, hand.result.error)
            assert max_feet(obj, feet) <= _tolerance(obj, obj.chain_ik.chains[1])
            moved = float(np.linalg.norm(world_point(obj, "spine", use_tail=False) - hips))
            assert (moved > 0.1 * reach) == away, moved
    finally:
        hand.live = False


def _hanging(animated_parent: bool, scale=(1.5, 1.5, 1.5)):
    """_lone's chain hanging (not connected) from a turned 'hold' bone, on a turned and scaled
    armature; the target beyond reach on frames 2-3 (location curves). `animated_parent`: the
    hold bone keyed (the same turn on both keys), so every frame is evaluated."""
    bpy.ops.wm.read_homefile(use_empty=True)
    bones = [
        ("hold", (0, 0, -1), (0, 0, -0.5), None, False, 0.0),
        ("base", (0, 0, 0), (0, 0, 1), "hold", False, 0.0),
        ("mid", (0, 0, 1), (0, 0, 2), "base", True, 0.0),
        ("tip", (0, 0, 2), (0, 0, 3), "mid", True, 0.0),
    ]
    obj = make_armature(bones)
    obj.location, obj.rotation_euler, obj.scale = (0.3, -0.4, 0.2), (0.2, 0.0, 0.6), scale
    hold = obj.pose.bones["hold"]
    hold.rotation_quaternion = (math.cos(0.15), math.sin(0.15), 0.0, 0.0)
    if animated_parent:
        for frame in (1, 3):
            hold.keyframe_insert("rotation_quaternion", frame=frame)
    target = add_empty("Goal", (1.0, 0.0, 3.0))
    target.keyframe_insert("location", frame=1)
    target.location = (3.5, -1.0, 4.0)  # beyond reach
    target.keyframe_insert("location", frame=3)
    item = obj.chain_ik.chains.add()
    item.name, item.tip, item.chain_length, item.target, item.method = "arm", "tip", 3, target, "fabrik"
    item.move_root = True
    bpy.context.view_layer.objects.active = obj
    bpy.context.view_layer.update()
    return obj, item, target


@pytest.mark.parametrize("scale", [(1.5, 1.5, 1.5), (1.0, 1.6, 0.7)])
def test_bake_moves_a_root_hanging_from_a_turned_parent_alike_carried_and_frame_by_frame(ext, scale):
    """Move Root on a unit carried in its top bone's parent space (nothing but the target's curves
    moves) keys the same location as frame by frame (the parent keyed): the root's move is mapped
    from the parent's space to its location channel; the tip reaches on playback, and the solver's
    figure (measured on the moved skeleton where the armature's scale is not uniform) says so."""
    from chain_ik.app import bake as bake_run
    from chain_ik.app import spec as app_spec

    out = {}
    for animated in (False, True):
        obj, item, target = _hanging(animated, scale)
        specs = [spec for _, spec in app_spec.specs_from_arguments(obj, "", 0, "", "", "", -1)]
        result = bake_run.bake(bpy.context, obj, specs, bake_run.BakeOptions(frame_start=1, frame_end=3))
        (report,) = result.chains
        kernel = "targets read from their curves" if not animated else "baked frame by frame"
        assert kernel in report.path and "Move Root" in report.path, report.path
        assert report.missed == 0 and result.root_moved["base"] > 0.5, (report, result.root_moved)
        assert result.per_chain_error["tip"] <= report.tolerance, result.per_chain_error
        rows = []
        for frame in (1, 2, 3):
            bpy.context.scene.frame_set(frame)
            error = float(np.linalg.norm(world_point(obj, "tip") - np.array(target.matrix_world.translation)))
            assert error <= report.tolerance, (animated, frame, error)
            rows.append(tuple(obj.pose.bones["base"].location))
        out[animated] = np.array(rows)
    assert np.abs(out[False][2]).max() > 0.3
    np.testing.assert_allclose(out[False], out[True], atol=1e-4)
