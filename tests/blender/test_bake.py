"""chain_ik.bake: playback reaches the target, keys land only where asked, undo, continuity, progress."""

from __future__ import annotations

import io
import math
from dataclasses import replace

import bpy
import numpy as np
import pytest
from builders import add_empty, bent_rolled_disconnected, set_selected, straight_chain, transform
from mathutils import Quaternion

TOL = 1e-4  # world distance; keys are float32


def fcurves(obj):
    """The F-Curves animating `obj` (4.2: action.fcurves; 4.4+: the assigned slot's channelbag)."""
    ad = obj.animation_data
    if ad is None or ad.action is None:
        return []
    if hasattr(ad.action, "fcurves"):
        return list(ad.action.fcurves)
    from bpy_extras.anim_utils import animdata_get_channelbag_for_assigned_slot

    bag = animdata_get_channelbag_for_assigned_slot(ad)
    return [] if bag is None else list(bag.fcurves)


def keyed(obj) -> dict[tuple[str, int], list[tuple[float, float]]]:
    return {(fc.data_path, fc.array_index): [tuple(k.co) for k in fc.keyframe_points] for fc in fcurves(obj)}


def loop_target(name="Target", frames=(1, 60), center=(0.6, 0.3, 2.0), radius=0.7, tilt=0.4):
    """An empty keyed (every frame, linear) along a tilted circle: a smooth closed path."""
    target = add_empty(name)
    first, last = frames
    for f in range(first, last + 1):
        a = 2.0 * math.pi * (f - first) / (last - first)
        offset = (radius * math.cos(a), radius * math.sin(a) * math.cos(tilt), radius * math.sin(a) * math.sin(tilt))
        target.location = tuple(c + o for c, o in zip(center, offset, strict=True))
        target.keyframe_insert("location", frame=f)
    for fc in fcurves(target):
        for k in fc.keyframe_points:
            k.interpolation = "LINEAR"
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = first, last
    return target


def playback(obj, tip, target, frames, use_tail=True) -> np.ndarray:
    """World tip-to-target distance per frame when the keys play back."""
    scene = bpy.context.scene
    out = []
    for f in frames:
        scene.frame_set(f)
        pb = obj.pose.bones[tip]
        tip_world = obj.matrix_world @ (pb.tail if use_tail else pb.head)
        out.append((tip_world - target.matrix_world.translation).length)
    return np.array(out)


def local_rotations(obj, names, frames) -> np.ndarray:
    """(frames, bones, 4) local rotations as unit quaternions, whatever each bone's mode."""
    scene = bpy.context.scene
    out = []
    for f in frames:
        scene.frame_set(f)
        row = []
        for n in names:
            pb = obj.pose.bones[n]
            row.append(pb.matrix_basis.to_quaternion().normalized()[:])
        out.append(row)
    return np.array(out)


def frame_jumps(quats: np.ndarray) -> np.ndarray:
    """(frames-1, bones) rotation angle between consecutive frames, degrees."""
    dots = np.abs(np.sum(quats[1:] * quats[:-1], axis=-1)).clip(0.0, 1.0)
    return np.degrees(2.0 * np.arccos(dots))


def _bent_rig(matrix_world=None):
    obj = bent_rolled_disconnected(matrix_world=matrix_world)
    bpy.context.view_layer.objects.active = obj
    return obj


def _bake(**kwargs):
    return bpy.ops.chain_ik.bake(**kwargs)


@pytest.mark.parametrize("mode", ["QUATERNION", "XYZ", "ZXY", "AXIS_ANGLE"])
def test_playback_reaches_the_target_every_frame(scene, mode):
    obj = _bent_rig(transform((0.5, -1.0, 0.2), (0.2, 0.0, 0.7), (1.2, 1.2, 1.2)))
    for n in ("upper", "fore", "hand"):
        obj.pose.bones[n].rotation_mode = mode
    target = loop_target(center=(0.9, -0.2, 2.2), radius=0.5)
    assert _bake(tip="hand", chain_length=3, target=target.name, method="triangulation") == {"FINISHED"}
    errors = playback(obj, "hand", target, range(1, 61))
    assert errors.max() < TOL, errors.max()
    prop = {"QUATERNION": "rotation_quaternion", "AXIS_ANGLE": "rotation_axis_angle"}.get(mode, "rotation_euler")
    assert {path for path, _ in keyed(obj)} == {f'pose.bones["{n}"].{prop}' for n in ("upper", "fore", "hand")}


