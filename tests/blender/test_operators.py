"""Operators through bpy.ops: script arguments, bad input, undo, chain list, Compare, Live."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from builders import (
    add_empty,
    bent_rolled_disconnected,
    channel_state,
    reachable_target,
    set_selected,
    straight_chain,
    world_point,
)

TOL = 1e-4


def _rig_with_target(location=(1.0, 0.5, 2.0)):
    obj = straight_chain(3)
    target = add_empty(location=location)
    bpy.context.view_layer.objects.active = obj
    return obj, target


def test_script_arguments_without_any_panel_chain(scene):
    obj, target = _rig_with_target()
    assert not obj.chain_ik.chains
    assert bpy.ops.chain_ik.solve(tip="b2", chain_length=3, target=target.name, method="fabrik") == {"FINISHED"}
    assert np.linalg.norm(world_point(obj, "b2") - np.array(target.location[:])) < TOL


def test_script_arguments_without_a_tip_override_the_active_chain(scene):
    obj, target = _rig_with_target(location=(0.5, 0.3, 1.2))
    other = add_empty("Other", (0.2, 0.2, 1.5))
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target, item.method = "b2", 3, other, "ccd"
    assert bpy.ops.chain_ik.solve(target=target.name, method="triangulation") == {"FINISHED"}
    assert np.linalg.norm(world_point(obj, "b2") - np.array(target.location[:])) < TOL
    assert item.result.method == "triangulation"  # result stored on the chain the call was based on
    assert item.method == "ccd" and item.target == other  # arguments never change the panel settings


def test_a_chain_named_by_its_tip_takes_nothing_from_the_active_chain(scene):
    """Issue 11 §5: tip + chain_length + target solve that chain alone: the active chain's pole,
    influence, solver and options are not used, and its stored result is not overwritten."""
    obj, target = _rig_with_target(location=(0.5, 0.3, 1.2))
    pole = add_empty("Knee", (0.0, -3.0, 1.0))
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target, item.method = "b2", 3, target, "jacobian"
    item.pole_target, item.pole_angle, item.influence, item.max_iterations = pole, 1.0, 0.5, 1
    before = channel_state(obj)
    # Only b1's tail (2 bones) reaches: b2 and its channels are not touched.
    assert bpy.ops.chain_ik.solve(tip="b1", chain_length=2, target=target.name) == {"FINISHED"}
    assert np.linalg.norm(world_point(obj, "b1") - np.array(target.location[:])) < TOL
    assert channel_state(obj)["b2"] == before["b2"]
    assert not item.has_result and item.result.method == ""
    with pytest.raises(RuntimeError, match="with no target"):
        bpy.ops.chain_ik.solve(tip="b1", chain_length=2)


def test_solves_every_chain_of_the_list(scene):
    obj = bent_rolled_disconnected()
    rng = np.random.default_rng(2)
    t1 = add_empty("T1", reachable_target(obj, "hand", ["upper", "fore", "hand"], rng))
    t2 = add_empty("T2", reachable_target(obj, "other", ["other"], rng))
    bpy.context.view_layer.objects.active = obj
    for tip, length, t in (("hand", 3, t1), ("other", 1, t2)):
        item = obj.chain_ik.chains.add()
        item.tip, item.chain_length, item.target = tip, length, t
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert np.linalg.norm(world_point(obj, "hand") - np.array(t1.location[:])) < TOL
    assert np.linalg.norm(world_point(obj, "other") - np.array(t2.location[:])) < 1e-3  # 1 bone: the direction


def _assert_error_no_change(obj, match: str, **kwargs):
    before = channel_state(obj)
    with pytest.raises(RuntimeError, match=match):
        bpy.ops.chain_ik.solve(**kwargs)
    assert channel_state(obj) == before


def test_no_armature_active(scene):
    obj, target = _rig_with_target()
    bpy.context.view_layer.objects.active = target
    before = channel_state(obj)
    assert not bpy.ops.chain_ik.solve.poll()
    with pytest.raises(RuntimeError, match="poll"):
        bpy.ops.chain_ik.solve(tip="b2", chain_length=3, target=target.name)
    assert channel_state(obj) == before
    bpy.context.view_layer.objects.active = None
    assert not bpy.ops.chain_ik.solve.poll()


def test_bad_input_reports_and_leaves_the_pose(scene):
    obj, target = _rig_with_target()
    _assert_error_no_change(obj, "no target", tip="b2", chain_length=3)
    _assert_error_no_change(obj, "no object named 'Nope'", tip="b2", chain_length=3, target="Nope")
    _assert_error_no_change(obj, "no bone 'missing'", tip="missing", chain_length=1, target=target.name)
    _assert_error_no_change(obj, "longer than the hierarchy", tip="b2", chain_length=4, target=target.name)
    _assert_error_no_change(obj, "unknown solver 'magic'", tip="b2", chain_length=3, target=target.name, method="magic")
    _assert_error_no_change(obj, "no chains: add one in the Chain IK panel, or pass tip, chain_length and target")
    target.location = (float("nan"), 0.0, 1.0)
    _assert_error_no_change(obj, "non-finite location", tip="b2", chain_length=3, target=target.name)
    target.location = (float("inf"), 0.0, 1.0)  # Blender keeps it as the largest float32, 3.4e38
    _assert_error_no_change(obj, "non-finite location", tip="b2", chain_length=3, target=target.name)


def test_error_in_a_later_chain_restores_the_earlier_ones(scene):
    obj, target = _rig_with_target()
    good = obj.chain_ik.chains.add()
    good.tip, good.chain_length, good.target = "b2", 3, target
    bad = obj.chain_ik.chains.add()
    bad.tip, bad.chain_length, bad.target = "b1", 5, target
    _assert_error_no_change(obj, "longer than the hierarchy")


def test_zero_scale_armature_is_refused(scene):
    obj, target = _rig_with_target()
    obj.scale = (1.0, 0.0, 1.0)
    bpy.context.view_layer.update()
    _assert_error_no_change(obj, "zero scale", tip="b2", chain_length=3, target=target.name)


def test_undo_restores_the_pose(scene):
    obj, target = _rig_with_target()
    before = channel_state(obj)
    bpy.ops.ed.undo_push(message="before solve")
    # Positional 'EXEC_DEFAULT', True: run as from the UI, with its undo step (scripts skip it otherwise).
    assert bpy.ops.chain_ik.solve("EXEC_DEFAULT", True, tip="b2", chain_length=3, target=target.name) == {"FINISHED"}
    assert channel_state(obj) != before
    bpy.ops.ed.undo()
    assert channel_state(bpy.data.objects["Rig"]) == before
    bpy.ops.ed.redo()
    assert channel_state(bpy.data.objects["Rig"]) != before


def test_undo_options():
    from chain_ik.operators import chains, solve

    for cls in (solve.CHAINIK_OT_solve, *chains.CLASSES):
        assert {"REGISTER", "UNDO"} <= cls.bl_options


def test_add_and_remove_chain(scene):
    obj, _ = _rig_with_target()
    obj.data.bones.active = obj.data.bones["b1"]
    assert bpy.ops.chain_ik.chain_add() == {"FINISHED"}
    assert bpy.ops.chain_ik.chain_add() == {"FINISHED"}
    assert [c.tip for c in obj.chain_ik.chains] == ["b1", "b1"]
    assert obj.chain_ik.active_index == 1
    assert bpy.ops.chain_ik.chain_remove() == {"FINISHED"}
    assert bpy.ops.chain_ik.chain_remove() == {"FINISHED"}
    assert not bpy.ops.chain_ik.chain_remove.poll()


def test_chain_from_selected_bones(scene):
    obj, _ = _rig_with_target()
    for pb in obj.pose.bones:
        set_selected(pb, pb.name in {"b1", "b2"})
    assert bpy.ops.chain_ik.chain_from_selected() == {"FINISHED"}
    item = obj.chain_ik.active
    assert (item.tip, item.chain_length) == ("b2", 2)
    set_selected(obj.pose.bones["b1"], False)
    set_selected(obj.pose.bones["b0"], True)
    with pytest.raises(RuntimeError, match="unbroken"):
        bpy.ops.chain_ik.chain_from_selected()
    for pb in obj.pose.bones:
        set_selected(pb, False)
    with pytest.raises(RuntimeError, match="no bones selected"):
        bpy.ops.chain_ik.chain_from_selected()
    # A hidden bone is not taken, selected or not (PoseBone.hide in 5.0, Bone.hide in 4.2), as Blender's tools.
    for pb in obj.pose.bones:
        set_selected(pb, pb.name in {"b0", "b1", "b2"})
    b0 = obj.pose.bones["b0"]
    if "hide" in b0.bl_rna.properties:
        b0.hide = True
    else:
        b0.bone.hide = True
    assert bpy.ops.chain_ik.chain_from_selected() == {"FINISHED"}
    assert (obj.chain_ik.active.tip, obj.chain_ik.active.chain_length) == ("b2", 2)


def test_compare_lists_every_solver_without_posing(scene):
    from chain_ik import solvers

    obj, target = _rig_with_target()
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target = "b2", 3, target
    before = channel_state(obj)
    assert bpy.ops.chain_ik.compare() == {"FINISHED"}
    assert channel_state(obj) == before
    assert [r.method for r in item.comparison] == list(solvers.METHODS)
    for r in item.comparison:
        assert r.reached and r.error < TOL and r.iterations >= 0 and r.time_ms > 0 and r.cost > 0


def test_compare_starts_every_solver_from_the_rest_pose_not_the_last_solve(scene):
    """Issue 11 §5: the figures do not depend on the pose the last Solve left."""
    obj, target = _rig_with_target()
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target = "b2", 3, target

    def figures():
        assert bpy.ops.chain_ik.compare() == {"FINISHED"}
        return [(r.method, r.iterations, round(r.error, 9), round(r.cost, 6)) for r in item.comparison]

    first = figures()
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert figures() == first


def test_live_mode_follows_the_target_without_feedback(scene, ext):
    from chain_ik.app import live

    obj, target = _rig_with_target()
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target = "b2", 3, target
    item.live = True
    assert live.on_update in bpy.app.handlers.depsgraph_update_post
    for location in ((1.0, 0.5, 2.0), (-0.5, 1.0, 1.5), (0.2, -1.2, 0.8)):
        target.location = location
        bpy.context.view_layer.update()  # runs depsgraph_update_post: the handler solves
        bpy.context.view_layer.update()  # let the written pose evaluate
        assert np.linalg.norm(world_point(obj, "b2") - np.array(location)) < TOL
    # The armature moves: the chain follows the (still) target.
    obj.location = (0.3, -0.2, 0.1)
    bpy.context.view_layer.update()
    bpy.context.view_layer.update()
    assert np.linalg.norm(world_point(obj, "b2") - np.array(target.location[:])) < TOL
    # Nothing moved: a further update solves nothing (no loop through our own writes).
    assert live.solve_live(bpy.context.scene, bpy.context.evaluated_depsgraph_get()) == 0
    item.live = False
    target.location = (1.0, 1.0, 1.0)
    bpy.context.view_layer.update()
    assert np.linalg.norm(world_point(obj, "b2") - np.array((1.0, 1.0, 1.0))) > 0.1


def test_live_visits_only_armatures_with_live_chains_and_survives_renames_and_copies(scene, ext):
    """The handler runs on every update: with no live chain it visits nothing; a live armature
    renamed or duplicated (Shift+D) keeps following."""
    from chain_ik.app import live

    for k in range(50):
        add_empty(f"Filler{k}")
    obj, target = _rig_with_target()
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target = "b2", 3, target
    assert live._live_armatures(bpy.context.scene) == []
    item.live = True
    assert live._live_armatures(bpy.context.scene) == [obj]
    obj.name = "Renamed"
    target.location = (1.0, 0.5, 2.0)
    bpy.context.view_layer.update()
    bpy.context.view_layer.update()
    assert np.linalg.norm(world_point(obj, "b2") - np.array(target.location[:])) < TOL
    copy = obj.copy()
    bpy.context.scene.collection.objects.link(copy)
    copy.location = (2.0, 0.0, 0.0)
    bpy.context.view_layer.update()
    bpy.context.view_layer.update()
    assert np.linalg.norm(world_point(copy, "b2") - np.array(target.location[:])) < TOL
    item.live = copy.chain_ik.chains[0].live = False
    bpy.context.view_layer.update()
    assert live._live_armatures(bpy.context.scene) == []


def test_target_carried_by_the_chain_is_refused(scene):
    obj, target = _rig_with_target()
    # A bone of the chain itself, and an empty parented to a chain bone.
    _assert_error_no_change(obj, "moves with the chain", tip="b1", chain_length=2, target=obj.name, target_bone="b2")
    target.parent, target.parent_type, target.parent_bone = obj, "BONE", "b1"
    bpy.context.view_layer.update()
    _assert_error_no_change(obj, "moves with the chain", tip="b2", chain_length=3, target=target.name)
    # A bone outside the chain (b0 is above a 2-bone chain ending at b2) is fine.
    assert bpy.ops.chain_ik.solve(tip="b2", chain_length=2, target=obj.name, target_bone="b0") == {"FINISHED"}


def test_live_follows_an_animated_target_on_frame_change(scene):
    obj, target = _rig_with_target()
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target, item.live = "b2", 3, target, True
    for frame, location in ((1, (1.0, 0.5, 2.0)), (10, (-0.5, 1.0, 1.5))):
        target.location = location
        target.keyframe_insert("location", frame=frame)
    for frame, location in ((10, (-0.5, 1.0, 1.5)), (1, (1.0, 0.5, 2.0))):
        scene.frame_set(frame)  # frame_change_post: the handler solves
        bpy.context.view_layer.update()
        assert np.linalg.norm(world_point(obj, "b2") - np.array(location)) < TOL
    item.live = False


def test_auto_keying_keys_the_solved_rotations(scene):
    obj, target = _rig_with_target()
    scene.tool_settings.use_keyframe_insert_auto = True
    obj.pose.bones["b1"].rotation_mode = "ZXY"
    goals = {1: (1.0, 0.5, 2.0), 10: (-0.5, 1.0, 1.5)}
    for frame, location in goals.items():
        scene.frame_set(frame)
        target.location = location
        assert bpy.ops.chain_ik.solve(tip="b2", chain_length=3, target=target.name) == {"FINISHED"}
    for frame, location in goals.items():
        scene.frame_set(frame)
        assert np.linalg.norm(world_point(obj, "b2") - np.array(location)) < TOL
    scene.tool_settings.use_keyframe_insert_auto = False


def test_target_argument_does_not_inherit_the_panel_target_bone(scene):
    obj, target = _rig_with_target()
    other = straight_chain(1, name="Goal")
    bpy.ops.object.mode_set(mode="OBJECT")
    bpy.context.view_layer.objects.active = obj
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target, item.target_bone = "b2", 3, other, "b0"
    assert bpy.ops.chain_ik.solve(target=target.name) == {"FINISHED"}
    assert np.linalg.norm(world_point(obj, "b2") - np.array(target.location[:])) < TOL


def test_live_follows_when_its_switch_is_animated(scene, ext):
    """An animated Live switch runs no property update: the frame change looks again."""
    from chain_ik.app import live

    obj, target = _rig_with_target()
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target = "b2", 3, target
    item.live = False
    obj.keyframe_insert("chain_ik.chains[0].live", frame=1)
    item.live = True
    obj.keyframe_insert("chain_ik.chains[0].live", frame=10)
    scene.frame_set(1)
    live.forget_watch()
    bpy.context.view_layer.update()
    assert live._live_armatures(scene) == []
    scene.frame_set(10)
    target.location = (1.0, 0.5, 2.0)
    bpy.context.view_layer.update()
    bpy.context.view_layer.update()
    assert np.linalg.norm(world_point(obj, "b2") - np.array(target.location[:])) < TOL
    obj.animation_data_clear()
    item.live = False


def test_a_missed_target_is_a_warning_with_the_measured_miss(scene, capfd):
    """Solve finishes on an out-of-reach target (the chain points at it) but warns, with the miss
    measured on the written pose; a reached target gives no warning."""
    obj, target = _rig_with_target(location=(10.0, 0.0, 0.0))
    assert bpy.ops.chain_ik.solve(tip="b2", chain_length=3, target=target.name) == {"FINISHED"}
    miss = float(np.linalg.norm(world_point(obj, "b2") - np.array(target.location[:])))
    out = capfd.readouterr().out
    assert f"Warning: chain 'b2' misses its target by {miss:.3g}" in out, out
    target.location = (1.0, 0.5, 2.0)
    assert bpy.ops.chain_ik.solve(tip="b2", chain_length=3, target=target.name) == {"FINISHED"}
    assert "misses its target" not in capfd.readouterr().out
