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


# Issue 22 classes 5 and 6: every chain's end is measured as it plays, through the stretched
# lengths (Y scale keys, reduced too) and through the reduced curves of a baked chain above it.
LOOP = range(1, 121)


def _ends(obj, bones, frames=LOOP, use_tail=True) -> np.ndarray:
    """(frames, chains, 3) world ends of `bones` as the keys play back."""
    out = []
    for f in frames:
        bpy.context.scene.frame_set(f)
        out.append([world_point(obj, b, use_tail) for b in bones])
    return np.array(out)


def _targets(target, frames=LOOP) -> np.ndarray:
    """(frames, 1, 3) the target's world location, to compare with `_ends` of one chain."""
    out = []
    for f in frames:
        bpy.context.scene.frame_set(f)
        out.append([target.matrix_world.translation[:]])
    return np.array(out)


def _moved(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per chain, the largest distance between two playbacks."""
    return np.linalg.norm(a - b, axis=-1).max(axis=0)


def _stretch_rig():
    from builders import add_empty, make_armature

    bones = [
        ("b0", (0, 0, 0), (0, 0, 1), None, False, 0.0),
        ("b1", (0, 0, 1), (0.6, 0, 1.8), "b0", True, 20.0),
        ("b2", (0.6, 0, 1.8), (0.2, 0.3, 2.6), "b1", True, -40.0),
    ]
    obj = make_armature(bones, "Rig")
    for n, w in {"b0": 0.0, "b1": 1.0, "b2": 0.5}.items():
        obj.pose.bones[n].ik_stretch = w
    add_empty("unused")
    # 5..9 away: always beyond the reach of 2.94, the chain stretched to 1.7..3x its length
    target = loop_target(frames=(1, 120), center=(0.5, 0.3, 7.0), radius=2.0)
    bpy.context.view_layer.objects.active = obj
    return obj, {"tip": "b2", "chain_length": 3, "target": target.name, "frame_start": 1, "frame_end": 120}


def _scale_curves(obj) -> dict[str, int]:
    return {fc.data_path: len(fc.keyframe_points) for fc in fcurves(obj) if fc.data_path.endswith(".scale")}


@pytest.mark.parametrize("tolerance", [1e-3, 1e-2])
def test_stretched_bake_reduced_plays_back_within_max_tip_error(scene, tolerance):
    """Before: the reduction measured the tip with the bones' rest lengths (the stretched ones
    ~2x longer) and kept the Y scale keys whole; the tip played back beyond the tolerance."""
    obj, common = _stretch_rig()
    assert _bake(**common) == {"FINISHED"}
    full = _ends(obj, ["b2"])
    target = bpy.data.objects[common["target"]]
    goal = _targets(target)
    assert _moved(full, goal)[0] < 1e-5  # the full bake reaches
    assert all(n == 120 for n in _scale_curves(obj).values())
    assert _bake(**common, reduce=True, reduce_tolerance=tolerance) == {"FINISHED"}
    played = _ends(obj, ["b2"])
    moved = _moved(played, full)
    print(f"\nstretched, Max Tip Error {tolerance:g}: played back {moved[0]:.3g} from the full bake")
    assert moved[0] <= tolerance + 1e-6
    assert _moved(played, goal)[0] <= tolerance + 1e-5  # and from the target
    scales = _scale_curves(obj)
    assert len(scales) == 2 and all(n < 60 for n in scales.values()), scales  # the scale keys reduced too


def _played_scales(obj) -> np.ndarray:
    out = []
    for f in LOOP:
        bpy.context.scene.frame_set(f)
        out.append([obj.pose.bones[n].scale[1] for n in ("b1", "b2")])
    return np.array(out)


def test_stretched_bake_reduced_by_joint_angle(scene):
    obj, common = _stretch_rig()
    assert _bake(**common) == {"FINISHED"}
    rotations = local_rotations(obj, ["b0", "b1", "b2"], LOOP)
    scales = _played_scales(obj)
    angle = math.radians(0.2)
    assert _bake(**common, reduce=True, reduce_mode="ANGLE", reduce_angle=angle) == {"FINISHED"}
    assert _angles(local_rotations(obj, ["b0", "b1", "b2"], LOOP), rotations).max() <= angle + 1e-6
    played = _played_scales(obj)
    assert np.all(np.abs(played - scales) <= angle * scales + 1e-6)  # the same distance at the bone's end


def _two_chains(between: str = ""):
    """A 3-bone arm 'A' and a 2-bone chain 'C' hanging below its end (through `between` bones:
    '' none, 'still' a bone not baked, 'animated' one with rotation keys of its own)."""
    from builders import make_armature

    bones = [
        ("a0", (0, 0, 0), (0, 0, 1), None, False, 0),
        ("a1", (0, 0, 1), (0.3, 0, 2), "a0", True, 0),
        ("a2", (0.3, 0, 2), (0.3, 0.1, 2.2), "a1", True, 0),
        ("m", (0.3, 0.1, 2.2), (0.3, 0.2, 2.3), "a2", True, 0),
        ("c0", (0.3, 0.2, 2.3), (0.3, 1.5, 2.8), "m" if between else "a2", bool(between), 0),
        ("c1", (0.3, 1.5, 2.8), (0.2, 3.0, 3.0), "c0", True, 0),
    ]
    obj = make_armature(bones, "Rig")
    if between == "animated":
        m = obj.pose.bones["m"]
        m.rotation_mode = "XYZ"
        for f, angle in ((1, 0.0), (60, 0.5), (120, 0.0)):
            m.rotation_euler = (angle, 0.0, angle)
            m.keyframe_insert("rotation_euler", frame=f)
    upper = loop_target("TA", frames=(1, 120), center=(0.6, 0.3, 2.0), radius=0.5)
    lower = loop_target("TC", frames=(1, 120), center=(0.5, 2.0, 3.0), radius=0.8, tilt=1.2)
    for name, tip, length, target in (("A", "a2", 3, upper), ("C", "c1", 2, lower)):
        item = obj.chain_ik.chains.add()
        item.name, item.tip, item.chain_length, item.target = name, tip, length, target
    bpy.context.view_layer.objects.active = obj
    return obj


@pytest.mark.parametrize("between", ["", "still", "animated"])
@pytest.mark.parametrize("tolerance", [1e-3, 1e-2])
def test_chain_below_a_reduced_chain_ends_within_max_tip_error(scene, between, tolerance):
    """Before: each chain was checked with the chains above it unreduced; the lower chain's end
    played back beyond the tolerance (1.25e-3 at 1e-3)."""
    obj = _two_chains(between)
    range_ = {"frame_start": 1, "frame_end": 120}
    assert _bake(**range_) == {"FINISHED"}
    full = _ends(obj, ["a2", "c1"])
    before = _key_count(obj)
    assert _bake(**range_, reduce=True, reduce_tolerance=tolerance) == {"FINISHED"}
    moved = _moved(_ends(obj, ["a2", "c1"]), full)
    print(f"\ntwo chains ({between or 'direct'}), Max Tip Error {tolerance:g}: ends moved {moved}")
    assert moved.max() <= tolerance + 1e-6, moved
    assert _key_count(obj) * 4 < before


def test_use_tail_off_measures_the_tip_bones_head(scene):
    """With Use Tail off the chain's end is the tip bone's head, which the last chain bone turns
    too (before: the reduction measured that bone's own head, and let its rotation go)."""
    obj = _bent_rig()
    target = loop_target(frames=(1, 120), center=(0.4, 0.7, 2.0), radius=0.4)
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target, item.use_tail = "hand", 2, target, False
    range_ = {"frame_start": 1, "frame_end": 120}
    assert _bake(**range_) == {"FINISHED"}
    full = _ends(obj, ["hand"], use_tail=False)
    assert _bake(**range_, reduce=True, reduce_tolerance=1e-3) == {"FINISHED"}
    moved = _moved(_ends(obj, ["hand"], use_tail=False), full)
    assert moved.max() <= 1e-3 + 1e-6, moved


def _keys_in(obj, frames=(1, 120)) -> dict[tuple[str, int], int]:
    """Keys per channel within the baked range, as the action holds them."""
    return {
        (fc.data_path, fc.array_index): sum(frames[0] <= k.co[0] <= frames[1] for k in fc.keyframe_points)
        for fc in fcurves(obj)
    }


@pytest.mark.parametrize("reduce", [False, True])
def test_key_counts_are_the_keys_in_the_action(scene, capfd, reduce):
    """Every count the bake reports is the keys the action holds in the range, per channel,
    scale keys included (before: '1680 keys (reduced from 1440)' with reduction off)."""
    from chain_ik.app import bake as bake_run
    from chain_ik.app import spec as app_spec

    obj, common = _stretch_rig()
    obj.pose.bones["b0"].keyframe_insert("rotation_quaternion", frame=200)  # outside the range: kept, not counted
    capfd.readouterr()
    assert _bake(**common, reduce=reduce) == {"FINISHED"}
    out = capfd.readouterr().out
    held = _keys_in(obj)
    channels = 3 * 4 + 2  # the quaternions and the two stretched bones' Y scales
    assert len(held) == channels and sum(_keys_in(obj, (200, 200)).values()) == 4
    count = sum(held.values())
    if reduce:
        assert count < 120 * channels and f"{count} keys (reduced from {120 * channels}) on 3 bone(s)" in out
    else:
        assert set(held.values()) == {120} and f"{count} keys on 3 bone(s)" in out and "reduced from" not in out
    # The same figures on the result (cli.py's JSON: keys, keys_before, per chain keys).
    specs = [s for _, s in app_spec.specs_from_arguments(obj, "b2", 3, common["target"], "", "triangulation", -1)]
    options = bake_run.BakeOptions(frame_start=1, frame_end=120, reduce=reduce)
    result = bake_run.bake(bpy.context, obj, specs, options)
    assert result.keys == sum(_keys_in(obj).values()) == result.per_chain_keys["b2"]
    assert (result.keys_before, result.reduced) == (120 * channels, reduce)


INHERITANCE = ["FULL", "ALIGNED", "FIX_SHEAR", "AVERAGE", "NONE", "NONE_LEGACY"]
INHERITANCE += ["no inherit rotation", "no local location"]


@pytest.mark.parametrize("setting", INHERITANCE)
def test_the_reductions_forward_kinematics_is_blenders(scene, setting):
    """rig.key_paths.PathFK (what the reduction measures ends with) against Blender's evaluated
    pose: scaled, moved and stretched bones, under a scaled and moved parent, every inheritance."""
    from chain_ik.rig import key_paths

    obj = _bent_rig()
    for bone in obj.data.bones:
        if setting == "no inherit rotation":
            bone.use_inherit_rotation = bone.name != "fore"
        elif setting == "no local location":
            bone.use_local_location = bone.name != "fore"
        else:
            bone.inherit_scale = setting
    rng = np.random.default_rng(7)
    names = ("upper", "fore", "hand")
    for name in ("root", *names):
        pbone = obj.pose.bones[name]
        pbone.rotation_mode = "QUATERNION"
        pbone.location, pbone.scale = rng.normal(0.0, 0.1, 3), rng.uniform(0.7, 1.5, 3)
    bpy.context.view_layer.update()
    path = key_paths.chain_path(obj, names, True, "hand", set(names), {"upper"}, set())
    rotations = {n: rng.normal(size=(6, 4)) for n in names}
    stretch = {"upper": rng.uniform(0.8, 2.0, 6)}
    ends = key_paths.PathFK(obj, 6).ends(path, rotations, stretch)
    for f in range(6):
        for n in names:
            obj.pose.bones[n].rotation_quaternion = rotations[n][f] / np.linalg.norm(rotations[n][f])
        obj.pose.bones["upper"].scale[1] = stretch["upper"][f]
        bpy.context.view_layer.update()
        assert np.linalg.norm(np.array(obj.pose.bones["hand"].tail[:]) - ends[f]) < 2e-6, (setting, f)


@pytest.mark.parametrize("tolerance", [1e-3, 1e-2])
def test_group_and_a_chain_below_it_reduced_end_within_max_tip_error(scene, tolerance):
    """Two arms sharing a spine (one group) and a finger chain below the left arm: every end
    within Max Tip Error of the full bake, through the shared bones' and the arm's reduced keys."""
    from builders import make_armature

    bones = [
        ("s0", (0, 0, 0), (0, 0, 0.8), None, False, 0),
        ("s1", (0, 0, 0.8), (0, 0.1, 1.6), "s0", True, 0),
        ("l0", (0, 0.1, 1.6), (0.6, 0.1, 1.6), "s1", False, 0),
        ("l1", (0.6, 0.1, 1.6), (1.2, 0.2, 1.5), "l0", True, 0),
        ("r0", (0, 0.1, 1.6), (-0.6, 0.1, 1.6), "s1", False, 0),
        ("r1", (-0.6, 0.1, 1.6), (-1.2, 0.2, 1.5), "r0", True, 0),
        ("f0", (1.2, 0.2, 1.5), (1.9, 0.3, 1.5), "l1", True, 0),
        ("f1", (1.9, 0.3, 1.5), (2.6, 0.3, 1.4), "f0", True, 0),
    ]
    obj = make_armature(bones, "Rig")
    goals = {
        "L": ("l1", 4, loop_target("TL", frames=(1, 120), center=(1.0, 0.4, 1.4), radius=0.25)),
        "R": ("r1", 4, loop_target("TR", frames=(1, 120), center=(-1.0, 0.3, 1.6), radius=0.25, tilt=1.0)),
        "F": ("f1", 2, loop_target("TF", frames=(1, 120), center=(2.1, 0.6, 1.3), radius=0.4, tilt=0.8)),
    }
    for name, (tip, length, target) in goals.items():
        item = obj.chain_ik.chains.add()
        item.name, item.tip, item.chain_length, item.target, item.method = name, tip, length, target, "fabrik"
    bpy.context.view_layer.objects.active = obj
    range_ = {"frame_start": 1, "frame_end": 120}
    assert _bake(**range_) == {"FINISHED"}
    tips = ["l1", "r1", "f1"]
    full = _ends(obj, tips)
    assert _bake(**range_, reduce=True, reduce_tolerance=tolerance) == {"FINISHED"}
    moved = _moved(_ends(obj, tips), full)
    print(f"\ngroup and a chain below, Max Tip Error {tolerance:g}: ends moved {moved}")
    assert moved.max() <= tolerance + 1e-6, moved