@pytest.mark.parametrize("step", [2, 7])
def test_keys_only_in_range_and_on_chain_rotations(scene, step):
    obj = _bent_rig()
    target = loop_target(frames=(1, 60))
    upper, other, hand = (obj.pose.bones[n] for n in ("upper", "other", "hand"))
    # Existing animation: rotation keys of a chain bone inside and outside the range,
    # a location key of a chain bone, and another bone's rotation.
    for f, angle in ((1, 0.1), (20, 0.2), (50, 0.3)):
        upper.rotation_quaternion = Quaternion((1, 0, 0), angle)
        upper.keyframe_insert("rotation_quaternion", frame=f, group="upper")
    hand.location = (0.0, 0.05, 0.0)
    hand.keyframe_insert("location", frame=20)
    other.rotation_quaternion = Quaternion((0, 0, 1), 0.4)
    other.keyframe_insert("rotation_quaternion", frame=20)
    before = keyed(obj)
    assert _bake(tip="hand", chain_length=3, target=target.name, frame_start=10, frame_end=40, step=step) == {
        "FINISHED"
    }
    after = keyed(obj)
    for (path, index), keys in before.items():
        if path == 'pose.bones["upper"].rotation_quaternion':
            kept = [k for k in keys if not 10 <= k[0] <= 40]
            assert [k for k in after[(path, index)] if not 10 <= k[0] <= 40] == kept
        else:
            assert after[(path, index)] == keys, path  # other channels and bones untouched
    baked = {key: v for key, v in after.items() if key not in before or key[0].startswith('pose.bones["upper"]')}
    assert {path for path, _ in baked} == {f'pose.bones["{n}"].rotation_quaternion' for n in ("upper", "fore", "hand")}
    for keys in baked.values():
        inside = [k[0] for k in keys if 10 <= k[0] <= 40]
        assert inside == sorted({*range(10, 41, step), 40})  # the range's last frame too (step 7: 38 -> 40)
    # Keys sorted, and the baked frames play back on target.
    for fc in fcurves(obj):
        times = [k.co[0] for k in fc.keyframe_points]
        assert times == sorted(times)
    assert playback(obj, "hand", target, sorted({*range(10, 41, step), 40})).max() < TOL


def test_creates_an_action_and_rebake_replaces(scene):
    obj = _bent_rig()
    target = loop_target(frames=(1, 30))
    assert obj.animation_data is None
    assert _bake(tip="hand", chain_length=3, target=target.name) == {"FINISHED"}
    assert obj.animation_data.action is not None
    first = keyed(obj)
    assert all(len(k) == 30 for k in first.values())
    target.location.z += 0.01  # static offset moves nothing (animated), but bake again: same count
    assert _bake(tip="hand", chain_length=3, target=target.name) == {"FINISHED"}
    assert {k: len(v) for k, v in keyed(obj).items()} == {k: 30 for k in first}


def test_new_keys_are_bezier_with_placed_auto_handles(scene):
    """Blender's default keys: the bulk write leaves the handles to FCurve.update()."""
    obj = _bent_rig()
    target = loop_target(frames=(1, 20))
    assert _bake(tip="hand", chain_length=3, target=target.name) == {"FINISHED"}
    for fc in fcurves(obj):
        kps = fc.keyframe_points
        assert {k.interpolation for k in kps} == {"BEZIER"}
        assert {k.handle_left_type for k in kps} | {k.handle_right_type for k in kps} == {"AUTO_CLAMPED"}
        for prev, key, nxt in zip(kps[:-2], kps[1:-1], kps[2:], strict=True):
            assert prev.co.x < key.handle_left.x < key.co.x < key.handle_right.x < nxt.co.x
            low, high = sorted((prev.co.y, nxt.co.y))
            if low <= key.co.y <= high:  # monotone here: clamped handles stay within the neighbours
                assert low - 1e-6 <= key.handle_left.y <= high + 1e-6


def test_undo_reverts_the_bake(scene):
    obj = _bent_rig()
    target = loop_target(frames=(1, 30))
    obj.pose.bones["upper"].keyframe_insert("rotation_quaternion", frame=5)
    bpy.ops.ed.undo_push(message="before bake")
    before = keyed(obj)
    result = bpy.ops.chain_ik.bake("EXEC_DEFAULT", True, tip="hand", chain_length=3, target=target.name)
    assert result == {"FINISHED"}
    assert keyed(obj) != before
    bpy.ops.ed.undo()
    assert keyed(bpy.data.objects["Rig"]) == before
    bpy.ops.ed.redo()
    assert keyed(bpy.data.objects["Rig"]) != before


