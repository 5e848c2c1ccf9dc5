"""Aim chains (issue 20 item 4) in Blender: a chain's Aim Axis and Aim Spread through Solve, the
Result box, Bake and its report, the script arguments and cli.py; Rigify's metarig turning its
head while both hands reach (every method), a built neck for each axis, spread and limits."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import bpy
import numpy as np
import pytest
from builders import add_empty, channel_state, make_armature, metarig, random_pose, restore_channels, world_point
from mathutils import Vector
from test_bake import keyed

METHODS = ["triangulation", "fabrik", "ccd", "jacobian"]
AXES = ["+X", "-X", "+Y", "-Y", "+Z", "-Z"]
NECK = ("n1", "n2", "head")
TOL = 1e-5  # the chains' tolerance (world distance): an aim is reached when its ray passes this near


def _neck(name: str = "Rig"):
    """Two neck bones and a head, upright (roll 0: each bone's +Z faces -Y, the metarig's front)."""
    bones = [
        ("n1", (0, 0, 1.5), (0, 0, 1.55), None, False, 0.0),
        ("n2", (0, 0, 1.55), (0, 0, 1.6), "n1", True, 0.0),
        ("head", (0, 0, 1.6), (0, 0, 1.8), "n2", True, 0.0),
    ]
    obj = make_armature(bones, name)
    for n in NECK:
        obj.pose.bones[n].rotation_mode = "QUATERNION"
    return obj


def _aim(obj, target, tip="head", length=3, axis="+Z", spread=0.7, method="triangulation", name="Head"):
    item = obj.chain_ik.chains.add()
    item.name, item.tip, item.chain_length, item.target, item.method = name, tip, length, target, method
    item.aim_axis, item.aim_spread, item.tolerance, item.max_iterations = axis, spread, TOL, 2000
    return item


def _measured(obj, tip: str, axis: str, target) -> tuple[float, float]:
    """(degrees between the tip bone's axis and its head-to-target line, the ray's miss), from the
    evaluated pose alone."""
    bpy.context.view_layer.update()
    m = obj.matrix_world @ obj.pose.bones[tip].matrix
    column = {"X": 0, "Y": 1, "Z": 2}[axis[1]]
    a = np.array(m.col[column][:3]) * (1.0 if axis[0] == "+" else -1.0)
    d = np.asarray(target, dtype=float) - np.array(m.translation[:])
    angle = math.atan2(float(np.linalg.norm(np.cross(a, d))), float(a @ d))
    return math.degrees(angle), float(np.linalg.norm(d)) * math.sin(angle)


def _turn(obj, name: str) -> float:
    """Degrees bone `name` turned from its rest (its local rotation)."""
    return math.degrees(obj.pose.bones[name].matrix_basis.to_quaternion().angle)


# --------------------------------------------------------------------------- Rigify's metarig


def _hand_target(obj, side: str, rng, shoulder: bool) -> np.ndarray:
    """A world point the arm (upper arm to hand, from the shoulder with `shoulder`) reaches with a
    random pose, the pose put back."""
    names = [f"{n}.{side}" for n in ("shoulder", "upper_arm", "forearm", "hand")[0 if shoulder else 1 :]]
    saved = channel_state(obj)
    random_pose(obj, names, rng, max_angle=0.4)
    point = world_point(obj, f"hand.{side}")
    restore_channels(obj, saved)
    bpy.context.view_layer.update()
    return point


@pytest.mark.parametrize("shared", [False, True], ids=["apart", "one group"])
@pytest.mark.parametrize("method", METHODS)
def test_metarig_head_aims_while_both_hands_reach(scene, rigify, method, shared, capfd):
    """The head chain (neck bones and head; with `shared` from the chest, which the hand chains
    hold too: one group) aims its +Z (forward) at a target to the side and above while both hand
    chains reach: each head-chain bone turns a visible share, the angle ends within tolerance,
    the hands reach, the report says the angle."""
    obj = metarig()
    rng = np.random.default_rng(7 + len(method))
    goals = {side: _hand_target(obj, side, rng, shared) for side in "LR"}
    head = obj.matrix_world @ obj.pose.bones["spine.006"].head
    look = head + obj.matrix_world.to_3x3() @ Vector((0.8, -1.0, 0.6))  # left, forward, up (armature)
    head_target = add_empty("Look", look)
    bpy.context.view_layer.objects.active = obj
    _aim(obj, head_target, "spine.006", 4 if shared else 3, method=method)
    for side in "LR":
        item = obj.chain_ik.chains.add()
        item.name, item.tip, item.chain_length = f"Hand {side}", f"hand.{side}", 5 if shared else 3
        item.target, item.method = add_empty(f"Goal {side}", goals[side]), method
        item.tolerance, item.max_iterations = TOL, 2000
    before = channel_state(obj)
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    out = capfd.readouterr().out
    angle, miss = _measured(obj, "spine.006", "+Z", look)
    for side in "LR":
        assert np.linalg.norm(world_point(obj, f"hand.{side}") - goals[side]) < 1e-4, (method, side)
    head_item = obj.chain_ik.chains[0]
    print(f"{method} {'group' if shared else 'apart'}: angle {angle:.2e} deg, miss {miss:.2e}, turns",
          [round(_turn(obj, n), 2) for n in ("spine.004", "spine.005", "spine.006")])  # fmt: skip
    assert head_item.result.aimed and head_item.result.reached
    assert miss <= TOL * 1.01 and head_item.result.angle == pytest.approx(angle, abs=1e-4)
    for name in ("spine.004", "spine.005", "spine.006"):
        assert _turn(obj, name) > 3.0, name  # a visible share each (the look turns ~40 degrees)
    if shared:  # the chest holds the hands: the aim leaves it to them (solvers.common.aim_goals)
        assert "(group " in out
    changed = {n for n, v in channel_state(obj).items() if v != before[n]}
    assert changed <= {"spine.003", "spine.004", "spine.005", "spine.006"} | {
        f"{n}.{s}" for n in ("shoulder", "upper_arm", "forearm", "hand") for s in "LR"
    }
    assert f"chain 'Head'{' (group ' if shared else ':'}" in out and "° off the target" in out


# --------------------------------------------------------------------------- a built neck


@pytest.mark.parametrize("spread", [0.0, 1.0])
@pytest.mark.parametrize("axis", AXES)
def test_each_axis_and_spread(scene, axis, spread):
    obj = _neck()
    look = (0.7, -1.2, 2.1)
    item = _aim(obj, add_empty("Look", look), axis=axis, spread=spread)
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    angle, miss = _measured(obj, "head", axis, look)
    assert miss <= TOL and item.result.reached and item.result.aimed
    assert item.result.angle == pytest.approx(angle, abs=1e-4) and item.result.error == pytest.approx(miss, abs=1e-6)
    turns = [_turn(obj, n) for n in NECK]
    if spread == 0.0:
        assert turns[0] == 0.0 and turns[1] == 0.0 and turns[2] > 1.0
    else:
        assert min(turns) > 1.0


def test_limits_are_honoured_and_the_angle_left_is_reported(scene, capfd):
    """Each bone may turn 10 degrees about each axis: a target behind the head is out of the
    aim's range; the angle left is reported (not reached), the limits hold."""
    obj = _neck()
    for n in NECK:
        pb = obj.pose.bones[n]
        for a in "xyz":
            setattr(pb, f"use_ik_limit_{a}", True)
            setattr(pb, f"ik_min_{a}", math.radians(-10))
            setattr(pb, f"ik_max_{a}", math.radians(10))
    look = (0.3, 2.0, 1.7)  # behind (the head faces -Y)
    item = _aim(obj, add_empty("Look", look), method="jacobian")
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    out = capfd.readouterr().out
    angle, miss = _measured(obj, "head", "+Z", look)
    assert not item.result.reached and item.result.angle == pytest.approx(angle, abs=1e-4) and angle > 90.0
    assert f"aims +Z {item.result.angle:.3g}° off the target" in out
    assert "aim on bone 'head': joint limits block the aim" in out  # the core's bone index named
    from chain_ik import rig
    from chain_ik.solvers import limits as joint_limits

    read = rig.read_chain(obj.evaluated_get(bpy.context.evaluated_depsgraph_get()), "head", 3, True, True)
    assert np.max(joint_limits.violation(read.chain.limits, read.chain.input_locals)) < 1e-6  # float32 channels
    assert max(_turn(obj, n) for n in NECK) > 5.0  # it turned as far as it may


