"""Chains reach random reachable targets through the real operator, in every rotation mode."""

from __future__ import annotations

import math
import zlib

import bpy
import numpy as np
import pytest
from builders import (
    add_empty,
    bent_rolled_disconnected,
    bone_lengths,
    channel_state,
    pose_state,
    reachable_target,
    straight_chain,
    transform,
    world_point,
)

METHODS = ("triangulation", "fabrik", "ccd", "jacobian")
MODES = ("QUATERNION", "XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX", "AXIS_ANGLE")
TRANSFORMS = {
    "identity": transform(),
    "rotated": transform((1, -2, 0.5), (0.4, -0.3, 1.1)),
    "nonuniform": transform((0.3, 0.2, 0.1), (0.2, 0.5, -0.4), (1.5, 0.5, 2.0)),
    "negative": transform((0, 1, 0), (0.1, 0.2, 0.3), (-1.0, 1.2, 1.0)),
}
# World tolerance of these tests (float32 pose data, chains about 2-3 units long).
TOL = 1e-4


def _setup(obj, tip: str, length: int, target, method: str = "triangulation", use_tail: bool = True):
    bpy.context.view_layer.objects.active = obj
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target, item.method, item.use_tail = tip, length, target, method, use_tail
    item.tolerance = 1e-6
    item.max_iterations = 5000  # CCD can crawl near the reach limit; the bridge is under test here
    return item


def _descendants(obj, names) -> set[str]:
    out = set(names)
    for pb in obj.pose.bones:
        p = pb.parent
        while p is not None:
            if p.name in names:
                out.add(pb.name)
            p = p.parent
    return out


def _check_solved(obj, tip, chain, target_world, before_channels, before_pose, lengths, use_tail=True):
    tip_world = world_point(obj, tip, use_tail)
    assert np.linalg.norm(tip_world - target_world) < TOL
    after = bone_lengths(obj)
    for name, length in lengths.items():
        assert after[name] == pytest.approx(length, rel=1e-5, abs=1e-6)
    after_channels = channel_state(obj)
    after_pose = pose_state(obj)
    moved = _descendants(obj, chain)
    for name, channels in before_channels.items():
        if name not in chain:
            assert after_channels[name] == channels, f"channels of {name} changed"
        else:  # location, scale and mode untouched
            assert after_channels[name][0] == channels[0] and after_channels[name][1] == channels[1]
            assert after_channels[name][5] == channels[5]
        if name not in moved:
            np.testing.assert_allclose(after_pose[name], before_pose[name], atol=1e-6)


@pytest.mark.parametrize("xform", list(TRANSFORMS))
@pytest.mark.parametrize("method", METHODS + ("fabrik-sphere",))
def test_bent_rolled_disconnected_chain_reaches(scene, method, xform):
    obj = bent_rolled_disconnected(matrix_world=TRANSFORMS[xform])
    chain = ["upper", "fore", "hand"]
    # crc32, not hash(): str hashes are salted per process, and the targets must not change between runs.
    rng = np.random.default_rng(zlib.crc32(f"{method}/{xform}".encode()))
    # The root (outside the chain) is posed too: the chain's parent is not at rest.
    obj.pose.bones["root"].rotation_quaternion = (0.9, 0.1, -0.2, 0.3)
    target = add_empty()
    item = _setup(obj, "hand", 3, target, method.split("-")[0])
    if method == "fabrik-sphere":
        item.fabrik_placement = "sphere"  # the panel's FABRIK Placement: the article's CGA step
    for _ in range(3):
        goal = reachable_target(obj, "hand", chain, rng)
        target.location = goal
        before_channels, before_pose, lengths = channel_state(obj), pose_state(obj), bone_lengths(obj)
        assert bpy.ops.chain_ik.solve() == {"FINISHED"}
        _check_solved(obj, "hand", chain, goal, before_channels, before_pose, lengths)