def test_undo_option():
    from chain_ik.operators import bake

    assert bake.CHAINIK_OT_bake.bl_options == {"REGISTER", "UNDO"}


def test_smooth_loop_has_no_jump(scene):
    obj = _bent_rig()
    target = loop_target(frames=(1, 120), center=(0.5, 0.6, 1.9), radius=0.6)
    assert _bake(tip="hand", chain_length=3, target=target.name, method="triangulation") == {"FINISHED"}
    jumps = frame_jumps(local_rotations(obj, ("upper", "fore", "hand"), range(1, 121)))
    per_frame = jumps.max(axis=1)
    assert per_frame.max() <= 4.0 * np.median(per_frame), (per_frame.max(), np.median(per_frame))
    assert playback(obj, "hand", target, range(1, 121)).max() < TOL


@pytest.mark.parametrize("method", ["fabrik", "ccd", "jacobian"])
def test_iterative_solvers_bake_continuously(scene, method):
    obj = _bent_rig()
    target = loop_target(frames=(1, 40), center=(0.5, 0.6, 1.9), radius=0.4)
    assert _bake(tip="hand", chain_length=3, target=target.name, method=method) == {"FINISHED"}
    assert playback(obj, "hand", target, range(1, 41)).max() < 1e-3
    per_frame = frame_jumps(local_rotations(obj, ("upper", "fore", "hand"), range(1, 41))).max(axis=1)
    assert per_frame.max() <= 5.0 * np.median(per_frame)


def test_euler_and_quaternion_continuity_across_a_full_turn(scene):
    """A target circling the root twice: Euler angles keep growing, quaternions keep their sign."""
    bones = [("a", (0, 0, 0), (1, 0, 0), None, False, 0.0), ("b", (1, 0, 0), (2, 0, 0), "a", True, 0.0)]
    from builders import make_armature

    obj = make_armature(bones)
    obj.pose.bones["a"].rotation_mode = "XYZ"
    target = add_empty()
    for f in range(1, 81):
        a = 4.0 * math.pi * (f - 1) / 79
        target.location = (1.5 * math.cos(a), 1.5 * math.sin(a), 0.3)
        target.keyframe_insert("location", frame=f)
    bpy.context.view_layer.objects.active = obj
    assert _bake(tip="b", chain_length=2, target=target.name, frame_start=1, frame_end=80) == {"FINISHED"}
    curves = keyed(obj)
    z = np.array([v for _, v in curves[('pose.bones["a"].rotation_euler', 2)]])
    assert np.abs(np.diff(z)).max() < 0.5 and z[-1] - z[0] > 2.5 * math.pi  # beyond one turn: no wrap
    q = np.array([[v for _, v in curves[('pose.bones["b"].rotation_quaternion', i)]] for i in range(4)]).T
    assert np.all(np.sum(q[1:] * q[:-1], axis=1) > 0.0)


def test_panel_chains_and_panel_settings(scene):
    obj = _bent_rig()
    target = loop_target(frames=(1, 30))
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target = "hand", 3, target
    settings = obj.chain_ik.bake
    settings.use_scene_range = False
    settings.frame_start, settings.frame_end, settings.step = 5, 25, 5
    settings.interpolation = "LINEAR"
    assert _bake() == {"FINISHED"}
    for fc in fcurves(obj):
        assert [k.co[0] for k in fc.keyframe_points] == [5, 10, 15, 20, 25]
        assert {k.interpolation for k in fc.keyframe_points} == {"LINEAR"}
    # Script arguments override the panel's settings (the step stays the panel's unless given).
    assert _bake(frame_start=1, frame_end=3, step=1) == {"FINISHED"}
    assert [k.co[0] for k in fcurves(obj)[0].keyframe_points] == [1, 2, 3, 5, 10, 15, 20, 25]


def test_key_reduction(scene):
    obj = _bent_rig()
    target = loop_target(frames=(1, 120), center=(0.5, 0.6, 1.9), radius=0.6)
    common = {"tip": "hand", "chain_length": 3, "target": target.name, "interpolation": "LINEAR"}
    assert _bake(**common, reduce=True, reduce_tolerance=2e-3) == {"FINISHED"}
    counts = [len(fc.keyframe_points) for fc in fcurves(obj)]
    assert max(counts) < 120 and min(counts) >= 2
    assert playback(obj, "hand", target, range(1, 121)).max() < 0.02


