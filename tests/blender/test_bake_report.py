"""Issue 11 §5-6: the bake reports per chain on playback, warns on misses, turns Live off
for the baked chains, and a stepped (modal) bake can be cancelled leaving everything as it was."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from builders import add_empty, straight_chain
from test_bake import fcurves, frame_jumps, keyed, local_rotations, loop_target, playback

TOL = 1e-4


def _arm(frames=(1, 40), radius=0.7, center=(0.6, 0.3, 1.8)):
    """A 3-bone arm (reach 3) whose panel chain 'Arm' follows a keyed loop."""
    obj = straight_chain(3)
    target = loop_target(frames=frames, center=center, radius=radius)
    bpy.context.view_layer.objects.active = obj
    item = obj.chain_ik.chains.add()
    item.name, item.tip, item.chain_length, item.target = "Arm", "b2", 3, target
    return obj, target, item


def _bake_direct(obj, frames):
    from chain_ik.app import bake as bake_run
    from chain_ik.app import spec as app_spec

    specs = [spec for _, spec in app_spec.specs_from_arguments(obj, "", 0, "", "", "", -1)]
    options = bake_run.BakeOptions(frame_start=frames[0], frame_end=frames[1])
    return bake_run.bake(bpy.context, obj, specs, options)


def test_report_per_chain_by_name_measured_on_playback(scene, capfd):
    obj, target, _ = _arm()
    assert bpy.ops.chain_ik.bake() == {"FINISHED"}
    out = capfd.readouterr().out
    assert "chain 'Arm' (triangulation): 40 frame(s), worst tip error" in out
    assert "Warning:" not in out
    result = _bake_direct(obj, (1, 40))
    (report,) = result.chains
    assert (report.name, report.tip, report.frames, report.missed) == ("Arm", "b2", 40, 0)
    errors = playback(obj, "b2", target, range(1, 41))
    assert abs(report.worst_error - errors.max()) < 1e-9 and report.worst_error < TOL
    jumps = frame_jumps(local_rotations(obj, ["b0", "b1", "b2"], range(1, 41)))
    assert abs(report.largest_jump - jumps.max()) < 1e-3, (report.largest_jump, jumps.max())
    assert report.jump_frame == 2 + int(np.argmax(jumps.max(axis=1)))
    assert set(report.as_dict()) >= {"name", "frames", "missed", "worst_error", "largest_jump"}
    # measure=False (benchmarks): no playback pass, no per-chain report, and the line says so.
    assert bpy.ops.chain_ik.bake(measure=False) == {"FINISHED"}
    assert "as solved (not measured)" in capfd.readouterr().out


def test_warning_when_the_tip_misses_on_some_frames(scene, capfd):
    # The loop leaves the arm's reach (3) on part of its way.
    obj, target, _ = _arm(radius=2.0, center=(0.0, 0.0, 2.5))
    assert bpy.ops.chain_ik.bake() == {"FINISHED"}
    out = capfd.readouterr().out
    errors = playback(obj, "b2", target, range(1, 41))
    missed = int(np.count_nonzero(errors > 1e-5 * 3.0))
    assert 0 < missed < 40
    assert f"Warning: the tip misses its target by more than the tolerance on frames of 'Arm' {missed} of 40" in out
    assert f"{missed} missed by more than" in out


def test_bake_switches_live_off_for_the_baked_chains_only(scene, capfd):
    obj, target, item = _arm()
    other = obj.chain_ik.chains.add()
    other.name, other.tip, other.chain_length, other.target = "Elsewhere", "b2", 1, add_empty("T2", (0, 1, 3))
    item.live, other.live = True, False
    assert bpy.ops.chain_ik.bake(chain_index=0) == {"FINISHED"}
    assert not item.live
    assert "Warning: Live switched off on 'Arm'" in capfd.readouterr().out
    # The keys play back as baked: Live no longer solves over them.
    assert playback(obj, "b2", target, range(1, 41)).max() < TOL


def test_bake_refuses_a_live_chain_above_the_baked_chain(scene):
    """Live is held off while baking: a live chain the baked one hangs from would stay put through
    the bake and move on playback (issue 22 §8's neighbour in Bake). Refused, naming it."""
    obj = straight_chain(4)
    spine_goal = loop_target(frames=(1, 10), center=(0.3, 0.0, 1.7), radius=0.4)
    spine = obj.chain_ik.chains.add()
    spine.name, spine.tip, spine.chain_length, spine.target = "Spine", "b1", 2, spine_goal
    arm = obj.chain_ik.chains.add()
    arm.name, arm.tip, arm.chain_length, arm.target = "Arm", "b3", 2, add_empty("Goal", (1.0, 0.5, 3.0))
    spine.live = True
    with pytest.raises(RuntimeError, match="Live chain 'Spine' poses bone 'b0', which the baked chains hang from"):
        bpy.ops.chain_ik.bake(chain_index=1, frame_start=1, frame_end=10)
    assert obj.animation_data is None or obj.animation_data.action is None
    # Baked with it (its Live then switched off), or with its Live off: both bake.
    assert bpy.ops.chain_ik.bake(frame_start=1, frame_end=10) == {"FINISHED"}
    assert not spine.live


def _live_arm_elsewhere():
    """Armature 'A' (p0-p2) whose Live chain 'Lead' follows a keyed loop; armature 'Rig' (b0-b2) beside it."""
    lead_rig = straight_chain(3, name="A")
    lead_rig.location = (3.0, 0.0, 0.0)
    lead = lead_rig.chain_ik.chains.add()
    goal = loop_target("LeadGoal", frames=(1, 10), center=(3.4, 0.3, 2.0), radius=0.5)
    lead.name, lead.tip, lead.chain_length, lead.target = "Lead", "b2", 2, goal
    lead.live = True
    obj = straight_chain(3)
    bpy.context.view_layer.objects.active = obj
    bpy.context.view_layer.update()
    return obj, lead_rig, lead


@pytest.mark.parametrize("rides", ["target bone", "pole bone", "target parented", "armature parented"])
def test_bake_refuses_what_rides_on_another_armatures_live_chain(scene, rides):
    """Was: a target on another armature's Live chain stood still through the bake ('largest jump
    0.00°' over a moving target); played back with Live on, the tip missed by 1.13."""
    obj, lead_rig, lead = _live_arm_elsewhere()
    kwargs = {"tip": "b2", "chain_length": 3, "frame_start": 1, "frame_end": 10}
    if rides == "target bone":
        kwargs.update(target="A", target_bone="b2")
    elif rides == "pole bone":
        kwargs.update(target=add_empty("Goal", (1.0, 0.5, 2.0)).name, pole="A", pole_bone="b2")
    elif rides == "target parented":
        goal = add_empty("Goal", (0.0, 0.0, 0.3))
        goal.parent, goal.parent_type, goal.parent_bone = lead_rig, "BONE", "b1"
        kwargs.update(target="Goal")
    else:
        bpy.context.view_layer.objects.active = obj
        kwargs.update(target=add_empty("Goal", (1.0, 0.5, 2.0)).name)
        obj.parent, obj.parent_type, obj.parent_bone = lead_rig, "BONE", "b2"
    bpy.context.view_layer.update()
    with pytest.raises(RuntimeError, match="Live chain 'Lead' of armature 'A' poses bone 'b[12]', which a target or"):
        bpy.ops.chain_ik.bake(**kwargs)
    assert obj.animation_data is None or obj.animation_data.action is None
    # Its Live off (or that chain baked first): the bake goes ahead, and plays back as baked.
    lead.live = False
    assert bpy.ops.chain_ik.bake(**kwargs) == {"FINISHED"}


def test_a_live_chain_on_another_armature_that_nothing_rides_on_is_left_alone(scene):
    obj, lead_rig, lead = _live_arm_elsewhere()
    goal = add_empty("Goal", (1.0, 0.5, 2.0))
    goal.parent, goal.parent_type, goal.parent_bone = lead_rig, "BONE", "b0"  # below the Live chain's bones
    assert bpy.ops.chain_ik.bake(tip="b2", chain_length=3, target="Goal", frame_start=1, frame_end=4) == {"FINISHED"}
    assert lead.live


def test_fk_bake_refuses_followed_bones_riding_on_another_armatures_live_chain(scene):
    obj, lead_rig, lead = _live_arm_elsewhere()
    con = obj.pose.bones["b1"].constraints.new("COPY_ROTATION")  # the followed bone copies A's b2
    con.target, con.subtarget = lead_rig, "b2"
    bpy.context.view_layer.update()
    with pytest.raises(RuntimeError, match="Live chain 'Lead' of armature 'A' poses bone 'b1', which the followed"):
        bpy.ops.chain_ik.bake_fk(pairs="b2:b1", frame_start=1, frame_end=4)
    assert obj.animation_data is None or obj.animation_data.action is None


@pytest.mark.parametrize("setting", ["influence", "jacobian"])
def test_stepped_bake_cancelled_leaves_everything_as_it_was(scene, monkeypatch, setting):
    """Steps: influence below 1 takes the per-frame kernel, a step per frame; an iterative solver
    stays on the sequence kernel, which a stepped bake calls a chunk of frames at a time (else Esc
    waits), with the keys of one blocking call."""
    from chain_ik.app import bake as bake_run
    from chain_ik.app import live
    from chain_ik.app import spec as app_spec
    from chain_ik.app.bake import bake_job, bake_solve

    monkeypatch.setattr(bake_solve, "CHUNK", 3)

    obj, target, item = _arm(frames=(1, 120))
    if setting == "influence":
        item.influence = 0.9
    else:
        item.method = "jacobian"
    obj.pose.bones["b1"].rotation_quaternion = (0.9, 0.1, 0.0, 0.0)
    obj.pose.bones["b1"].keyframe_insert("rotation_quaternion", frame=50)
    before = keyed(obj)
    unbaked = obj.animation_data.action.copy()
    scene.frame_set(7)
    specs = [spec for _, spec in app_spec.specs_from_arguments(obj, "", 0, "", "", "", -1)]
    job = bake_job.BakeJob(bpy.context, obj, specs, bake_run.BakeOptions(1, 120))
    assert not job.step(0.0) and job.phase == "solve"
    for _ in range(30):
        assert not job.step(0.0)
    assert 0.0 < job.fraction < 1.0
    assert job.cancel()
    job.end()
    assert keyed(obj) == before and scene.frame_current == 7 and not live.is_busy()
    # Run to the end instead: the same keys as one blocking bake.
    job = bake_job.BakeJob(bpy.context, obj, specs, bake_run.BakeOptions(1, 120))
    while not job.step(0.01):
        pass
    job.end()
    assert not job.cancel()  # keys written: cancelling no longer applies
    assert keyed(obj) != before and job.result.chains[0].frames == 120
    assert [len(fc.keyframe_points) for fc in fcurves(obj)] == [120] * 12
    stepped = keyed(obj)
    obj.animation_data.action = unbaked
    for name in ("b0", "b2"):  # not keyed before: back to their values before the bake
        obj.pose.bones[name].rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
    scene.frame_set(7)
    bake_run.bake(bpy.context, obj, specs, bake_run.BakeOptions(1, 120))
    for key, keys in keyed(obj).items():
        np.testing.assert_allclose(np.array(keys), np.array(stepped[key]), atol=1e-6, err_msg=str(key))


def test_invoke_without_a_window_bakes_in_one_go(scene):
    """The panel's button invokes the operator: headless (no window to run a modal in) that is execute."""
    obj, target, _ = _arm()
    assert bpy.ops.chain_ik.bake("INVOKE_DEFAULT") == {"FINISHED"}
    assert playback(obj, "b2", target, range(1, 41)).max() < TOL


def test_rounding_beyond_the_tolerance_is_counted_not_warned(scene, capfd):
    # Triangulation solves the loop to ~1e-16; Blender plays float32 keys back ~1e-7 to 1e-6 off.
    # A tolerance of 1e-8 is met by every solve and exceeded on playback by rounding alone.
    obj, target, item = _arm()
    item.tolerance = 1e-8
    assert bpy.ops.chain_ik.bake() == {"FINISHED"}
    out = capfd.readouterr().out
    assert "Warning:" not in out
    result = _bake_direct(obj, (1, 40))
    (report,) = result.chains
    errors = playback(obj, "b2", target, range(1, 41))
    beyond = int(np.count_nonzero(errors > 1e-8))
    assert result.per_chain_error["b2"] <= 1e-8 < report.worst_error  # the solve met it; playback did not
    assert report.missed == report.rounding == beyond > 0 and report.real_missed == 0
    # The stated floor: 16 float32 epsilons of the path from the world origin (a reach-3 arm at the origin).
    assert report.float32_floor == pytest.approx(16 * float(np.finfo(np.float32).eps) * 3.0, rel=0.2)
    assert report.worst_error <= 1e-8 + report.float32_floor
    assert f"{beyond} beyond the tolerance 1e-08 by float32 rounding alone" in out
    assert "missed by more than" not in out
    assert _warning(result.chains) == ""


def test_a_real_miss_still_warns_its_frames_alone(scene, capfd):
    obj, target, _ = _arm(radius=2.0, center=(0.0, 0.0, 2.5))
    (report,) = _bake_direct(obj, (1, 40)).chains
    # The solve missed (out of reach): no frame is put down to rounding, every one warns.
    assert report.missed > 0 and report.rounding == report.reduced_missed == 0
    assert report.real_missed == report.missed
    assert f"'Arm' {report.missed} of 40" in _warning([report])


@pytest.mark.parametrize("mode", ["TIP", "ANGLE"])
def test_key_reduction_within_its_bound_is_not_a_miss(scene, capfd, mode):
    obj, target, _ = _arm()
    assert bpy.ops.chain_ik.bake(reduce=True, reduce_mode=mode, reduce_tolerance=0.001) == {"FINISHED"}
    out = capfd.readouterr().out
    assert "Warning:" not in out
    result = _bake_direct_reduced(obj, mode)
    (report,) = result.chains
    errors = playback(obj, "b2", target, range(1, 41))
    assert report.missed == int(np.count_nonzero(errors > report.tolerance)) > 0  # still counted on playback
    assert report.real_missed == 0 and report.reduced_missed > 0
    assert report.reduce_mode == mode and report.worst_error <= report.reduce_bound
    if mode == "TIP":  # the tolerance + Max Tip Error (+ the float32 floor)
        assert report.reduce_bound == pytest.approx(report.tolerance + 0.001 + report.float32_floor)
    line = report.line()
    assert f"{report.reduced_missed} beyond the tolerance {report.tolerance:.3g} by key reduction" in line
    assert ("Max Tip Error 0.001" if mode == "TIP" else "Max Joint Error 0.1°") in line


def test_key_reduction_on_a_real_miss_still_warns(scene, capfd):
    obj, target, _ = _arm(radius=2.0, center=(0.0, 0.0, 2.5))
    assert bpy.ops.chain_ik.bake(reduce=True, reduce_tolerance=0.001) == {"FINISHED"}
    out = capfd.readouterr().out
    (report,) = _bake_direct_reduced(obj, "TIP").chains
    assert report.real_missed == report.missed > 0 and report.reduced_missed == 0
    assert f"Warning: the tip misses its target by more than the tolerance on frames of 'Arm' {report.missed}" in out


def _bake_direct_reduced(obj, mode):
    from chain_ik.app import bake as bake_run
    from chain_ik.app import spec as app_spec

    specs = [spec for _, spec in app_spec.specs_from_arguments(obj, "", 0, "", "", "", -1)]
    options = bake_run.BakeOptions(frame_start=1, frame_end=40, reduce=True, reduce_mode=mode, reduce_tolerance=0.001)
    return bake_run.bake(bpy.context, obj, specs, options)


def _warning(reports) -> str:
    from chain_ik.app.bake import bake_report

    return bake_report.missed_warning(reports)


@pytest.mark.parametrize("cause", ["influence", "lock"])
def test_key_reduction_does_not_explain_a_miss_it_did_not_cause(scene, capfd, cause):
    # Influence 0.99, or a locked channel kept, leaves the tip off the target on playback (the solve
    # itself met the tolerance): a miss whatever Reduce Keys does, one the report must warn of with it on too.
    obj, target, item = _arm()
    if cause == "influence":
        item.influence = 0.99
    else:
        obj.pose.bones["b1"].lock_rotation[0] = True
    assert bpy.ops.chain_ik.bake() == {"FINISHED"}
    plain = capfd.readouterr().out
    assert "Warning: the tip misses its target" in plain
    assert bpy.ops.chain_ik.bake(reduce=True, reduce_tolerance=10.0) == {"FINISHED"}
    out = capfd.readouterr().out
    assert "Warning: the tip misses its target" in out, out


def test_moved_root_line_says_still_below_rounding(ext):
    """user14: 'moved up to 2.24e-08' where Move Root changed nothing."""
    from chain_ik.app.bake import bake_report

    assert bake_report.moved_root_line("hips", 2.24e-08).startswith("Move Root did not need to move bone 'hips'")
    line = bake_report.moved_root_line("hips", 0.0432)
    assert line == "Move Root keyed the location of bone 'hips': its head moved up to 0.0432 on playback"