@pytest.mark.parametrize("mode", MODES)
def test_every_rotation_mode_gives_the_same_pose(scene, mode):
    results = {}
    for m in ("QUATERNION", mode):
        bpy.ops.wm.read_homefile(use_empty=True)
        obj = bent_rolled_disconnected(matrix_world=TRANSFORMS["rotated"])
        for pb in obj.pose.bones:
            pb.rotation_mode = m
        target = add_empty(location=(0, 0, 0))
        _setup(obj, "hand", 3, target, "fabrik")
        rng = np.random.default_rng(7)
        goal = reachable_target(obj, "hand", ["upper", "fore", "hand"], rng)
        # Start from a non-rest pose in this mode, identical in rotation for every mode.
        from builders import random_pose

        random_pose(obj, ["upper", "fore", "hand"], np.random.default_rng(3), max_angle=0.3)
        target.location = goal
        before_channels, before_pose, lengths = channel_state(obj), pose_state(obj), bone_lengths(obj)
        assert bpy.ops.chain_ik.solve() == {"FINISHED"}
        _check_solved(obj, "hand", ["upper", "fore", "hand"], goal, before_channels, before_pose, lengths)
        results[m] = pose_state(obj)
    for name in results["QUATERNION"]:
        np.testing.assert_allclose(results[mode][name], results["QUATERNION"][name], atol=1e-5)


@pytest.mark.parametrize("order", ["XYZ", "ZYX"])
def test_euler_written_with_continuity(scene, order):
    obj = straight_chain(2)
    target = add_empty()
    for pb in obj.pose.bones:
        pb.rotation_mode = order
    # Near +2pi about X (nearly rest): the written angles must stay near 2pi, not wrap to ~0.
    obj.pose.bones["b0"].rotation_euler = (2 * math.pi - 0.05, 0.0, 0.0)
    bpy.context.view_layer.update()
    tip = world_point(obj, "b1")
    target.location = tip + np.array([0.0, -0.3, -0.2])
    _setup(obj, "b1", 2, target, "triangulation")
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    x = obj.pose.bones["b0"].rotation_euler.x
    assert abs(x - 2 * math.pi) < 0.5, x
    assert np.linalg.norm(world_point(obj, "b1") - np.array(target.location[:])) < TOL


def test_head_reaches_when_use_tail_is_off(scene):
    obj = bent_rolled_disconnected()
    target = add_empty()
    _setup(obj, "hand", 2, target, "triangulation", use_tail=False)
    goal = reachable_target(obj, "hand", ["upper", "fore"], np.random.default_rng(5), use_tail=False)
    target.location = goal
    before = channel_state(obj)
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert np.linalg.norm(world_point(obj, "hand", use_tail=False) - goal) < TOL
    assert channel_state(obj)["hand"] == before["hand"]  # the tip bone only follows


def test_bone_that_does_not_inherit_rotation(scene):
    obj = bent_rolled_disconnected()
    obj.data.bones["fore"].use_inherit_rotation = False
    target = add_empty()
    _setup(obj, "hand", 3, target, "ccd")
    goal = reachable_target(obj, "hand", ["upper", "fore", "hand"], np.random.default_rng(11))
    target.location = goal
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert np.linalg.norm(world_point(obj, "hand") - goal) < TOL


def test_target_bone_of_another_armature(scene):
    obj = bent_rolled_disconnected()
    other = straight_chain(1, name="Goal", matrix_world=transform((0.5, 0.5, 1.5)))
    goal = world_point(other, "b0", use_tail=False)
    bpy.ops.object.mode_set(mode="OBJECT")
    item = _setup(obj, "hand", 3, other, "triangulation")
    item.target_bone = "b0"
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert np.linalg.norm(world_point(obj, "hand") - goal) < TOL


def test_influence_blends_with_the_current_pose(scene):
    obj = straight_chain(3)
    target = add_empty(location=(1.0, 0.5, 2.0))
    item = _setup(obj, "b2", 3, target)
    before = channel_state(obj)
    item.influence = 0.0
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    after = channel_state(obj)
    for name in before:
        np.testing.assert_allclose(after[name][2], before[name][2], atol=1e-6)
    item.influence = 1.0
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    full = np.array(world_point(obj, "b2"))
    assert np.linalg.norm(full - np.array(target.location[:])) < TOL


def test_locked_channels_are_kept_and_reported(scene):
    obj = straight_chain(3)
    obj.pose.bones["b1"].rotation_mode = "XYZ"
    obj.pose.bones["b1"].lock_rotation = (True, False, False)
    target = add_empty(location=(1.0, 0.5, 1.5))
    _setup(obj, "b2", 3, target)
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert obj.pose.bones["b1"].rotation_euler.x == 0.0
    assert obj.chain_ik.chains[0].has_result