def test_bad_input_leaves_no_keys(scene):
    obj = _bent_rig()
    target = loop_target(frames=(1, 30))
    with pytest.raises(RuntimeError, match="before frame start"):
        _bake(tip="hand", chain_length=3, target=target.name, frame_start=10, frame_end=5)
    with pytest.raises(RuntimeError, match="no bone 'nope'"):
        _bake(tip="nope", chain_length=3, target=target.name)
    with pytest.raises(RuntimeError, match="no object named"):
        _bake(tip="hand", chain_length=3, target="Missing")
    # A target that becomes non-finite mid-range: nothing is written (all or nothing).
    fc = next(fc for fc in fcurves(target) if fc.array_index == 0)
    fc.keyframe_points[15].co.y = float("nan")
    with pytest.raises(RuntimeError, match=f"target '{target.name}' is at a non-finite location at frame"):
        _bake(tip="hand", chain_length=3, target=target.name)
    assert obj.animation_data is None or not keyed(obj)
    assert bpy.context.scene.frame_current == 1


def test_no_armature_active(scene):
    target = loop_target(frames=(1, 10))
    bpy.context.view_layer.objects.active = target
    assert not bpy.ops.chain_ik.bake.poll()


def test_rigify_arm_loop_no_jump(scene, ext):
    import addon_utils

    addon_utils.enable("rigify", default_set=True)
    try:
        bpy.ops.wm.read_homefile(use_empty=True)
        bpy.ops.object.armature_human_metarig_add()
        obj = bpy.context.object
        bpy.ops.object.mode_set(mode="POSE")
        for pb in obj.pose.bones:
            set_selected(pb, False)
        bpy.context.view_layer.update()
        hand = obj.matrix_world @ obj.pose.bones["hand.L"].tail
        shoulder = obj.matrix_world @ obj.pose.bones["upper_arm.L"].head
        center = shoulder + (hand - shoulder) * 0.6
        target = loop_target(frames=(1, 120), center=tuple(center), radius=0.12, tilt=1.2)
        bpy.context.view_layer.objects.active = obj
        assert _bake(tip="hand.L", chain_length=3, target=target.name) == {"FINISHED"}
        names = ("upper_arm.L", "forearm.L", "hand.L")
        per_frame = frame_jumps(local_rotations(obj, names, range(1, 121))).max(axis=1)
        assert per_frame.max() <= 4.0 * np.median(per_frame) and per_frame.max() < 10.0
        assert playback(obj, "hand.L", target, range(1, 121)).max() < TOL
    finally:
        addon_utils.disable("rigify", default_set=True)


@pytest.mark.parametrize("quiet_seconds", [0.0, 1.0])
def test_progress_line_in_background(scene, capsys, monkeypatch, quiet_seconds):
    from chain_ik.app.bake import Progress

    monkeypatch.setattr(Progress, "QUIET_SECONDS", quiet_seconds)
    obj = _bent_rig()
    target = loop_target(frames=(1, 20))
    assert _bake(tip="hand", chain_length=3, target=target.name) == {"FINISHED"}
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith("Chain IK bake: ") and "%" in line]
    if quiet_seconds:  # a bake of well under a second: no progress lines
        assert lines == [] and obj.animation_data.action is not None
        return
    shown = [int(line.split()[3].rstrip("%")) for line in lines]
    assert shown == sorted(set(shown)) and shown[-1] == 100 and set(shown) <= set(range(10, 101, 10))
    assert lines[-1] == "Chain IK bake: 100% (frame 20)"
    assert obj.animation_data.action is not None


def test_progress_shows_once_the_work_has_lasted_a_second(scene):
    from chain_ik.app.bake import Progress

    stream = io.StringIO()
    progress = Progress(bpy.context, stream)
    progress.update(0.1, 2)
    progress.update(0.35, 7)
    assert stream.getvalue() == ""  # quick so far: nothing shown
    progress.started -= 1.5  # as if the work had lasted 1.5 s
    progress.update(0.38, 8)  # within the 30% step already passed
    progress.update(0.5, 10)
    progress.update(1.0, 20)
    assert stream.getvalue().splitlines() == ["Chain IK bake:  50% (frame 10)", "Chain IK bake: 100% (frame 20)"]


