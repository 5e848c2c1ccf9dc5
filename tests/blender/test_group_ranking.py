"""Issue 22, classes 2, 3 and 9 in real Blender, on Rigify's human metarig, through the operators:
pins hold in every method whatever the other targets do, and the reports say when one cannot;
a Live pin holds the point it was given; weights and priorities rank a compromise in every
method; two chains ending on one bone meet at their weighted mean (as Blender's tree IK)."""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest
from builders import channel_state, metarig, random_pose, restore_channels, world_point
from mathutils import Quaternion, Vector

METHODS = ("fabrik", "ccd", "jacobian", "triangulation")
LEGS_SPINE = [("shin.L", 3), ("shin.R", 3), ("spine.006", 7)]  # all three meet at the hips ('spine')
HANDS = [("hand.L", 6), ("hand.R", 6)]  # both meet at spine.002/.003


def _rig(chains, method, rng=None, angle=0.4):
    """The metarig with one chain per (tip, length) and an empty target each, at the tip (or, with
    `rng`, where a random FK pose of the chains' bones puts it: jointly reachable)."""
    obj = metarig(location=(0.4, -0.2, 0.1), turn=0.5, scale=1.0)
    bpy.context.view_layer.update()
    goals = [world_point(obj, tip) for tip, _ in chains]
    if rng is not None:
        from chain_ik import rig

        names = sorted({n for tip, length in chains for n in rig.chain_bone_names(obj, tip, length)})
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


def _tolerance(obj, item) -> float:
    from chain_ik.app import spec
    from chain_ik.app.solve import result

    return result.world_tolerance(obj, spec.spec_from_item(item))


def _pin(obj, index):
    item = obj.chain_ik.chains[index]
    item.pin, item.target = True, None
    return item, world_point(obj, item.tip)


def _locked_knee(obj):
    """shin.L bent 70° about X where its IK limits allow a hinge of only ±5°: no pose within the
    limits puts the pinned ankle where the input pose has it."""
    pb = obj.pose.bones["shin.L"]
    pb.rotation_mode = "QUATERNION"
    pb.rotation_quaternion = Quaternion((1.0, 0.0, 0.0), math.radians(70.0))
    pb.use_ik_limit_x, pb.ik_min_x, pb.ik_max_x = True, math.radians(-5.0), math.radians(5.0)
    pb.lock_ik_y = pb.lock_ik_z = True
    bpy.context.view_layer.update()


@pytest.mark.parametrize("method", METHODS)
def test_a_pin_holds_whatever_the_other_targets_do(rigify, method, capfd):
    obj = _rig(LEGS_SPINE, method)
    left, held = _pin(obj, 0)
    obj.chain_ik.chains[1].target.location.x += 0.5  # the other foot far to the side
    obj.chain_ik.chains[2].target.location.z += 3.0  # the head three metres up: out of reach
    bpy.context.view_layer.update()
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    bpy.context.view_layer.update()
    moved = np.linalg.norm(world_point(obj, "shin.L") - held)
    assert moved <= _tolerance(obj, left), moved
    assert left.result.reached and left.result.error == pytest.approx(moved, abs=1e-6)
    out = capfd.readouterr().out
    assert "chain 'shin.L'" in out and "pinned, tip moved" in out and "could not hold" not in out
    assert not obj.chain_ik.chains[2].result.reached  # the head did not claim a reach it did not get


@pytest.mark.parametrize("method", METHODS)
def test_a_pin_that_cannot_hold_is_reported(rigify, method, capfd):
    obj = _rig(LEGS_SPINE, method)
    _locked_knee(obj)
    left, held = _pin(obj, 0)
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    bpy.context.view_layer.update()
    moved = float(np.linalg.norm(world_point(obj, "shin.L") - held))
    assert moved > 10 * _tolerance(obj, left)
    out = capfd.readouterr().out
    assert f"Warning: pinned chain 'shin.L' could not hold: its tip is {moved:.3g} from where it was pinned" in out
    assert not left.result.reached and left.result.error == pytest.approx(moved, abs=1e-6)
    assert left.result.reason.startswith("the pin could not hold")
    others = obj.chain_ik.chains[1].result.reason
    assert "pinned 'shin.L' could not hold" in others


def test_the_bake_report_and_cli_json_say_when_a_pin_did_not_hold(rigify, tmp_path):
    import json
    import subprocess
    import sys

    from conftest import REPO

    obj = _rig(LEGS_SPINE, "fabrik")
    _locked_knee(obj)
    _pin(obj, 0)
    bpy.ops.object.mode_set(mode="OBJECT")
    path = tmp_path / "pinned.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    out = tmp_path / "report.json"
    args = [sys.executable, str(REPO / "cli.py"), str(path), "--", "--armature", obj.name, "--frames", "1-3",
            "--json", str(out)]  # fmt: skip
    run = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    left, right = json.loads(out.read_text())["per_chain"][:2]
    assert left["pinned"] and left["missed"] == 3 and left["worst_error"] > 0.1
    assert not right["pinned"]
    assert "chain 'shin.L' (fabrik, group shin.L + shin.R + spine.006): 3 frame(s), the pin did not hold on 3" in (
        run.stdout
    )


def test_a_bake_whose_pin_holds_says_so(rigify, capfd):
    obj = _rig(LEGS_SPINE, "jacobian")
    _pin(obj, 0)
    head = obj.chain_ik.chains[2].target
    for frame, z in ((1, 0.0), (4, 0.3)):
        head.location.z += z
        head.keyframe_insert("location", frame=frame)
    assert bpy.ops.chain_ik.bake(frame_start=1, frame_end=4) == {"FINISHED"}
    out = capfd.readouterr().out
    assert "chain 'shin.L' (jacobian, group shin.L + shin.R + spine.006): 4 frame(s), the pin held" in out
    assert "the pin does not hold" not in out