# Whether `fore` can turn rigidly below a non-uniformly scaled `upper`, per Inherit Scale mode.
INHERIT_SCALE_RIGID = {
    "FULL": False,
    "NONE": True,
    "ALIGNED": False,
    "AVERAGE": True,
    "FIX_SHEAR": False,
    "NONE_LEGACY": True,
}


@pytest.mark.parametrize("inherit_scale", list(INHERIT_SCALE_RIGID))
def test_scaled_pose_bones_and_inherit_scale_modes(scene, inherit_scale):
    obj = bent_rolled_disconnected(matrix_world=TRANSFORMS["rotated"])
    obj.data.bones["fore"].inherit_scale = inherit_scale
    obj.data.bones["hand"].use_local_location = False
    obj.pose.bones["root"].scale = (1.2, 1.2, 1.2)  # uniform outside the chain: fine
    obj.pose.bones["upper"].scale = (0.9, 1.3, 0.9)  # non-uniform inside the chain
    obj.pose.bones["fore"].location = (0.05, 0.0, -0.02)
    chain = ["upper", "fore", "hand"]
    target = add_empty()
    _setup(obj, "hand", 3, target, "fabrik")
    rng = np.random.default_rng(21)
    for _ in range(2):
        goal = reachable_target(obj, "hand", chain, rng)
        target.location = goal
        before_channels, before_pose, lengths = channel_state(obj), pose_state(obj), bone_lengths(obj)
        if INHERIT_SCALE_RIGID[inherit_scale]:
            assert bpy.ops.chain_ik.solve() == {"FINISHED"}
            _check_solved(obj, "hand", chain, goal, before_channels, before_pose, lengths)
        else:
            with pytest.raises(RuntimeError, match="bone 'fore' inherits a non-uniform scale"):
                bpy.ops.chain_ik.solve()
            assert channel_state(obj) == before_channels


def test_non_uniform_scale_from_outside_the_chain_is_refused(scene):
    obj = bent_rolled_disconnected()
    obj.pose.bones["root"].scale = (1.2, 0.8, 1.1)
    target = add_empty(location=(0.5, 0.5, 1.5))
    _setup(obj, "hand", 3, target)
    before = channel_state(obj)
    with pytest.raises(RuntimeError, match="bone 'upper' inherits a non-uniform scale"):
        bpy.ops.chain_ik.solve()
    assert channel_state(obj) == before


@pytest.mark.parametrize("mode", ["QUATERNION", "AXIS_ANGLE"])
def test_4d_locks_keep_their_components(scene, mode):
    obj = straight_chain(3)
    pb = obj.pose.bones["b1"]
    pb.rotation_mode = mode
    pb.lock_rotations_4d = True
    pb.lock_rotation_w = True
    pb.lock_rotation = (False, True, False)
    before = channel_state(obj)["b1"]
    target = add_empty(location=(1.0, 0.5, 1.5))
    _setup(obj, "b2", 3, target)
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    after = channel_state(obj)["b1"]
    values_before, values_after = (before[2], after[2]) if mode == "QUATERNION" else (before[4], after[4])
    assert values_after[0] == values_before[0] and values_after[2] == values_before[2]
    assert all(math.isfinite(v) for v in values_after)


def test_axis_angle_keeps_its_axis_direction(scene):
    obj = straight_chain(2)
    pb = obj.pose.bones["b0"]
    pb.rotation_mode = "AXIS_ANGLE"
    pb.rotation_axis_angle = (-0.3, -1.0, 0.0, 0.0)  # same as +0.3 about +X, written the other way
    bpy.context.view_layer.update()
    target = add_empty()
    target.location = world_point(obj, "b1") + np.array([0.0, 0.2, -0.1])
    _setup(obj, "b1", 2, target)
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    angle, *axis = obj.pose.bones["b0"].rotation_axis_angle
    assert axis[0] < 0.0  # the axis was not flipped to the other hemisphere
    assert np.linalg.norm(world_point(obj, "b1") - np.array(target.location[:])) < TOL


def test_quaternion_sign_continuity(scene):
    obj = straight_chain(2)
    pb = obj.pose.bones["b0"]
    pb.rotation_quaternion = (-0.98, -0.2, 0.0, 0.0)  # w < 0: the same rotation as its negation
    bpy.context.view_layer.update()
    target = add_empty()
    target.location = world_point(obj, "b1") + np.array([0.0, 0.1, -0.05])
    _setup(obj, "b1", 2, target)
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert obj.pose.bones["b0"].rotation_quaternion.w < 0.0