@pytest.mark.parametrize("mode", ["QUATERNION", "YZX", "AXIS_ANGLE"])
def test_fast_path_keys_equal_the_general_path(scene, monkeypatch, mode):
    """rig.sequence (parent-space state, vectorised conversion) against rig.fk + rig.write per frame,
    with the chain's parent bone and the armature object both animated."""
    from chain_ik.app import spec as app_spec
    from chain_ik.app.bake import bake_solve

    obj = _bent_rig(transform((0.2, 0.1, 0.0), (0.1, 0.0, 0.3), (1.1, 1.1, 1.1)))
    for n in ("upper", "fore", "hand"):
        obj.pose.bones[n].rotation_mode = mode
    root = obj.pose.bones["root"]
    for f, angle in ((1, 0.0), (30, 0.5), (60, -0.3)):
        root.rotation_quaternion = Quaternion((1.0, 0.3, 0.2), angle)
        root.keyframe_insert("rotation_quaternion", frame=f)
        obj.location.x = 0.2 + 0.01 * f
        obj.keyframe_insert("location", frame=f)
    target = loop_target(frames=(1, 60), center=(0.8, 0.4, 2.0), radius=0.5)
    args = {"tip": "hand", "chain_length": 3, "target": target.name}
    specs = [s for _, s in app_spec.specs_from_arguments(obj, "hand", 3, target.name, "", "", -1)]
    assert bake_solve.frame_reasons(obj, specs) == [""]
    unbaked = obj.animation_data.action.copy()
    assert _bake(**args) == {"FINISHED"}
    fast = keyed(obj)
    assert playback(obj, "hand", target, range(1, 61)).max() < TOL
    obj.animation_data.action = unbaked
    assert not any("hand" in path for path, _ in keyed(obj))
    for name in ("upper", "fore", "hand"):
        pb = obj.pose.bones[name]
        pb.rotation_quaternion, pb.rotation_euler, pb.rotation_axis_angle = (1, 0, 0, 0), (0, 0, 0), (0, 0, 1, 0)
    monkeypatch.setattr(bake_solve, "frame_reasons", lambda obj, specs, *_: ["forced"] * len(specs))
    assert _bake(**args) == {"FINISHED"}
    chain_keys = {key for key in fast if any(f'"{n}"' in key[0] for n in ("upper", "fore", "hand"))}
    general = {key: v for key, v in keyed(obj).items() if key in chain_keys}
    assert general.keys() == chain_keys and len(chain_keys) == (3 if mode == "YZX" else 4) * 3
    if mode != "AXIS_ANGLE":
        for key, keys in general.items():
            np.testing.assert_allclose(np.array(keys), np.array(fast[key]), atol=2e-5, err_msg=str(key))
        return
    # (angle, axis) and (-angle, -axis) are one rotation; which one a bone starts
    # with depends on the sign of a near-zero dot product: compare rotations.
    for n in ("upper", "fore", "hand"):
        path = f'pose.bones["{n}"].rotation_axis_angle'
        a, b = ([[v for _, v in keys[(path, i)]] for i in range(4)] for keys in (general, fast))
        for (angle_a, *axis_a), (angle_b, *axis_b) in zip(zip(*a, strict=True), zip(*b, strict=True), strict=True):
            assert abs(Quaternion(axis_a, angle_a).dot(Quaternion(axis_b, angle_b))) > 1.0 - 1e-6  # float32 keys


def test_channel_values_in_chunks_equal_one_pass(scene, monkeypatch):
    """The fast path converts orientations to channels in chunks of frames: sign and Euler
    continuity carry across chunk boundaries (a chunk of 7 frames against one of 4096)."""
    from chain_ik.rig import sequence

    obj = _bent_rig()
    for name, mode in (("upper", "QUATERNION"), ("fore", "ZXY"), ("hand", "AXIS_ANGLE")):
        obj.pose.bones[name].rotation_mode = mode
    target = loop_target(frames=(1, 60), center=(0.8, 0.4, 2.0), radius=0.5)
    args = {"tip": "hand", "chain_length": 3, "target": target.name}

    def bake_from_rest():
        obj.animation_data_clear()
        for pb in obj.pose.bones:
            pb.rotation_quaternion, pb.rotation_euler, pb.rotation_axis_angle = (1, 0, 0, 0), (0, 0, 0), (0, 0, 1, 0)
        assert _bake(**args) == {"FINISHED"}
        return keyed(obj)

    whole = bake_from_rest()
    monkeypatch.setattr(sequence, "CHUNK", 7)
    chunked = bake_from_rest()
    assert chunked.keys() == whole.keys()
    for key, keys in whole.items():
        np.testing.assert_array_equal(np.array(chunked[key]), np.array(keys), err_msg=str(key))