@pytest.mark.parametrize("method", ["fabrik", "jacobian"])
def test_a_live_pin_holds_the_point_it_was_given(rigify, method):
    """100 Live updates, the head's target moving (partly out of reach): the pinned ankle stays within
    its tolerance of where it was pinned on every update, and the point the next solve holds is still
    exactly that one (it used to be re-read from the last result, creeping ~1.6e-6 per update)."""
    from chain_ik.app import spec
    from chain_ik.app.solve import solve_unit

    obj = _rig(LEGS_SPINE, method)
    left, held = _pin(obj, 0)
    head = obj.chain_ik.chains[2]
    start = head.target.location.copy()
    tolerance = _tolerance(obj, left)
    specs = [spec.spec_from_item(item) for item in obj.chain_ik.chains]
    # The point the first update will hold (computed on the same pose; nothing written).
    given = np.array(solve_unit(obj, specs, bpy.context.evaluated_depsgraph_get())[0].goal_world)
    assert np.linalg.norm(given - held) <= 0.2 * tolerance  # the pose's own ankle, as read
    head.live = True
    try:
        for k in range(100):
            head.target.location = start + Vector((0.3 * math.sin(0.2 * k), 0.3, 0.5 + 0.2 * math.cos(0.3 * k)))
            bpy.context.view_layer.update()
            assert np.linalg.norm(world_point(obj, "shin.L") - held) <= tolerance, k
            assert left.result.reached
    finally:
        head.live = False
    (outcome, *_) = solve_unit(obj, specs, bpy.context.evaluated_depsgraph_get())
    assert np.linalg.norm(np.array(outcome.goal_world) - given) < 1e-9  # no drift at all


def test_turning_a_pinned_bone_by_hand_moves_the_pin_with_it(rigify):
    """The held point is the user's pose: after a solve, turning the pinned leg's thigh by hand
    makes the next solve hold the ankle where the user put it."""
    obj = _rig(LEGS_SPINE, "fabrik")
    left, _ = _pin(obj, 0)
    obj.chain_ik.chains[2].target.location.z += 0.1
    bpy.context.view_layer.update()
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    thigh = obj.pose.bones["thigh.L"]
    thigh.rotation_mode = "QUATERNION"
    thigh.rotation_quaternion = Quaternion((0.0, 0.0, 1.0), 0.3) @ thigh.rotation_quaternion
    bpy.context.view_layer.update()
    moved_by_hand = world_point(obj, "shin.L")
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    bpy.context.view_layer.update()
    assert np.linalg.norm(world_point(obj, "shin.L") - moved_by_hand) <= _tolerance(obj, left)


@pytest.mark.parametrize("method", METHODS)
def test_weights_rank_the_compromise_in_every_method(rigify, method):
    obj = _rig(HANDS, method, np.random.default_rng(11))
    obj.chain_ik.chains[0].target.location.x += 1.5
    obj.chain_ik.chains[1].target.location.x -= 1.5
    bpy.context.view_layer.update()
    saved = channel_state(obj)
    errors = {}
    for weights in ((10.0, 1.0), (1.0, 1.0), (1.0, 10.0)):
        restore_channels(obj, saved)
        obj.chain_ik.chains[0].weight, obj.chain_ik.chains[1].weight = weights
        assert bpy.ops.chain_ik.solve() == {"FINISHED"}
        errors[weights] = [item.result.error for item in obj.chain_ik.chains]
    heavy_left, even, heavy_right = errors.values()
    assert heavy_left[0] < even[0] < heavy_right[0], errors
    assert heavy_right[1] < even[1] < heavy_left[1], errors


@pytest.mark.parametrize("method", METHODS)
def test_a_higher_priority_is_never_worse_off(rigify, method):
    obj = _rig(HANDS, method, np.random.default_rng(5))
    right = obj.chain_ik.chains[1]
    right.target.location.x -= 1.5  # out of reach: it pulls the shared spine its way
    bpy.context.view_layer.update()
    saved = channel_state(obj)
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    even = obj.chain_ik.chains[0].result.error
    restore_channels(obj, saved)
    right.priority = 1
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    ranked = obj.chain_ik.chains[0].result.error
    assert ranked <= even + _tolerance(obj, obj.chain_ik.chains[0]) and ranked <= 1e-4, (ranked, even)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("weights", [(1.0, 1.0), (3.0, 1.0)])
def test_two_chains_ending_on_one_bone_meet_at_their_weighted_mean(rigify, method, weights):
    """Both chains end on hand.L (one group): neither target can be met, the hand ends at their
    weighted mean, as Blender's tree IK puts it; each chain's error is measured to its own target."""
    obj = _rig([HANDS[0], HANDS[0]], method, np.random.default_rng(3), angle=0.3)
    first, second = obj.chain_ik.chains
    mean = np.array(first.target.location)
    apart = np.array([0.0, 0.12, 0.08])
    first.target.location = Vector(mean + apart)
    second.target.location = Vector(mean - weights[0] / weights[1] * apart)
    first.weight, second.weight = weights
    bpy.context.view_layer.update()
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    bpy.context.view_layer.update()
    tip = world_point(obj, "hand.L")
    assert np.linalg.norm(tip - mean) <= 2.0 * _tolerance(obj, first)
    for item in (first, second):
        assert item.result.group == "hand.L + hand.L" and not item.result.reached
        assert item.result.error == pytest.approx(np.linalg.norm(tip - np.array(item.target.location)), abs=1e-6)
