"""A small module that test_outcome_corpus.py runs with CHAIN_IK_CORPUS set, in its own process:
one outcome of each kind for the recorder to write (not collected otherwise: not test_*.py).
The cases are functions, so the checking test can run them again in its own session and
compare what it gets with what was recorded."""

from __future__ import annotations

import subprocess
import sys

import bpy
import pytest
from builders import add_empty, straight_chain
from conftest import REPO

LIVE_MOVES = ((1.0, 0.5, 2.0), (-0.5, 1.0, 1.5), (0.2, -1.2, 0.8))


def solve_case():
    obj = straight_chain(3)
    bpy.ops.object.mode_set(mode="OBJECT")
    add_empty("Goal", (1.0, 0.5, 2.0))
    assert bpy.ops.chain_ik.solve(tip="b2", chain_length=3, target="Goal", method="fabrik") == {"FINISHED"}
    return obj


def bake_case():
    obj = straight_chain(3)
    bpy.ops.object.mode_set(mode="OBJECT")
    goal = add_empty("Goal")
    for frame in (1, 10):
        goal.location = (0.5 * frame / 10, 1.0 - 0.05 * frame, 2.0)
        goal.keyframe_insert("location", frame=frame)
    assert bpy.ops.chain_ik.bake(tip="b2", chain_length=3, target="Goal", frame_start=1, frame_end=10) == {"FINISHED"}
    return obj


def test_solve(scene):
    solve_case()


def test_bake(scene):
    bake_case()


def test_refused(scene):
    straight_chain(3)
    bpy.ops.object.mode_set(mode="OBJECT")
    add_empty("Goal", (1.0, 0.5, 2.0))
    with pytest.raises(RuntimeError, match="longer than the hierarchy"):
        bpy.ops.chain_ik.solve(tip="b2", chain_length=9, target="Goal")


def test_app_solve(scene):
    from chain_ik.app import solve as run

    obj = straight_chain(3)
    bpy.ops.object.mode_set(mode="OBJECT")
    goal = add_empty("Goal", (0.5, 0.5, 2.0))
    bpy.context.view_layer.update()
    spec = run.ChainSpec(tip="b2", chain_length=3, target=goal)
    (outcome,) = run.solve_unit(obj, [spec], bpy.context.evaluated_depsgraph_get())
    assert outcome.error < 1e-4


def test_live(scene):
    obj = straight_chain(3)
    bpy.ops.object.mode_set(mode="OBJECT")
    goal = add_empty("Goal", (0.0, 0.0, 3.0))
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target = "b2", 3, goal
    item.live = True
    try:
        for location in LIVE_MOVES:
            goal.location = location
            bpy.context.view_layer.update()  # Live solves
            bpy.context.view_layer.update()  # the written pose evaluates: nothing for Live to do
    finally:
        item.live = False


def test_cli(scene, tmp_path):
    bake_case()
    obj = bpy.data.objects["Rig"]
    obj.animation_data_clear()
    for bone in obj.pose.bones:
        bone.rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
    path, summary, out = tmp_path / "scene.blend", tmp_path / "summary.json", tmp_path / "out.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    run = subprocess.run(
        [sys.executable, str(REPO / "cli.py"), str(path), "--", "--armature", "Rig", "--chain", "b2:3",
         "--target", "Goal", "--frames", "1-10", "--json", str(summary), "--output", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
