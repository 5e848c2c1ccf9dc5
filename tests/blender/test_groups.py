"""Chains that share bones are solved together (app.spec.groups) in real Blender: Rigify's human
metarig with both hand chains (and the head) down the spine. Targets are made by a random FK pose
of the group's bones, so they are jointly reachable; every figure is checked on the written pose."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from builders import channel_state, metarig, random_pose, restore_channels, world_point

HANDS_HEAD = [("hand.L", 6), ("hand.R", 6), ("spine.006", 4)]  # all three meet at spine.002/.003
LEGS_SPINE = [("shin.L", 3), ("shin.R", 3), ("spine.006", 7)]  # all three meet at the hips ('spine')
GROUP_METHODS = ("fabrik", "jacobian", "triangulation")


def _rig(chains, rng, method="fabrik", angle=0.5):
    """The metarig with one chain per (tip, length) and an empty target each at a jointly reachable point."""
    obj = metarig(location=(0.4, -0.2, 0.1), turn=0.5, scale=1.0)
    names = sorted({n for tip, length in chains for n in _chain(obj, tip, length)})
    saved = channel_state(obj)
    random_pose(obj, names, rng, angle)
    bpy.context.view_layer.update()
    goals = [world_point(obj, tip) for tip, _ in chains]
    restore_channels(obj, saved)
    for (tip, length), goal in zip(chains, goals, strict=True):
        empty = bpy.data.objects.new(f"T_{tip}", None)
        bpy.context.scene.collection.objects.link(empty)
        empty.location = goal
        item = obj.chain_ik.chains.add()
        item.name, item.tip, item.chain_length, item.target, item.method = tip, tip, length, empty, method
    bpy.context.view_layer.update()
    return obj


def _chain(obj, tip, length):
    from chain_ik import rig

    return rig.chain_bone_names(obj, tip, length)


def _tip_errors(obj) -> list[float]:
    bpy.context.view_layer.update()
    return [
        float(np.linalg.norm(world_point(obj, c.tip) - np.array(c.target.matrix_world.translation)))
        for c in obj.chain_ik.chains
        if c.target is not None
    ]


@pytest.mark.parametrize("method", GROUP_METHODS)
def test_hands_and_head_reach_together(rigify, method):
    hits = 0
    for seed in range(4):
        obj = _rig(HANDS_HEAD, np.random.default_rng(seed), method)
        assert bpy.ops.chain_ik.solve() == {"FINISHED"}
        errors = _tip_errors(obj)
        for item, error in zip(obj.chain_ik.chains, errors, strict=True):
            assert item.result.group == "hand.L + hand.R + spine.006"
            # The stored error is the written pose's, after every chain of the group was written.
            assert item.result.error == pytest.approx(error, abs=1e-6)
            assert not item.result.reached or error <= 1e-4
        hits += all(e <= 1e-4 for e in errors)
    assert hits >= 3  # chains solved one after another: 0 of 4 (each moved the spine the last one used)


def test_no_false_reached_on_conflicting_targets(rigify):
    obj = _rig(HANDS_HEAD, np.random.default_rng(7), "jacobian")
    # Both hands pulled apart beyond reach: no chain may claim it reached.
    obj.chain_ik.chains[0].target.location.x += 2.0
    obj.chain_ik.chains[1].target.location.x -= 2.0
    bpy.context.view_layer.update()
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    errors = _tip_errors(obj)
    for item, error in zip(obj.chain_ik.chains[:2], errors[:2], strict=True):
        assert not item.result.reached
        assert item.result.error == pytest.approx(error, abs=1e-6)


def test_pin_holds_a_foot_while_the_spine_reaches(rigify):
    obj = _rig(LEGS_SPINE, np.random.default_rng(3), "jacobian", angle=0.3)
    left = obj.chain_ik.chains[0]
    left.pin, left.target = True, None
    held = world_point(obj, "shin.L")
    before = channel_state(obj)
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    bpy.context.view_layer.update()
    assert np.linalg.norm(world_point(obj, "shin.L") - held) <= 1e-4
    assert left.result.reached and left.result.error <= 1e-4
    errors = _tip_errors(obj)  # shin.R and the head
    assert max(errors) <= 1e-3  # they reached, the hips moved under the pinned leg
    assert channel_state(obj)["spine"] != before["spine"]


def test_priority_keeps_the_first_hand_exact(rigify):
    obj = _rig(HANDS_HEAD[:2], np.random.default_rng(5), "jacobian")
    right = obj.chain_ik.chains[1]
    right.target.location.x -= 1.5  # out of reach: it pulls the shared spine its way
    bpy.context.view_layer.update()
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    even = _tip_errors(obj)[0]
    bpy.ops.ed.undo_push()
    right.priority = 1
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    ranked = _tip_errors(obj)[0]
    assert ranked <= 1e-4 < even  # the higher priority is met exactly; with equal ones it gives way


def test_weight_ranks_a_compromise(rigify):
    obj = _rig(HANDS_HEAD[:2], np.random.default_rng(11), "jacobian")
    obj.chain_ik.chains[0].target.location.x += 1.5
    obj.chain_ik.chains[1].target.location.x -= 1.5
    bpy.context.view_layer.update()
    saved = channel_state(obj)
    obj.chain_ik.chains[0].weight = 10.0
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    heavy_left = _tip_errors(obj)
    restore_channels(obj, saved)
    obj.chain_ik.chains[0].weight, obj.chain_ik.chains[1].weight = 1.0, 10.0
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    heavy_right = _tip_errors(obj)
    assert heavy_left[0] < heavy_right[0] and heavy_right[1] < heavy_left[1]


def test_group_bake_plays_back_on_target(rigify):
    rng = np.random.default_rng(2)
    obj = _rig(HANDS_HEAD, rng, "fabrik")
    names = sorted({n for tip, length in HANDS_HEAD for n in _chain(obj, tip, length)})
    for frame in (1, 12):  # targets keyed at two jointly reachable poses
        saved = channel_state(obj)
        random_pose(obj, names, rng, 0.4)
        bpy.context.view_layer.update()
        for item in obj.chain_ik.chains:
            item.target.location = world_point(obj, item.tip)
            item.target.keyframe_insert("location", frame=frame)
        restore_channels(obj, saved)
    other = {pb.name: pb.rotation_quaternion[:] for pb in obj.pose.bones if pb.name not in names}
    assert bpy.ops.chain_ik.bake(frame_start=1, frame_end=12) == {"FINISHED"}
    for frame in range(1, 13):
        bpy.context.scene.frame_set(frame)
        for item, error in zip(obj.chain_ik.chains, _tip_errors(obj), strict=True):
            assert error <= 2e-4, (item.name, frame, error)
    assert {pb.name: pb.rotation_quaternion[:] for pb in obj.pose.bones if pb.name not in names} == other


def test_live_solves_the_whole_group(rigify):
    obj = _rig(HANDS_HEAD, np.random.default_rng(4), "jacobian")
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    obj.chain_ik.chains[0].live = True  # one live chain: its whole group follows
    try:
        obj.chain_ik.chains[0].target.location.z += 0.03
        bpy.context.view_layer.update()
        errors = _tip_errors(obj)
        assert max(errors) <= 1e-4, errors
        assert all(item.result.reached for item in obj.chain_ik.chains)
    finally:
        obj.chain_ik.chains[0].live = False


def test_panel_shows_the_group(rigify):
    from chain_ik.app.spec import groups

    obj = _rig(HANDS_HEAD + [("shin.L", 2)], np.random.default_rng(1))
    member = groups.membership(obj)
    assert set(member) == {0, 1, 2} and member[0][1] == (0, 1, 2)
    obj.chain_ik.chains[1].mute = True
    assert groups.membership(obj)[0][1] == (0, 2)


def _keys(obj) -> dict:
    from chain_ik.rig import keys

    curves = keys.assigned_fcurves(obj)
    return {(fc.data_path, fc.array_index): [tuple(p.co) for p in fc.keyframe_points] for fc in curves}


def test_sampled_group_bake_equals_frame_by_frame(rigify):
    """With nothing but the targets moving the group bakes without frame_set (targets read from
    their curves); a frame change handler forces the frame-by-frame kernel: the same keys."""
    from chain_ik.app import bake, spec
    from chain_ik.app.bake import bake_solve

    baked = []
    for forced in (False, True):
        rng = np.random.default_rng(9)
        obj = _rig(HANDS_HEAD, rng, "jacobian")
        for item in obj.chain_ik.chains:
            start = item.target.location.copy()
            item.target.keyframe_insert("location", frame=1)
            item.target.location = start + type(start)((0.03, -0.02, 0.04))
            item.target.keyframe_insert("location", frame=10)
        handler = lambda *_: None  # noqa: E731 - any handler rules out sampling
        if forced:
            bpy.app.handlers.frame_change_post.append(handler)
        try:
            specs = [spec.spec_from_item(item) for item in obj.chain_ik.chains]
            result = bake.bake(bpy.context, obj, specs, bake.BakeOptions(frame_start=1, frame_end=10))
        finally:
            if forced:
                bpy.app.handlers.frame_change_post.remove(handler)
        kernel = bake_solve.PER_FRAME if forced else bake_solve.SAMPLED_GROUP
        assert all(why.startswith(kernel) for why in result.reasons.values()), result.reasons
        baked.append(_keys(obj))
    assert baked[0].keys() == baked[1].keys()
    for key, points in baked[0].items():
        assert np.allclose(points, baked[1][key], atol=1e-5), key


@pytest.mark.parametrize("method", ("fabrik", "jacobian", "triangulation"))
@pytest.mark.parametrize("side", (1.0, -1.0))
def test_pole_steers_an_arm_inside_a_group(rigify, method, side):
    """Blender switches poles off in trees; here the left arm's pole holds inside the group, with
    the IK constraint's convention on the arm's own segment (shoulder.L down, below the shared
    spine): at pole angle 0 its top bone's X axis, across the top-to-tip line, points at the pole."""
    obj = _rig([("forearm.L", 5), ("forearm.R", 5)], np.random.default_rng(6), method, angle=0.3)
    bpy.context.view_layer.update()
    pole = bpy.data.objects.new("Pole", None)
    bpy.context.scene.collection.objects.link(pole)
    pole.location = world_point(obj, "forearm.L", use_tail=False) + np.array((0.0, side * 1.0, 0.3))
    obj.chain_ik.chains[0].pole_target = pole
    bpy.context.view_layer.update()
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    bpy.context.view_layer.update()
    top = world_point(obj, "shoulder.L", use_tail=False)
    line = world_point(obj, "forearm.L") - top
    line /= np.linalg.norm(line)
    x_axis = np.array((obj.matrix_world @ obj.pose.bones["shoulder.L"].matrix).to_3x3().col[0])
    toward = np.array(pole.location) - top
    x_axis -= line * np.dot(x_axis, line)
    toward -= line * np.dot(toward, line)
    cosine = np.dot(x_axis, toward) / (np.linalg.norm(x_axis) * np.linalg.norm(toward))
    assert cosine > np.cos(np.radians(5.0)), np.degrees(np.arccos(cosine))
    assert max(_tip_errors(obj)) <= 1e-3


