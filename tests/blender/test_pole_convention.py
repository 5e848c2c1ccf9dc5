"""Issue 11 in Blender: a pole on a free (non-hinge) elbow follows Blender's convention frame by
frame. Rigify metarig, left arm (no IK locks or limits), a pole behind the elbow, the target on
a loop in front of the shoulder; Chain IK's bake against Blender's IK constraint on the same
chain, pole and pole angle (bench/pole_convention.py prints the same figures as a table)."""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest
from builders import add_empty, metarig
from mathutils import Vector

ARM = ("upper_arm.L", "forearm.L")
FRAMES = 120
# Measured (5.0.1 and 4.2.23, 250 frames, every method): 11.1° largest, 5.4° median at -90°;
# 6.0° / 3.8° at 0°. Before the pre-turn toward the pole: 104° / 56° and 17 flips at -90°.
LARGEST, MEDIAN = 15.0, 8.0


def _arm(pole_angle: float, frames: int = FRAMES, bones: tuple[str, ...] = ARM):
    """The metarig with an animated target and a pole behind the elbow, bones in quaternions."""
    obj = metarig(location=(0.0, 0.0, 0.0), turn=0.0, scale=1.0)
    for name in bones:
        obj.pose.bones[name].rotation_mode = "QUATERNION"
    bpy.context.view_layer.update()
    shoulder = obj.matrix_world @ obj.pose.bones["upper_arm.L"].head
    elbow = obj.matrix_world @ obj.pose.bones["forearm.L"].head
    hand = obj.matrix_world @ obj.pose.bones["forearm.L"].tail
    target = add_empty("Target")
    pole = add_empty("Pole", elbow + Vector((0.0, 0.4, 0.0)))
    center = shoulder + (hand - shoulder) * 0.6 + Vector((0.0, -0.15, 0.0))
    for f in range(1, frames + 1):
        a = 2.0 * math.pi * (f - 1) / (frames - 1)
        target.location = center + 0.18 * Vector((math.cos(a), 0.6 * math.sin(a), 0.5 * math.sin(2 * a)))
        target.keyframe_insert("location", frame=f)
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, frames
    bpy.context.view_layer.objects.active = obj
    return obj, target, pole


def _bend_sides(obj, target, frames) -> np.ndarray:
    """Per frame: the elbow's unit offset from the shoulder-target line (the bend direction)."""
    out = []
    for f in frames:
        bpy.context.scene.frame_set(f)
        s = np.array(obj.matrix_world @ obj.pose.bones["upper_arm.L"].head)
        e = np.array(obj.matrix_world @ obj.pose.bones["forearm.L"].head)
        t = np.array(target.matrix_world.translation)
        axis = (t - s) / np.linalg.norm(t - s)
        off = (e - s) - np.dot(e - s, axis) * axis
        out.append(off / np.linalg.norm(off))
    return np.array(out)


@pytest.fixture(scope="module")
def blender_sides(rigify):
    """Blender's IK constraint's bend directions per pole angle (computed once per module)."""
    out = {}
    for degrees in (-90.0, 0.0):
        bpy.ops.wm.read_homefile(use_empty=True)
        obj, target, pole = _arm(math.radians(degrees))
        con = obj.pose.bones["forearm.L"].constraints.new("IK")
        con.target, con.pole_target, con.pole_angle, con.chain_count = target, pole, math.radians(degrees), 2
        out[degrees] = _bend_sides(obj, target, range(1, FRAMES + 1))
    bpy.ops.wm.read_homefile(use_empty=True)
    return out


@pytest.mark.parametrize("degrees", [-90.0, 0.0])
@pytest.mark.parametrize("method", ["triangulation", "fabrik", "ccd", "jacobian"])
def test_free_elbow_follows_blenders_pole_frame_by_frame(scene, blender_sides, method, degrees):
    obj, target, pole = _arm(math.radians(degrees))
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target, item.method = "forearm.L", 2, target, method
    item.pole_target, item.pole_angle = pole, math.radians(degrees)
    assert bpy.ops.chain_ik.bake(chain_index=0, frame_start=1, frame_end=FRAMES) == {"FINISHED"}
    ours = _bend_sides(obj, target, range(1, FRAMES + 1))
    drift = np.degrees(np.arccos(np.clip(np.sum(ours * blender_sides[degrees], axis=1), -1.0, 1.0)))
    assert int(np.sum(drift > 90.0)) == 0, f"elbow flipped on {np.flatnonzero(drift > 90.0) + 1}"
    assert drift.max() < LARGEST and np.median(drift) < MEDIAN, (drift.max(), np.median(drift))


@pytest.mark.parametrize("method", ["triangulation", "fabrik", "ccd", "jacobian"])
def test_pole_bake_starts_every_frame_from_the_input_pose(scene, rigify, method):
    """As Blender's IK constraint: a frame's pose with a pole does not depend on the frames baked
    before it. A 3-bone free chain (arm and hand) baked over a range, and the last frame alone."""
    bones = (*ARM, "hand.L")
    last = 40
    obj, target, pole = _arm(-math.pi / 2, frames=last, bones=bones)
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target, item.method = "hand.L", 3, target, method
    item.pole_target, item.pole_angle = pole, -math.pi / 2
    assert bpy.ops.chain_ik.bake(chain_index=0, frame_start=1, frame_end=last) == {"FINISHED"}
    bpy.context.scene.frame_set(last)
    ranged = [np.array(obj.pose.bones[n].matrix) for n in bones]
    obj.animation_data_clear()
    for name in bones:
        obj.pose.bones[name].rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
    assert bpy.ops.chain_ik.bake(chain_index=0, frame_start=last, frame_end=last) == {"FINISHED"}
    bpy.context.scene.frame_set(last)
    alone = [np.array(obj.pose.bones[n].matrix) for n in bones]
    for name, a, b in zip(bones, ranged, alone, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5, err_msg=name)
