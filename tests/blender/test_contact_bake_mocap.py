"""Bake honours contacts on real motion capture (a shared CMU walk put on a character with legs 20%
longer, as bench/bench_contacts.py does): detected contacts, then Bake Chain IK; on playback the
planted feet hold, the ground is never crossed, and nothing but the legs' rotation keys changed."""

from __future__ import annotations

import sys
from pathlib import Path

import bpy
import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import mocap_rigs  # noqa: E402

pytestmark = pytest.mark.skipif(not mocap_rigs.MOCAP_DIR.is_dir(), reason=f"no clips at {mocap_rigs.MOCAP_DIR}")


def _curves(obj) -> dict:
    from chain_ik.rig import keys

    out = {}
    for fc in keys.assigned_fcurves(obj):
        co = np.empty(2 * len(fc.keyframe_points), dtype=np.float32)
        fc.keyframe_points.foreach_get("co", co)
        out[fc.data_path, fc.array_index] = co
    return out


@pytest.mark.parametrize("legs", [1.2, 0.8])
def test_a_retargeted_walk_keeps_its_feet_planted(scene, legs):
    """Legs 20% longer and shorter; the joints turn no faster than 1.1x the input's largest (issue 21
    item 5: no new pop; the walk's push-off reached 1.21x on legs 20% shorter before the foot's pitch
    there was chosen for it, app.bake.contact_pitch)."""
    from chain_ik.rig import contacts as rig_contacts

    clip = mocap_rigs.CLIPS["walk"]
    source = mocap_rigs.load_clip("walk")
    mocap_rigs.add_leg_chains(source, clip)
    obj = mocap_rigs.retarget(source, clip, legs)
    scene = bpy.context.scene
    frames = np.arange(scene.frame_start, scene.frame_end + 1)
    feet = rig_contacts.sample_feet(bpy.context, source, source.chain_ik.chains, frames)
    floor = min(float(track.toe[:, 2].min()) for track in feet)
    bpy.ops.mesh.primitive_plane_add(size=50.0, location=(0.0, 0.0, floor))
    obj.chain_ik.ground = bpy.context.object
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.chain_ik.detect_contacts() == {"FINISHED"}
    before = _curves(obj)
    from chain_ik.app import bake as baking
    from chain_ik.app.spec import spec_from_item

    specs = [spec_from_item(item) for item in obj.chain_ik.chains]
    result = baking.bake(bpy.context, obj, specs, baking.BakeOptions(int(frames[0]), int(frames[-1])))
    legs = {n for side in clip.legs.values() for n in side}
    after = _curves(obj)
    for (path, index), co in before.items():  # the hips, arms, spine, contact keys: as they were
        if not any(f'"{n}"' in path for n in legs):
            assert np.array_equal(after[path, index], co), path
    assert "legs read from the action's curves" in result.reasons["Left Foot"]
    for report in result.chains:
        figures = report.contacts
        assert report.pinned and report.missed == 0, report.line()  # held to the tolerance (~1e-5)
        assert figures["contacts"] >= 3 and figures["unreached"] == 0
        assert figures["slide_after"]["mean"] <= 0.1 * figures["slide_before"]["mean"]
        assert figures["slide_after"]["median"] < 1e-3
        assert figures["lowest_after"] >= -1e-4
        assert figures["angular_after"] <= 1.1 * figures["angular_before"]
        print(report.line())


def _hip_joints(obj, frames) -> dict:
    """Per chain name, (F, 3) the world position of its thigh's head (the hip joint) as it plays."""
    scene, out = bpy.context.scene, {}
    thighs = {item.name: obj.pose.bones[item.tip].parent.parent.name for item in obj.chain_ik.chains}
    rows = []
    for frame in frames:
        scene.frame_set(int(frame))
        rows.append([np.array(obj.matrix_world @ obj.pose.bones[t].head) for t in thighs.values()])
    scene.frame_set(int(frames[0]))
    rows = np.array(rows)
    for c, name in enumerate(thighs):
        out[name] = rows[:, c]
    return out