def test_a_pinned_aim_use_tail_off_and_a_bad_spread_are_refused(scene):
    obj = _neck()
    item = _aim(obj, add_empty("Look", (0.5, -1.0, 1.7)))
    before = channel_state(obj)
    item.pin = True
    with pytest.raises(RuntimeError, match="is pinned and aims"):
        bpy.ops.chain_ik.solve()
    item.pin, item.use_tail = False, False
    with pytest.raises(RuntimeError, match="aims with Use Tail off"):
        bpy.ops.chain_ik.solve()
    item.use_tail = True
    with pytest.raises(RuntimeError, match="aim spread must be within 0..1"):
        bpy.ops.chain_ik.solve(aim_spread=1.5)
    assert channel_state(obj) == before


def test_an_aim_target_on_the_tip_bones_head_is_refused_and_nothing_written(scene):
    obj = _neck()
    item = _aim(obj, add_empty("Look", (0.0, 0.0, 1.6)))  # the head bone's head
    before = channel_state(obj)
    with pytest.raises(RuntimeError, match="effector on bone 'head' is at its tip bone's head"):
        bpy.ops.chain_ik.solve()
    assert channel_state(obj) == before and not item.has_result
    with pytest.raises(RuntimeError, match="at its tip bone's head"):
        bpy.ops.chain_ik.bake(frame_start=1, frame_end=3)
    assert channel_state(obj) == before
    assert obj.animation_data is None or obj.animation_data.action is None


