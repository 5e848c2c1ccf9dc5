"""Key reduction on bake: fitted Bezier keys that play back within a tip distance or a joint
angle of the unreduced bake, at every frame, in every rotation mode."""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest
from builders import world_point
from mathutils import Vector
from test_bake import _bake, _bent_rig, fcurves, local_rotations, loop_target
from test_bake_fk import ARM, _animate, _open
from test_bake_fk import FRAMES as FK_FRAMES

CHAIN = ("upper", "fore", "hand")
FRAMES = range(1, 121)


def _tips(obj) -> np.ndarray:
    out = []
    for f in FRAMES:
        bpy.context.scene.frame_set(f)
        out.append(world_point(obj, "hand"))
    return np.array(out)


def _angles(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Rotation angle between unit quaternions, radians."""
    return 2.0 * np.arccos(np.abs(np.sum(a * b, axis=-1)).clip(0.0, 1.0))


def _key_count(obj) -> int:
    return sum(len(fc.keyframe_points) for fc in fcurves(obj))


def _setup(mode: str):
    obj = _bent_rig()
    for n in CHAIN:
        obj.pose.bones[n].rotation_mode = mode
    target = loop_target(frames=(1, 120), center=(0.5, 0.6, 1.9), radius=0.6)
    common = {"tip": "hand", "chain_length": 3, "target": target.name}
    assert _bake(**common) == {"FINISHED"}
    return obj, common, _tips(obj), local_rotations(obj, CHAIN, FRAMES), _key_count(obj)


@pytest.mark.parametrize("mode", ["QUATERNION", "XYZ", "AXIS_ANGLE"])
def test_tip_distance_holds_with_far_fewer_keys(scene, mode, capfd):
    obj, common, tips, _, before = _setup(mode)
    assert _bake(**common, reduce=True, reduce_mode="TIP", reduce_tolerance=1e-3) == {"FINISHED"}
    moved = np.linalg.norm(_tips(obj) - tips, axis=1)
    assert moved.max() <= 1e-3 + 1e-6, moved.max()
    after = _key_count(obj)
    assert after * 4 < before, (after, before)
    assert f"{after} keys (reduced from {before})" in capfd.readouterr().out
    for fc in fcurves(obj):
        points = fc.keyframe_points
        assert (points[0].co[0], points[-1].co[0]) == (1, 120)  # the range's ends stay keyed
        assert {k.handle_left_type for k in points} == {"ALIGNED"} == {k.handle_right_type for k in points}
        assert {k.interpolation for k in points} == {"BEZIER"}


@pytest.mark.parametrize("mode", ["QUATERNION", "ZXY"])
def test_joint_angle_holds(scene, mode):
    obj, common, _, rotations, before = _setup(mode)
    tolerance = math.radians(0.2)
    assert _bake(**common, reduce=True, reduce_mode="ANGLE", reduce_angle=tolerance) == {"FINISHED"}
    turned = _angles(local_rotations(obj, CHAIN, FRAMES), rotations)
    assert turned.max() <= tolerance + 1e-6, math.degrees(turned.max())
    assert _key_count(obj) * 3 < before


def test_fitted_handles_beat_dropping_keys(scene):
    """At the same tip distance, the Bezier fit keeps fewer keys than linear key dropping."""
    obj, common, tips, _, _ = _setup("QUATERNION")
    assert _bake(**common, reduce=True, reduce_tolerance=1e-3, interpolation="LINEAR") == {"FINISHED"}
    assert np.linalg.norm(_tips(obj) - tips, axis=1).max() <= 1e-3 + 1e-6
    linear = _key_count(obj)
    assert _bake(**common, reduce=True, reduce_tolerance=1e-3) == {"FINISHED"}
    assert _key_count(obj) < 0.7 * linear


def test_tolerance_fields_say_their_units(scene):
    obj = _bent_rig()
    settings = obj.chain_ik.bake.bl_rna.properties
    assert settings["reduce_tolerance"].unit == "LENGTH" and settings["reduce_tolerance"].name == "Max Tip Error"
    assert settings["reduce_angle"].subtype == "ANGLE" and settings["reduce_angle"].name == "Max Joint Error"
    item = obj.chain_ik.chains.add()
    assert item.bl_rna.properties["tolerance"].name == "Reach Tolerance"
    for op in (bpy.ops.chain_ik.bake, bpy.ops.chain_ik.bake_fk):
        props = op.get_rna_type().properties
        assert props["reduce_tolerance"].unit == "LENGTH" and props["reduce_angle"].subtype == "ANGLE"


@pytest.mark.parametrize("mode", ["QUATERNION", "AXIS_ANGLE", "XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX"])
def test_channel_quaternions_read_as_blender(scene, mode):
    """The reduction checks its curves with keyfit.channel_quaternions: Blender's own reading."""
    from chain_ik.solvers import keyfit
    from mathutils import Euler, Quaternion

    rng = np.random.default_rng(len(mode))
    table = rng.uniform(-2.5, 2.5, (20, 3 if len(mode) == 3 else 4))
    ours = keyfit.channel_quaternions(mode, table)
    for row, q in zip(table, ours, strict=True):
        if mode == "QUATERNION":
            theirs = Quaternion(row).normalized()
        elif mode == "AXIS_ANGLE":
            theirs = Quaternion(Vector(row[1:]).normalized(), row[0])
        else:
            theirs = Euler(row, mode).to_quaternion()
        assert abs(abs(float(np.dot(q, theirs[:]))) - 1.0) < 1e-6  # mathutils is float32


@pytest.mark.parametrize("interpolation", ["BEZIER", "CONSTANT"])
def test_bake_fk_reduction_within_joint_angle(rigify_file, interpolation):  # noqa: F811 - the fixture
    """Bake IK to FK reduces too: each FK control within the angle of its unreduced bake."""
    rig = _open(rigify_file)
    rig.pose.bones["upper_arm_parent.L"]["IK_FK"] = 0.0
    _animate(rig, "hand_ik.L", Vector((-0.15, 0.25, 0.3)))
    frames = range(FK_FRAMES[0], FK_FRAMES[1] + 1)
    common = {"pairs": ", ".join(ARM), "frame_start": FK_FRAMES[0], "frame_end": FK_FRAMES[1]}
    assert bpy.ops.chain_ik.bake_fk(**common, interpolation=interpolation) == {"FINISHED"}
    full, before = local_rotations(rig, ARM, frames), _key_count(rig)
    tolerance = math.radians(2.0)
    assert bpy.ops.chain_ik.bake_fk(
        **common, interpolation=interpolation, reduce=True, reduce_mode="ANGLE", reduce_angle=tolerance
    ) == {"FINISHED"}
    assert _angles(local_rotations(rig, ARM, frames), full).max() <= tolerance + 1e-6
    assert _key_count(rig) < before