def test_after_a_contact_and_its_blend_the_swing_follows_the_capture(scene):
    """Issue 21 item 2: `contact_blend` frames after a contact the leg is back on its input pose and
    the swing keeps the capture's height (the joint eases once ran ~0.8 s, through the swing, and
    the ground clamp held the foot on the plane). With Move Root the hips may still be lowered on
    those frames; the input pose then means the capture's foot, as the world sees it: its tip (the
    ball) where the capture has it and the foot's world rotation the capture's (thigh and shin
    solved for it under the lowered hips, contact_hips.kept_feet); where the hips are not lowered,
    the leg's own local rotations are the capture's too. Walk, legs 20% longer, Move Root on."""
    from chain_ik.app import bake as baking
    from chain_ik.app.spec import spec_from_item
    from chain_ik.rig import contacts as rig_contacts
    from chain_ik.solvers.contacts import contact_runs
    from chain_ik.solvers.plant import default_blend

    clip = mocap_rigs.CLIPS["walk"]
    source = mocap_rigs.load_clip("walk")
    mocap_rigs.add_leg_chains(source, clip)
    obj = mocap_rigs.retarget(source, clip, 1.2)
    scene = bpy.context.scene
    frames = np.arange(scene.frame_start, scene.frame_end + 1)
    fps = scene.render.fps / scene.render.fps_base
    floor = min(
        float(t.toe[:, 2].min()) for t in rig_contacts.sample_feet(bpy.context, source, source.chain_ik.chains, frames)
    )
    bpy.ops.mesh.primitive_plane_add(size=50.0, location=(0.0, 0.0, floor))
    obj.chain_ik.ground = bpy.context.object
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.chain_ik.detect_contacts() == {"FINISHED"}
    for item in obj.chain_ik.chains:
        item.move_root = True
    before = rig_contacts.sample_feet(bpy.context, obj, obj.chain_ik.chains, frames, rotations=True)
    hip_before = _hip_joints(obj, frames)
    flags = [rig_contacts.read_contacts(obj, item, frames) for item in obj.chain_ik.chains]
    specs = [spec_from_item(item) for item in obj.chain_ik.chains]
    result = baking.bake(bpy.context, obj, specs, baking.BakeOptions(int(frames[0]), int(frames[-1])))
    assert all(r.contacts["root_moved"] > 0.01 for r in result.chains)  # the hips did go down
    after = rig_contacts.sample_feet(bpy.context, obj, obj.chain_ik.chains, frames, rotations=True)
    hip_after = _hip_joints(obj, frames)
    blend = default_blend(fps)
    names = [item.name for item in obj.chain_ik.chains]
    for name, track, played, planted in zip(names, before, after, flags, strict=True):
        runs = contact_runs(planted)
        swing = np.zeros(len(frames), dtype=bool)
        # From a contact's end plus its blend to the next contact's ease-in (at most the blend).
        bounds = [(None, 0)] + runs + [(len(frames) + blend, None)]
        for (_, end), (start, _) in zip(bounds, bounds[1:], strict=False):
            swing[max(0, end + blend + 1) : max(0, start - blend)] = True
        assert swing.sum() >= 40  # 2-3 swings of ~0.5 s: the middle ~0.2 s of each
        assert np.max(np.linalg.norm(played.toe[swing] - track.toe[swing], axis=1)) < 1e-4
        foot, foot_before = played.heel - played.toe, track.heel - track.toe
        assert np.max(np.linalg.norm(foot[swing] - foot_before[swing], axis=1)) < 1e-4
        # The swing's height is the capture's: its peak and median, and no swing frame on the plane.
        free = ~planted
        assert abs(played.toe[free, 2].max() - track.toe[free, 2].max()) < 1e-4
        assert np.median(played.toe[swing, 2]) == pytest.approx(np.median(track.toe[swing, 2]), abs=1e-4)
        assert not np.any(played.toe[swing, 2] - floor < 1e-3)
        # Where the hips are back (the hip joint where the capture has it), the leg's local rotations
        # are the capture's too (on this walk the other foot's holds keep the hips lowered through
        # most swings: `lowered` says the case above is the one checked).
        back = swing & (np.linalg.norm(hip_after[name] - hip_before[name], axis=1) < 1e-6)
        lowered = swing & ~back
        assert np.any(lowered)
        dots = np.abs(np.sum(played.rotations[back] * track.rotations[back], axis=-1))
        assert np.all(dots > 1.0 - 1e-9)