def test_cli_bakes_a_group_and_says_so(rigify, tmp_path):
    import json
    import subprocess
    import sys

    from conftest import REPO

    obj = _rig(HANDS_HEAD[:2], np.random.default_rng(8), "fabrik")
    for item in obj.chain_ik.chains:
        item.target.keyframe_insert("location", frame=1)
        item.target.location.z += 0.02
        item.target.keyframe_insert("location", frame=5)
    bpy.ops.object.mode_set(mode="OBJECT")
    path = tmp_path / "group.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    out = tmp_path / "report.json"
    args = [sys.executable, str(REPO / "cli.py"), str(path), "--", "--armature", obj.name, "--frames", "1-5",
            "--json", str(out)]  # fmt: skip
    run = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    summary = json.loads(out.read_text())
    assert [c["group"] for c in summary["per_chain"]] == ["hand.L + hand.R"] * 2
    assert "group hand.L + hand.R" in run.stdout


def test_members_report_the_leads_method_and_tolerance(rigify):
    """The first chain's solver settings serve the group: reports name its method and measure
    "reached" against its tolerance."""
    obj = _rig(HANDS_HEAD[:2], np.random.default_rng(2), "ccd", angle=0.4)
    lead, other = obj.chain_ik.chains
    lead.method, lead.tolerance, other.method = "fabrik", 0.02, "ccd"
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert lead.result.method == other.result.method == "fabrik"
    errors = _tip_errors(obj)
    assert all(item.result.reached == (error <= 0.02) for item, error in zip((lead, other), errors, strict=True))


