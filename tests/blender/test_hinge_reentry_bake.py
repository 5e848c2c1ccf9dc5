"""A new-user trial: Rigify's generated IK arm (no pole: Lock IK Y and Z on MCH-forearm_ik, IK
Stretch 0.1 on both bones, the upper arm hanging from a swing bone that tracks the target), the
chain adopted from its IK constraint, hand_ik keyed on a path that leaves full reach and comes back.
A bake continues each frame from the last; the frame after one past reach started from a straight
arm, which fixes neither the plane nor the sense of the bend: triangulation turned the upper arm
56 degrees in one frame (Blender's IK: 7), FABRIK 113, CCD stayed straight and missed, and every
later frame kept the wrong plane (the elbow 112-200 mm from Blender's). Now the bend follows
Blender's IK (which solves every evaluation from the input pose), the bake's frame is what a Solve
from the input pose gives, and the report warns of a jump (none here).
"""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest
from mathutils import Vector

ARM = ("upper_arm_ik.L", "MCH-forearm_ik.L")
FRAMES = range(20, 61)


def _rig(rigify_file, stretch: bool):
    bpy.ops.wm.open_mainfile(filepath=rigify_file)
    rig = bpy.data.objects["rig"]
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode="POSE")
    hand = rig.pose.bones["hand_ik.L"]
    base = hand.location.copy()
    for f in range(1, 101, 10):  # the user's path: out of reach before frame 21, within it after
        hand.location = base + Vector((0.15 * math.sin(f / 8), 0.1 * math.cos(f / 8), 0.25 * math.sin(f / 13)))
        hand.keyframe_insert("location", frame=f)
    if not stretch:
        for name in ARM:
            rig.pose.bones[name].ik_stretch = 0.0
    return rig


def _elbows(rig) -> np.ndarray:
    scene, out = bpy.context.scene, []
    for f in FRAMES:
        scene.frame_set(f)
        out.append((rig.matrix_world @ rig.pose.bones[ARM[0]].tail)[:])
    return np.array(out)


def _turns(rig) -> np.ndarray:
    """Per frame after the first, the largest turn of an arm bone against its parent (degrees)."""
    scene, out, last = bpy.context.scene, [], None
    for f in FRAMES:
        scene.frame_set(f)
        pose = rig.pose.bones
        q = [(pose[n].parent.matrix.inverted() @ pose[n].matrix).to_quaternion() for n in ARM]
        if last is not None:
            out.append(max(math.degrees(a.rotation_difference(b).angle) for a, b in zip(q, last, strict=True)))
        last = q
    return np.array(out)


def _adopt(rig, method: str):
    assert bpy.ops.chain_ik.chains_from_constraints() == {"FINISHED"}
    chains = rig.chain_ik.chains
    rig.chain_ik.scope = "SELECTED"
    for c in chains:
        c.select = False
    item = chains["MCH-forearm_ik.L"]
    item.select, item.method = True, method
    return item


@pytest.mark.parametrize("stretch", [True, False])
@pytest.mark.parametrize("method", ["triangulation", "fabrik", "ccd"])
def test_rigify_arm_bakes_back_into_reach_as_blenders_ik(rigify_file, method, stretch):
    rig = _rig(rigify_file, stretch)
    blender = _elbows(rig)  # Blender's IK constraint, before the chain is adopted
    blender_turns = _turns(rig)
    _adopt(rig, method)
    assert bpy.ops.chain_ik.bake(frame_start=FRAMES[0], frame_end=FRAMES[-1]) == {"FINISHED"}
    baked = _elbows(rig)
    off = np.linalg.norm(baked - blender, axis=1) * 1000.0  # mm; the arm is ~0.55 long
    # Blender's IK Stretch also shortens the bones a little within reach (the chain does not: its
    # adoption says so), and near full reach its iterations stop short of straight: up to 14 mm.
    assert off.max() < (20.0 if stretch else 2.0), off.round(1).tolist()
    turns = _turns(rig)
    assert turns.max() <= 1.2 * blender_turns.max() + 1.0, (turns.round(1).tolist(), blender_turns.round(1).tolist())


def test_rigify_arm_bake_frame_is_a_solve_from_its_input_pose(rigify_file):
    """Frame 30 of the bake is the pose Solve gives at frame 30 from the input pose."""
    rig = _rig(rigify_file, True)
    item = _adopt(rig, "triangulation")
    scene = bpy.context.scene
    scene.frame_set(30)
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    bpy.context.view_layer.update()
    solved = np.array((rig.matrix_world @ rig.pose.bones[ARM[0]].tail)[:])
    for name in ARM:  # back to the input pose (the arm's channels are not animated)
        pb = rig.pose.bones[name]
        pb.rotation_quaternion, pb.rotation_euler, pb.scale = (1, 0, 0, 0), (0, 0, 0), (1, 1, 1)
    assert item.select
    assert bpy.ops.chain_ik.bake(frame_start=FRAMES[0], frame_end=FRAMES[-1]) == {"FINISHED"}
    scene.frame_set(30)
    baked = np.array((rig.matrix_world @ rig.pose.bones[ARM[0]].tail)[:])
    assert np.linalg.norm(baked - solved) < 1e-4, np.linalg.norm(baked - solved)


def _report(turns: list[float]):
    from chain_ik.app.bake import bake_report

    track = bake_report._Track.__new__(bake_report._Track)
    track.turns = turns
    track.arrivals = list(range(1, len(turns) + 1))  # each turn arrives at the frame after the one before
    spike = track._spike(list(range(len(turns) + 1)))
    return bake_report.ChainReport("Arm", "hand", "triangulation", len(turns) + 1, 0, 1e-5, 0.0, 0, max(turns), 0,
                                   **spike)  # fmt: skip


def test_jump_warning_names_a_pop_not_a_fast_smooth_turn():
    """Blender's own turns on the trial's path (a fast straightening at 20.8 degrees, 7x the
    median) are no jump; the bake's old 56 degree pop after 0 and before 14.5 is."""
    smooth = [14.6, 12.5, 10.4, 8.8, 7.5, 6.9, 6.3, 5.5, 4.7, 3.7, 2.7, 1.7, 0.9, 0.1, 0.7, 1.5, 2.2, 2.9, 3.6]
    smooth += [4.2, 4.6, 5.6, 7.1, 8.7, 11.9, 17.3, 20.8, 0.9, 0.0, 0.0]
    from chain_ik.app.bake import bake_report

    assert bake_report.jump_warning([_report(smooth)]) == ""
    popped = [56.3, 14.5, 10.8, 9.2] + smooth[4:]
    line = bake_report.jump_warning([_report(popped)])
    assert "'Arm' 56.3° at frame 1 (3.9x its neighbours')" in line, line
    stepped = [0.0, 30.0, 0.0, 0.0, 0.0, 25.0, 0.0, 0.0]  # blocking keys (constant): each change is no jump
    assert bake_report.jump_warning([_report(stepped)]) == ""