def frame_reasons(obj, specs) -> str:
    """Why bake_solve bakes these chains frame by frame, joined ('' : all on the sequence kernel)."""
    from chain_ik.app.bake import bake_solve

    return " ".join(bake_solve.frame_reasons(obj, specs))


def test_fast_path_refusals(scene):
    from chain_ik.app import bake as bake_run

    obj = _bent_rig()
    target = add_empty()
    spec = bake_run.ChainSpec(tip="hand", chain_length=3, target=target)
    assert frame_reasons(obj, [spec]) == ""
    obj.pose.bones["fore"].lock_rotation[0] = True
    assert "locked" in frame_reasons(obj, [spec])
    obj.pose.bones["fore"].lock_rotation[0] = False
    obj.pose.bones["hand"].keyframe_insert("scale", frame=1)
    assert "animated channels" in frame_reasons(obj, [spec])
    obj.animation_data_clear()
    obj.pose.bones["upper"].constraints.new("COPY_LOCATION")
    assert "constraints" in frame_reasons(obj, [spec])
    upper = obj.pose.bones["upper"]
    upper.constraints.remove(upper.constraints[0])
    assert "influence" in frame_reasons(obj, [replace(spec, influence=0.5)])
    other = bake_run.ChainSpec(tip="fore", chain_length=1, target=target)
    assert "share" in frame_reasons(obj, [spec, other])


def test_direct_target_sampling_equals_frame_set(scene, monkeypatch):
    """rig.sampling (F-Curves evaluated directly) against frame_set per frame: same keys.
    The target has a Noise modifier, a delta location and a static channel."""
    from chain_ik.app import spec as app_spec
    from chain_ik.rig import sampling

    obj = _bent_rig(transform((0.3, 0.0, 0.1), (0.0, 0.2, 0.4), (0.9, 0.9, 0.9)))
    target = loop_target(frames=(1, 50), center=(0.8, 0.4, 2.0), radius=0.4)
    target.delta_location = (0.02, -0.03, 0.01)
    x_curve = next(fc for fc in fcurves(target) if fc.array_index == 0)
    noise = x_curve.modifiers.new("NOISE")
    noise.strength, noise.scale = 0.1, 3.0
    fcurves(target)[2].keyframe_points[10].co.y += 0.05  # an uneven z
    specs = [s for _, s in app_spec.specs_from_arguments(obj, "hand", 3, target.name, "", "", -1)]
    assert sampling.armature_static_reason(obj, ["upper"]) == ""
    assert sampling.direct_targets_reason(bpy.context.scene, obj, specs) == ""
    direct = sampling.target_positions(target, np.arange(1, 51))
    scene = bpy.context.scene
    for f in (1, 17, 50):
        scene.frame_set(f)
        np.testing.assert_allclose(direct[f - 1], target.matrix_world.translation[:], atol=1e-6)
    args = {"tip": "hand", "chain_length": 3, "target": target.name}
    assert _bake(**args) == {"FINISHED"}
    first = keyed(obj)
    assert playback(obj, "hand", target, range(1, 51)).max() < TOL
    monkeypatch.setattr(sampling, "direct_targets_reason", lambda *a: "forced")
    obj.animation_data_clear()
    for name in ("upper", "fore", "hand"):
        obj.pose.bones[name].rotation_quaternion = (1, 0, 0, 0)
    assert _bake(**args) == {"FINISHED"}
    for key, keys in keyed(obj).items():
        np.testing.assert_allclose(np.array(keys), np.array(first[key]), atol=1e-6, err_msg=str(key))


