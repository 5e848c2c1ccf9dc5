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


def test_a_retargeted_walk_keeps_its_feet_planted(scene):
    from chain_ik.rig import contacts as rig_contacts

    clip = mocap_rigs.CLIPS["walk"]
    source = mocap_rigs.load_clip("walk")
    mocap_rigs.add_leg_chains(source, clip)
    obj = mocap_rigs.retarget(source, clip, 1.2)
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
        assert figures["angular_after"] <= 1.2 * figures["angular_before"]
        print(report.line())