def test_script_arguments_aim_a_chain(scene):
    """solve(tip=..., aim_axis=...) aims a chain of the arguments alone; aim_axis alone over the
    panel's chains turns a reaching chain into an aim."""
    obj = _neck()
    look = (-0.6, -1.0, 1.4)
    add_empty("Look", look)
    assert bpy.ops.chain_ik.solve(tip="head", chain_length=3, target="Look", aim_axis="+Z") == {"FINISHED"}
    assert _measured(obj, "head", "+Z", look)[1] <= 1e-5 * 0.3 * 1.01 + 1e-7
    item = _aim(obj, bpy.data.objects["Look"], axis="NONE")
    assert bpy.ops.chain_ik.solve(aim_axis="-Y", aim_spread=0.0) == {"FINISHED"}
    assert item.result.aimed and item.result.reached and _measured(obj, "head", "-Y", look)[1] <= TOL


# --------------------------------------------------------------------------- Bake


def _swinging_look(frames=range(1, 6)):
    look = add_empty("Look")
    for k, f in enumerate(frames):
        look.location = (-0.8 + 0.4 * k, -1.5, 1.6 + 0.1 * k)
        look.keyframe_insert("location", frame=f)
    return look


def test_bake_keys_an_aiming_chain_and_reports_the_angle_on_playback(scene, capfd):
    from chain_ik.app import bake as bake_run
    from chain_ik.app import spec as app_spec

    obj = _neck()
    look = _swinging_look()
    _aim(obj, look, method="fabrik")
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.chain_ik.bake(frame_start=1, frame_end=5) == {"FINISHED"}
    out = capfd.readouterr().out
    assert "worst aim angle" in out and "aims (the tree's aim pass" in out
    keys = keyed(obj)
    for n in NECK:
        assert len(keys[(f'pose.bones["{n}"].rotation_quaternion', 0)]) == 5, n
    assert {path.split('"')[1] for path, _ in keys} <= set(NECK)  # only the chain's bones keyed
    angles = []
    for f in range(1, 6):
        bpy.context.scene.frame_set(f)
        angles.append(_measured(obj, "head", "+Z", look.matrix_world.translation)[0])
        assert min(_turn(obj, n) for n in NECK) > 1.0  # every neck bone keyed and turned
    assert max(angles) < 1e-3
    specs = [spec for _, spec in app_spec.specs_from_arguments(obj, "", 0, "", "", "", -1)]
    result = bake_run.bake(bpy.context, obj, specs, bake_run.BakeOptions(frame_start=1, frame_end=5))
    (report,) = result.chains
    replayed = []
    for f in range(1, 6):
        bpy.context.scene.frame_set(f)
        replayed.append(_measured(obj, "head", "+Z", look.matrix_world.translation)[0])
    assert report.worst_angle == pytest.approx(max(replayed), abs=1e-6) and report.missed == 0
    assert report.as_dict()["worst_angle"] == report.worst_angle


