"""The shared motion capture clips in Blender (bench/mocap_rigs.py, Blender's own BVH importer):
contacts detected on the walks, the quick leg retarget, and bench/bench_contacts.py's table."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import bpy
import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import mocap_rigs  # noqa: E402

pytestmark = pytest.mark.skipif(not mocap_rigs.MOCAP_DIR.is_dir(), reason=f"no clips at {mocap_rigs.MOCAP_DIR}")


def test_blenders_bvh_importer_loads_every_clip(scene):
    for name, clip in mocap_rigs.CLIPS.items():
        bpy.ops.wm.read_homefile(use_empty=True)
        obj = mocap_rigs.load_clip(name)
        scene = bpy.context.scene
        assert obj.type == "ARMATURE" and scene.render.fps / scene.render.fps_base == pytest.approx(120.0, rel=1e-5)
        assert scene.frame_start == clip.first_frame and scene.frame_end > clip.first_frame + 100
        for thigh, shin, foot in clip.legs.values():
            assert obj.data.bones[foot].parent.name == shin and obj.data.bones[shin].parent.name == thigh
        # The README's scale: a leg (thigh, shin, foot) of about 0.95 m.
        assert 0.85 < mocap_rigs.leg_length(obj, clip, "Left") < 1.05


@pytest.mark.parametrize("name", [n for n, c in mocap_rigs.CLIPS.items() if c.kind == "walk"])
def test_each_foot_has_several_contacts_in_the_walks(scene, name):
    from chain_ik.app.spec import contacts
    from chain_ik.rig import contacts as rig_contacts
    from chain_ik.solvers.contacts import contact_runs

    clip = mocap_rigs.CLIPS[name]
    obj = mocap_rigs.load_clip(name)
    mocap_rigs.add_leg_chains(obj, clip)
    scene = bpy.context.scene
    assert bpy.ops.chain_ik.detect_contacts() == {"FINISHED"}
    frames = np.arange(scene.frame_start, scene.frame_end + 1)
    for item in obj.chain_ik.chains:
        played = rig_contacts.read_contacts(obj, item, frames)
        runs = contact_runs(played)
        assert len(runs) >= 3, (item.name, runs)
        # A walk stands on each foot for 40-85% of the time, 0.3 s or more each step (the clip may
        # start or end inside one).
        inside = [b - a for a, b in runs if a > 0 and b < len(frames)]
        assert 0.4 < played.mean() < 0.85 and min(inside) >= 0.3 * 120
    # Left and right alternate: some frame has only one foot down.
    left, right = (rig_contacts.read_contacts(obj, item, frames) for item in obj.chain_ik.chains)
    assert np.any(left & ~right) and np.any(right & ~left)
    assert contacts.detect_frames(1, 1).tolist() == [1]


def test_retarget_scales_the_legs_and_the_hips_path(scene):
    clip = mocap_rigs.CLIPS["walk"]
    source = mocap_rigs.load_clip("walk")
    longer = mocap_rigs.retarget(source, clip, 1.2)
    for thigh, shin, foot in clip.legs.values():
        for bone in (thigh, shin):
            assert longer.data.bones[bone].length == pytest.approx(1.2 * source.data.bones[bone].length, rel=1e-5)
        assert longer.data.bones[foot].length == pytest.approx(source.data.bones[foot].length, rel=1e-5)
    scene = bpy.context.scene
    scene.frame_set(100)
    # The same local rotations on every bone; the hips' location scaled by one ratio, above 1.
    for bone in source.pose.bones:
        other = longer.pose.bones[bone.name]
        assert np.allclose(bone.matrix_basis.to_quaternion(), other.matrix_basis.to_quaternion(), atol=1e-6)
    hips_a = np.array(source.pose.bones["Hips"].location)
    hips_b = np.array(longer.pose.bones["Hips"].location)
    ratio = np.linalg.norm(hips_b) / np.linalg.norm(hips_a)
    assert 1.1 < ratio < 1.2 and np.allclose(hips_b, ratio * hips_a, atol=1e-5)
    assert longer.animation_data.action != source.animation_data.action
    assert longer.data != source.data


def test_bench_contacts_prints_its_table(scene, capsys):
    spec = importlib.util.spec_from_file_location("bench_contacts", REPO / "bench" / "bench_contacts.py")
    bench = importlib.util.module_from_spec(spec)
    sys.modules["bench_contacts"] = bench  # its dataclasses look their module up
    spec.loader.exec_module(bench)
    bench.REPEATS = 1  # the timing's repeats steady the figure, not the table
    rows = bench.main(["--clips", "walk"])
    out = capsys.readouterr().out
    assert "after: slide mean" in out and "Blender's route" in out and "wall clock where less, best of 1" in out
    assert out.count("| walk |") == 6 == len(rows)
    retargets = [r for r in rows if r.after]
    assert len(retargets) == 4
    assert all(r.after["slide_mean"] <= 0.1 * r.slide_mean and r.after["lowest"] >= -1e-3 for r in retargets)
    assert all(r.contacts >= 3 for r in rows)
    assert all(r.f1 >= 0.9 for r in rows if r.f1 is not None)
    assert all(math.isfinite(r.slide_mean) and 0.0 <= r.skating <= 1.0 for r in rows)


def test_the_readme_snippet_runs_on_a_walk(scene):
    """README's "Foot contacts" snippet, line by line, on the walk clip with a plane 'Floor'."""
    import re

    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("### Foot contacts") :]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    obj = mocap_rigs.load_clip("walk")
    mocap_rigs.add_leg_chains(obj, mocap_rigs.CLIPS["walk"])
    bpy.ops.mesh.primitive_plane_add(size=50.0, location=(0.0, 0.0, 0.0))
    bpy.context.object.name = "Floor"
    bpy.context.view_layer.objects.active = obj
    namespace = {"bpy": bpy}
    for line in code.strip().split("\n"):
        statement = line.split("  #")[0]
        if statement.startswith("bpy.ops."):
            assert eval(statement, namespace) == {"FINISHED"}, statement
        else:
            exec(statement, namespace)
    assert obj.chain_ik.ground.name == "Floor"