def test_curve_values_read_keys_only_where_frames_fall_on_them(scene):
    from chain_ik.rig import sampling

    target = add_empty()
    for frame, z in ((1, 0.0), (3, 1.5), (4, -0.25), (10, 2.0)):
        target.location.z = z
        target.keyframe_insert("location", index=2, frame=frame)
    fc = fcurves(target)[0]
    for frames in ([1.0, 3.0, 4.0, 10.0], [3.0, 10.0], [1.0, 2.0, 3.0], [0.0, 1.0], [10.0, 12.0], [2.5]):
        got = sampling.curve_values(fc, np.array(frames))
        assert got.tolist() == [fc.evaluate(f) for f in frames], frames
    fc.modifiers.new("NOISE")  # modifiers move values at keys too: always evaluate
    assert sampling.curve_values(fc, np.array([3.0])).tolist() == [fc.evaluate(3.0)]


def test_direct_sampling_refusals(scene):
    from chain_ik.app import spec as app_spec
    from chain_ik.rig import sampling

    obj = _bent_rig()
    target = loop_target(frames=(1, 10))
    scene = bpy.context.scene
    specs = [s for _, s in app_spec.specs_from_arguments(obj, "hand", 3, target.name, "", "", -1)]

    def reason():
        return sampling.armature_static_reason(obj, ["upper"]) or sampling.direct_targets_reason(scene, obj, specs)

    assert reason() == ""
    obj.pose.bones["root"].keyframe_insert("rotation_quaternion", frame=1)
    assert "bone 'root' is animated" in reason()
    obj.animation_data_clear()
    obj.keyframe_insert("location", frame=1)
    assert "armature object is animated" in reason()
    obj.animation_data_clear()
    parent = add_empty("Parent")
    target.parent = parent
    assert "parented" in reason()
    target.parent = None
    con = target.constraints.new("COPY_LOCATION")
    assert "constraints" in reason()
    target.constraints.remove(con)
    fcurves(target)[0].mute = True
    assert "muted" in reason()
    fcurves(target)[0].mute = False
    target.animation_data.action_influence = 0.5
    assert "blended" in reason()
    target.animation_data.action_influence = 1.0
    scene.render.frame_map_new = 50
    assert "time remapping" in reason()
    scene.render.frame_map_new = 100

    def handler(scene, depsgraph=None):
        pass

    bpy.app.handlers.frame_change_pre.append(handler)
    try:
        assert "handlers" in reason()
    finally:
        bpy.app.handlers.frame_change_pre.remove(handler)
    assert reason() == ""


@pytest.mark.parametrize("animated_tip", [False, True])
def test_head_of_the_tip_reaches_without_use_tail(scene, animated_tip):
    from chain_ik.app import spec as app_spec

    obj = _bent_rig()
    target = loop_target(frames=(1, 40), center=(0.4, 0.5, 1.8), radius=0.3)
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target, item.use_tail = "hand", 2, target, False
    if animated_tip:  # the reaching head moves with the tip bone's own (ignored: connected) location
        hand = obj.pose.bones["hand"]
        hand.keyframe_insert("location", frame=1)
        hand.location = (0.0, 0.1, 0.0)
        hand.keyframe_insert("location", frame=40)
    spec = app_spec.spec_from_item(item)
    assert (frame_reasons(obj, [spec]) == "") != animated_tip
    assert _bake() == {"FINISHED"}
    assert playback(obj, "hand", target, range(1, 41), use_tail=False).max() < TOL
    assert {path for path, _ in keyed(obj) if "rotation" in path} == {
        f'pose.bones["{n}"].rotation_quaternion' for n in ("upper", "fore")
    }


def test_bake_honours_pole_and_ik_limits(scene):
    """The general path carries the chain's pole target and the bones' IK limits frame by frame."""
    from chain_ik.app import spec as app_spec

    obj = straight_chain(2)
    target = loop_target(frames=(1, 40), center=(0.6, 0.0, 1.2), radius=0.25)
    pole = add_empty("Pole", location=(0.0, -2.0, 1.0))
    knee = obj.pose.bones["b1"]
    knee.use_ik_limit_x, knee.ik_min_x, knee.ik_max_x = True, math.radians(-5.0), math.radians(150.0)
    knee.lock_ik_y = knee.lock_ik_z = True
    knee.rotation_quaternion = Quaternion((1.0, 0.0, 0.0), math.radians(40.0))  # not the straight singularity
    bpy.context.view_layer.objects.active = obj
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target, item.pole_target = "b1", 2, target, pole
    assert frame_reasons(obj, [app_spec.spec_from_item(item)]) == ""  # the sequence kernel carries both
    assert _bake() == {"FINISHED"}
    # Frames 1-2 miss by as much as Solve does from this start (a solver case, reported); once the
    # knee has turned toward the pole, each frame continues from the last and reaches.
    assert playback(obj, "b1", target, range(3, 41)).max() < 2e-3  # the limited solve's tolerance
    scene = bpy.context.scene
    for f in range(4, 41, 3):
        scene.frame_set(f)
        e = knee.matrix_basis.to_euler("XYZ")
        assert math.radians(-5.5) <= e.x <= math.radians(150.5) and abs(e.y) < 1e-3 and abs(e.z) < 1e-3
        # The knee bends toward the pole (negative Y side).
        assert (obj.matrix_world @ knee.head).y < 0.0
    with pytest.raises(RuntimeError, match="no pole object named 'Missing'"):
        _bake(pole="Missing")