# --------------------------------------------------------------------------- cli.py


def test_cli_aims_a_chain_and_its_json_has_the_angle(scene, tmp_path):
    """--aim-axis/--aim-spread per --chain: the bake aims, the JSON's chain has the worst angle on
    playback; an unknown axis is refused before the file is opened."""
    from conftest import REPO

    _neck()
    bpy.ops.object.mode_set(mode="OBJECT")
    _swinging_look()
    path, summary = tmp_path / "neck.blend", tmp_path / "s.json"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    args = [path, "--", "--armature", "Rig", "--chain", "head:3", "--target", "Look", "--frames", "1-5"]
    cli = [sys.executable, str(REPO / "cli.py")]
    run = subprocess.run([*cli, *map(str, args), "--aim-axis=+Z", "--aim-spread", "1", "--json", str(summary)],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert run.returncode == 0, run.stderr
    (chain,) = json.loads(summary.read_text())["per_chain"]
    assert chain["worst_angle"] is not None and chain["worst_angle"] < 1e-3 and chain["missed"] == 0
    assert "worst aim angle" in run.stdout
    bad = subprocess.run([*cli, *map(str, args), "--aim-axis=+W"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "argument --aim-axis: invalid choice: '+W'" in bad.stderr, bad.stderr


# --------------------------------------------------------------------------- Mirror Chain, Compare


@pytest.mark.parametrize("axis", ["+X", "-Z", "+Y"])
def test_a_mirrored_aim_chain_aims_to_the_mirror_image(scene, axis):
    """Mirror Chain flips an aim's X axis (a Symmetrized bone's X is minus the mirror of the
    original's), keeps Y and Z: the mirrored chain's solve is the mirror image."""
    from test_mirror_chain import _mirror_x, _rig, _world

    obj = _rig()
    look = add_empty("Look.L", (0.9, -0.8, 1.6))
    add_empty("Look.R", _mirror_x((0.9, -0.8, 1.6)))
    bpy.context.view_layer.objects.active = obj
    _aim(obj, look, "hand.L", 3, axis=axis, spread=0.5, name="Arm.L")
    assert bpy.ops.chain_ik.chain_mirror() == {"FINISHED"}
    mirrored = obj.chain_ik.chains["Arm.R"]
    assert mirrored.aim_axis == {"+X": "-X"}.get(axis, axis) and mirrored.aim_spread == pytest.approx(0.5)
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert all(item.result.reached for item in obj.chain_ik.chains)
    left = _world(obj, ["upper.L", "fore.L", "hand.L"])
    right = _world(obj, ["upper.R", "fore.R", "hand.R"])
    for name, ends in left.items():
        for a, b in zip(ends, right[name[:-1] + "R"], strict=True):
            assert np.linalg.norm(np.array(_mirror_x(a)) - b) < 1e-5


def test_compare_leaves_aiming_chains_out(scene, capfd):
    obj = _neck()
    item = _aim(obj, add_empty("Look", (0.5, -1.0, 1.7)))
    with pytest.raises(RuntimeError, match="pinned or aims"):
        bpy.ops.chain_ik.compare()
    assert not len(item.comparison)


def test_live_follows_an_aim_target(scene):
    obj = _neck()
    bpy.ops.object.mode_set(mode="OBJECT")
    look = add_empty("Look", (0.5, -1.0, 1.7))
    item = _aim(obj, look)
    item.live = True
    try:
        for location in [(0.5, -1.0, 1.7), (-0.7, -1.2, 2.0), (0.1, -0.9, 1.2)]:
            look.location = location
            bpy.context.view_layer.update()  # Live solves
            bpy.context.view_layer.update()  # the written pose evaluates
            angle, miss = _measured(obj, "head", "+Z", location)
            assert miss <= TOL and item.result.aimed and item.result.reached
            assert item.result.angle == pytest.approx(angle, abs=1e-4)
    finally:
        item.live = False


@pytest.mark.parametrize("method", ["fabrik", "jacobian"])
def test_metarig_group_bake_aims_the_head_while_the_hands_reach(scene, rigify, method):
    """One group (chest shared): the hands' targets still, the look swinging over 4 frames; the
    bake (sampled route) keys every frame, the head's angle measured on playback within tolerance
    and the hands reached on every frame."""
    from chain_ik.app import bake as bake_run
    from chain_ik.app import spec as app_spec

    obj = metarig()
    rng = np.random.default_rng(3)
    goals = {side: _hand_target(obj, side, rng, True) for side in "LR"}
    head = np.array((obj.matrix_world @ obj.pose.bones["spine.006"].head)[:])
    look = add_empty("Look")
    for f in range(1, 5):
        look.location = head + np.array(obj.matrix_world.to_3x3() @ Vector((-0.8 + 0.5 * f, -1.0, 0.3)))
        look.keyframe_insert("location", frame=f)
    bpy.context.view_layer.objects.active = obj
    _aim(obj, look, "spine.006", 4, method=method)
    for side in "LR":
        item = obj.chain_ik.chains.add()
        item.name, item.tip, item.chain_length, item.method = f"Hand {side}", f"hand.{side}", 5, method
        item.target, item.tolerance, item.max_iterations = add_empty(f"Goal {side}", goals[side]), TOL, 2000
    specs = [spec for _, spec in app_spec.specs_from_arguments(obj, "", 0, "", "", "", -1)]
    result = bake_run.bake(bpy.context, obj, specs, bake_run.BakeOptions(frame_start=1, frame_end=4))
    reports = {r.name: r for r in result.chains}
    assert reports["Head"].worst_angle is not None and reports["Head"].missed == 0
    assert reports["Hand L"].worst_angle is None and reports["Hand L"].missed == reports["Hand R"].missed == 0
    worst = 0.0
    for f in range(1, 5):
        bpy.context.scene.frame_set(f)
        worst = max(worst, _measured(obj, "spine.006", "+Z", look.matrix_world.translation)[0])
        for side in "LR":
            assert np.linalg.norm(world_point(obj, f"hand.{side}") - goals[side]) < 1e-4
    assert reports["Head"].worst_angle == pytest.approx(worst, abs=1e-6) and worst < 1e-3


def test_bake_frame_by_frame_aims_from_each_frames_own_pose(scene):
    """An animated neck bone sends the aim's bake frame by frame (each frame read and solved there):
    still keyed and aimed on every frame."""
    from chain_ik.app import bake as bake_run
    from chain_ik.app import spec as app_spec

    obj = _neck()
    look = _swinging_look()
    pb = obj.pose.bones["n1"]
    for f, angle in ((1, 0.0), (5, 0.2)):
        pb.rotation_quaternion = (math.cos(angle / 2), math.sin(angle / 2), 0.0, 0.0)
        pb.keyframe_insert("rotation_quaternion", frame=f)
    _aim(obj, look, method="ccd")
    bpy.context.view_layer.objects.active = obj
    specs = [spec for _, spec in app_spec.specs_from_arguments(obj, "", 0, "", "", "", -1)]
    result = bake_run.bake(bpy.context, obj, specs, bake_run.BakeOptions(frame_start=1, frame_end=5))
    (report,) = result.chains
    assert report.missed == 0 and report.worst_angle < 1e-3
    assert report.path == "baked frame by frame: aims (the tree's aim pass: solvers.common.aim_goals)"


def test_the_panel_draws_the_aim_rows_and_the_result(scene):
    """The chain box has Aim Axis and Aim Spread; the Result box the angle left."""
    from chain_ik.ui import panels
    from recording import RecordingLayout

    obj = _neck()
    bpy.context.view_layer.objects.active = obj
    item = _aim(obj, add_empty("Look", (0.5, -1.0, 1.7)))

    def draw(panel):
        layout = RecordingLayout()
        panel.draw(type("Panel", (), {"layout": layout})(), bpy.context)
        return layout

    props = {c[2] for c in draw(panels.VIEW3D_PT_chain_ik_settings).calls("prop")}
    assert {"aim_axis", "aim_spread", "softness", "pole_target"} <= props
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    labels = [c[1] for c in draw(panels.VIEW3D_PT_chain_ik_result).calls("label")]
    assert any(text.startswith(f"Aim {item.result.angle:.3g}° off · ray misses by") for text in labels), labels


def test_a_non_uniformly_scaled_armature_aims_in_world_space(scene):
    """Lines stay lines under any linear map: the aim solved in armature space points the world
    axis at the world target; the bake's solver figure (the world ray's miss) and its playback agree."""
    from chain_ik.app import bake as bake_run
    from chain_ik.app import spec as app_spec

    obj = _neck()
    obj.scale = (1.0, 1.6, 0.7)
    look = _swinging_look()
    _aim(obj, look, method="triangulation")
    bpy.context.view_layer.objects.active = obj
    specs = [spec for _, spec in app_spec.specs_from_arguments(obj, "", 0, "", "", "", -1)]
    result = bake_run.bake(bpy.context, obj, specs, bake_run.BakeOptions(frame_start=1, frame_end=5))
    (report,) = result.chains
    assert report.missed == 0 and report.worst_angle < 1e-3
    assert result.per_chain_error["head"] <= TOL and report.worst_error <= TOL


def test_a_sampled_group_bakes_solver_figure_on_a_non_uniform_scale_is_measured_to_each_frames_target(scene):
    """The sampled group route's effectors hold placeholder positions: on a non-uniformly scaled
    armature the solver's world figure is measured to each frame's target (it was measured to the
    placeholder, reading the target's distance from the origin)."""
    from chain_ik.app import bake as bake_run
    from chain_ik.app import spec as app_spec

    obj = _neck()
    obj.scale = (1.0, 1.6, 0.7)
    bpy.context.view_layer.objects.active = obj
    reach = obj.chain_ik.chains.add()  # n1..n2 (shares n1 with the aim: one group), the tip reaching
    reach.name, reach.tip, reach.chain_length, reach.target = "Neck", "n2", 2, add_empty("Reach", (0.0, -0.048, 1.106))
    reach.tolerance, reach.max_iterations = TOL, 2000
    _aim(obj, _swinging_look(), "head", 3)
    specs = [spec for _, spec in app_spec.specs_from_arguments(obj, "", 0, "", "", "", -1)]
    result = bake_run.bake(bpy.context, obj, specs, bake_run.BakeOptions(frame_start=1, frame_end=5))
    assert "sampled" in result.reasons["Neck"] or "curves" in result.reasons["Neck"], result.reasons
    assert result.per_chain_error["n2"] <= TOL, result.per_chain_error