def test_a_target_riding_on_the_groups_bones_is_refused(rigify):
    obj = _rig([("spine.006", 6), ("hand.R", 5)], np.random.default_rng(3))
    target = obj.chain_ik.chains[1].target
    target.parent, target.parent_type, target.parent_bone = obj, "BONE", "spine.001"  # a bone of the head chain
    before = channel_state(obj)
    with pytest.raises(RuntimeError, match="moves with the chains it is solved with"):
        bpy.ops.chain_ik.solve()
    assert channel_state(obj) == before


def test_units_keep_list_order_unless_one_hangs_below_another(rigify):
    from chain_ik.app.spec import groups

    obj = _rig([("hand.L", 2), ("spine.006", 2)], np.random.default_rng(0))
    assert [u.members for u in groups.units(obj, list(obj.chain_ik.chains))] == [(0,), (1,)]
    obj = _rig([("f_index.03.L", 3), ("hand.L", 3)], np.random.default_rng(0))  # the finger hangs below the hand
    assert [u.members for u in groups.units(obj, list(obj.chain_ik.chains))] == [(1,), (0,)]


def test_a_group_hangs_from_the_top_of_its_highest_member(rigify):
    """The group's top bone is its highest member's root, not its first member's: the head chain
    (listed first) hangs below spine.003, a bone of the group's second member, so it goes after."""
    from chain_ik.app.spec import groups

    obj = _rig([("spine.006", 2), ("hand.L", 2), ("hand.L", 6)], np.random.default_rng(0))
    found = groups.units(obj, list(obj.chain_ik.chains))
    assert [u.members for u in found] == [(1, 2), (0,)]
    assert found[0].bones[-4:] == ("spine.002", "spine.003", "shoulder.L", "upper_arm.L")


