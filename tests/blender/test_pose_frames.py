"""The one per-frame sampler (rig.pose_frames) behind the contact detection's feet and the planted
bake's legs, its batched 3x3 helpers, and the planted bake's curve reading (rig.plant_curves):
each gives what Blender itself gives."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from test_contacts import FIRST, LAST, walking_leg


@pytest.fixture
def leg(scene):
    obj = walking_leg()
    # Turn the leg's bones too (the walk moves the object only), so relative rotations differ.
    for name, axis in (("thigh", 0), ("shin", 0), ("foot", 2)):
        pbone = obj.pose.bones[name]
        pbone.rotation_mode = "XYZ"
        for frame in (FIRST, 30, LAST):
            angles = [0.0, 0.0, 0.0]
            angles[axis] = 0.3 * np.sin(frame / 7.0)
            pbone.rotation_euler = angles
            pbone.keyframe_insert("rotation_euler", frame=frame)
    return obj


def test_feet_and_legs_come_from_the_one_sampler_and_agree_with_blender(leg):
    from chain_ik.rig import contacts, plant_read

    scene = bpy.context.scene
    frames = np.arange(FIRST, LAST + 1, 5)
    scene.frame_set(17)
    (track,) = contacts.sample_feet(bpy.context, leg, leg.chain_ik.chains, frames, rotations=True)
    (legs,) = plant_read.sample_legs(bpy.context, leg, [("thigh", "shin", "foot")], frames)
    assert scene.frame_current == 17  # the frame is put back
    assert np.allclose(track.heel, legs.heel_world, atol=1e-6) and np.allclose(track.toe, legs.toe_world, atol=1e-6)
    for k, frame in enumerate(frames.tolist()):
        scene.frame_set(frame)
        pose = leg.evaluated_get(bpy.context.evaluated_depsgraph_get()).pose.bones
        world = leg.matrix_world
        assert np.allclose(track.heel[k], world @ pose["foot"].head, atol=1e-6)
        assert np.allclose(track.toe[k], world @ pose["foot"].tail, atol=1e-6)
        for j, name in enumerate(("thigh", "shin", "foot")):
            bone = pose[name]
            relative = bone.parent.matrix.inverted_safe() @ bone.matrix
            expected = np.array(relative.to_3x3().normalized().to_quaternion())
            got = track.rotations[k, j]
            assert min(np.abs(got - expected).max(), np.abs(got + expected).max()) < 1e-5, (frame, name)


def test_batched_inverse_and_determinant_match_numpy():
    from chain_ik.rig import pose_frames

    rng = np.random.default_rng(3)
    m = rng.normal(size=(50, 3, 3)) + 3.0 * np.eye(3)
    assert np.allclose(pose_frames.inverse3(m), np.linalg.inv(m), rtol=1e-12, atol=1e-12)
    assert np.allclose(pose_frames.det3(m), np.linalg.det(m), rtol=1e-12)
    assert np.allclose(pose_frames.inverse3(m[0]), np.linalg.inv(m[0]), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("interpolation", ["BEZIER", "LINEAR", "CONSTANT"])
def test_curves_read_as_playback_evaluates_them_to_the_bit(leg, interpolation):
    from chain_ik.rig import keys, sampling

    curves = [fc for fc in keys.assigned_fcurves(leg) if fc.data_path.endswith("rotation_euler")]
    assert curves
    frames = np.concatenate([np.arange(FIRST - 3, LAST + 4, 1.0), [10.5, 30.25, 71.9]])
    for fc in curves:
        for key in fc.keyframe_points:
            key.interpolation = interpolation
        fc.update()
        expected = np.array([fc.evaluate(f) for f in frames.tolist()])
        assert np.array_equal(sampling.curve_values(fc, frames), expected)
    noisy = curves[0]
    noisy.modifiers.new("NOISE")  # a modifier: every frame through FCurve.evaluate
    expected = np.array([noisy.evaluate(f) for f in frames.tolist()])
    assert np.array_equal(sampling.curve_values(noisy, frames), expected)


def test_legs_read_from_mixed_mode_curves_are_the_evaluated_legs(scene):
    """rig.plant_curves.sample_legs on bones of several rotation modes (quaternion, XYZ, ZXY; the hips
    moving): the pose Blender evaluates (rig.plant_read.sample_legs, frame by frame); and the check's
    joints (plant_read.joints_at, heads and tails alone) are that sampler's to the bit."""
    from chain_ik.rig import keys, plant_curves, plant_read

    obj = walking_leg()
    action_curves = keys.FCurves(obj)._curves
    for fc in [fc for fc in keys.assigned_fcurves(obj) if fc.data_path == "location"]:
        action_curves.remove(fc)  # the armature stands still: its bones move
    for name, mode in (("thigh", "QUATERNION"), ("shin", "XYZ"), ("foot", "ZXY")):
        obj.pose.bones[name].rotation_mode = mode
    for frame in (FIRST, 30, LAST):
        t = frame / 9.0
        obj.pose.bones["hips"].location = (0.02 * np.sin(t), 0.1 * t, -0.03 * np.cos(t))
        obj.pose.bones["hips"].keyframe_insert("location", frame=frame)
        obj.pose.bones["thigh"].rotation_quaternion = (np.cos(0.2 * t), np.sin(0.2 * t), 0.1, 0.0)
        obj.pose.bones["thigh"].keyframe_insert("rotation_quaternion", frame=frame)
        obj.pose.bones["shin"].rotation_euler = (0.4 * np.sin(t), 0.0, 0.1)
        obj.pose.bones["shin"].keyframe_insert("rotation_euler", frame=frame)
        obj.pose.bones["foot"].rotation_euler = (0.2, 0.1 * t, -0.3 * np.sin(t))
        obj.pose.bones["foot"].keyframe_insert("rotation_euler", frame=frame)
    legs = [("thigh", "shin", "foot")]
    assert plant_curves.curves_reason(obj, legs) == ""
    frames = np.arange(FIRST, LAST + 1)
    bpy.context.scene.frame_set(FIRST)
    (curves,) = plant_curves.sample_legs(obj, legs, frames)
    (played,) = plant_read.sample_legs(bpy.context, obj, legs, frames)
    assert np.allclose(curves.heads, played.heads, atol=1e-6) and np.allclose(curves.toe, played.toe, atol=1e-6)
    for got, want in ((curves.rotations, played.rotations), (curves.basis, played.basis)):
        assert np.allclose(np.abs(np.einsum("fbi,fbi->fb", got, want)), 1.0, atol=1e-6)
    for got, want in zip(curves.values, played.values, strict=True):
        assert np.allclose(got, want, atol=1e-6)
    rows = np.array([0, 35, len(frames) - 1])
    (joints,) = plant_read.joints_at(bpy.context, obj, legs, frames[rows])
    assert np.array_equal(joints, np.concatenate((played.heads[rows], played.toe[rows, None]), axis=1))
    assert plant_curves.mismatch([curves], [joints], rows) < plant_curves.MATCH