@pytest.mark.parametrize("mode", ["QUATERNION", "ZXY"])
def test_pole_and_limits_on_the_sequence_kernel_equal_frame_by_frame(scene, monkeypatch, mode):
    """A bake with a pole target (animated) and knee limits stays on the sequence kernel, and its
    keys are those of the same chains solved frame by frame (each frame a Solve from the last)."""
    from chain_ik.app import spec as app_spec
    from chain_ik.app.bake import bake_solve

    obj = straight_chain(2, matrix_world=transform((0.3, 0.1, 0.0), (0.0, 0.0, 0.4), (1.2, 1.2, 1.2)))
    for name in ("b0", "b1"):
        obj.pose.bones[name].rotation_mode = mode
    target = loop_target(frames=(1, 40), center=(0.6, 0.0, 1.5), radius=0.25)
    pole = loop_target("Pole", frames=(1, 40), center=(0.0, -2.0, 1.2), radius=0.3)
    knee = obj.pose.bones["b1"]
    knee.use_ik_limit_x, knee.ik_min_x, knee.ik_max_x = True, math.radians(-5.0), math.radians(150.0)
    knee.lock_ik_y = knee.lock_ik_z = True
    knee.rotation_euler = (math.radians(40.0), 0.0, 0.0)
    knee.rotation_quaternion = Quaternion((1.0, 0.0, 0.0), math.radians(40.0))
    start = {name: obj.pose.bones[name].matrix_basis.copy() for name in ("b0", "b1")}
    bpy.context.view_layer.objects.active = obj
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target, item.pole_target = "b1", 2, target, pole
    item.pole_angle = math.radians(-90.0)
    spec = app_spec.spec_from_item(item)
    assert bake_solve.frame_reasons(obj, [spec]) == [""]
    assert _bake() == {"FINISHED"}
    carried = keyed(obj)
    assert playback(obj, "b1", target, range(3, 41)).max() < 2e-3
    obj.animation_data_clear()
    for name, basis in start.items():
        obj.pose.bones[name].matrix_basis = basis
    monkeypatch.setattr(bake_solve, "frame_reasons", lambda obj, specs, *_: ["forced"] * len(specs))
    assert _bake() == {"FINISHED"}
    per_frame = keyed(obj)
    assert per_frame.keys() == carried.keys()
    for key, keys in per_frame.items():
        np.testing.assert_allclose(np.array(keys), np.array(carried[key]), atol=1e-5, err_msg=str(key))


def test_the_bake_says_why_a_chain_went_frame_by_frame(scene):
    """The result, the per-chain report and the operator's report name the reason; a chain the
    sequence kernel served has none."""
    from chain_ik.app import bake as bake_run
    from chain_ik.app import spec as app_spec

    obj = _bent_rig()
    target = loop_target(frames=(1, 20), center=(0.8, 0.4, 2.0), radius=0.4)
    obj.pose.bones["fore"].constraints.new("LIMIT_ROTATION").use_limit_x = False
    specs = [s for _, s in app_spec.specs_from_arguments(obj, "hand", 3, target.name, "", "", -1)]
    options = bake_run.BakeOptions(1, 20)
    result = bake_run.bake(bpy.context, obj, specs, options)
    assert result.reasons == {"hand": "baked frame by frame: bone 'fore' has constraints"}
    assert result.chains[0].path == result.reasons["hand"]
    assert result.chains[0].line().endswith("; baked frame by frame: bone 'fore' has constraints")
    fore = obj.pose.bones["fore"]
    fore.constraints.remove(fore.constraints[0])
    obj.animation_data_clear()
    result = bake_run.bake(bpy.context, obj, specs, options)
    assert result.reasons == {} and result.chains[0].path == ""