def test_groups_follow_reparenting(rigify):
    from chain_ik.app.spec import groups

    obj = _rig([("hand.L", 4), ("hand.R", 4)], np.random.default_rng(0))
    assert groups.membership(obj) == {}
    bpy.ops.object.mode_set(mode="EDIT")
    obj.data.edit_bones["upper_arm.R"].parent = obj.data.edit_bones["shoulder.L"]
    bpy.ops.object.mode_set(mode="POSE")
    assert groups.membership(obj)[1][1] == (0, 1)  # they share shoulder.L now


def test_a_bone_left_stretched_is_named(rigify):
    """A Y scale an earlier stretched solve left on a bone that does not stretch now (its chain's
    Stretch off; with it on, the group reads it divided out: tests/blender/test_group_stretch.py):
    named, not a generic shear error."""
    obj = _rig(HANDS_HEAD[:2], np.random.default_rng(0))
    obj.chain_ik.chains[0].use_stretch = False
    obj.pose.bones["upper_arm.L"].ik_stretch = 0.5
    obj.pose.bones["upper_arm.L"].scale = (1.0, 1.4, 1.0)
    with pytest.raises(RuntimeError, match="keeps the Y scale 1.4"):
        bpy.ops.chain_ik.solve()


def test_bake_below_a_chain_reads_its_solution(rigify):
    """A group hanging below a chain solved first each frame is read on that frame's solution:
    its solved errors are its playback errors."""
    from chain_ik.app import bake, spec

    rng = np.random.default_rng(1)
    obj = _rig([("hand.L", 3), ("f_index.03.L", 4), ("thumb.03.L", 4)], rng, "fabrik", angle=0.3)
    for item in obj.chain_ik.chains:
        item.target.keyframe_insert("location", frame=1)
        item.target.location.z += 0.03
        item.target.keyframe_insert("location", frame=4)
    specs = [spec.spec_from_item(item) for item in obj.chain_ik.chains]
    result = bake.bake(bpy.context, obj, specs, bake.BakeOptions(frame_start=1, frame_end=4))
    for chain in result.chains:
        assert chain.worst_error == pytest.approx(result.per_chain_error[chain.tip], abs=1e-5)


def test_solving_part_of_a_group_warns(rigify, capfd):
    obj = _rig(HANDS_HEAD[:2], np.random.default_rng(0))
    obj.chain_ik.scope = "SELECTED"
    obj.chain_ik.chains[0].select = True
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert "chain 'hand.L' shares bones with 'hand.R', not solved now" in capfd.readouterr().out
