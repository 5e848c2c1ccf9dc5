"""Respect Locks: on (the default) a bone's locked rotation channels are kept, as Blender's transform
tools keep them; off, the chain turns through them, as Blender's IK constraint does."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from builders import add_empty, straight_chain, world_point

GOAL = (1.2, 0.6, 1.8)


def _chain(use_locks: bool):
    obj = straight_chain(3)
    target = add_empty(location=GOAL)
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target, item.use_locks = "b2", 3, target, use_locks
    obj.pose.bones["b0"].lock_rotation = (True, False, True)  # only a twist left: the tip cannot reach
    obj.pose.bones["b0"].rotation_mode = "XYZ"
    return obj, target


@pytest.mark.parametrize("use_locks", [True, False])
def test_solve(scene, use_locks):
    obj, _ = _chain(use_locks)
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    euler = obj.pose.bones["b0"].rotation_euler
    miss = float(np.linalg.norm(world_point(obj, "b2") - np.array(GOAL)))
    if use_locks:
        assert euler.x == 0.0 and euler.z == 0.0 and miss > 0.1
    else:
        assert (euler.x, euler.z) != (0.0, 0.0) and miss < 1e-4


@pytest.mark.parametrize("use_locks", [True, False])
def test_bake(scene, use_locks):
    obj, target = _chain(use_locks)
    target.keyframe_insert("location", frame=1)
    target.location = (-0.8, 0.9, 1.5)
    target.keyframe_insert("location", frame=5)
    assert bpy.ops.chain_ik.bake(frame_start=1, frame_end=5) == {"FINISHED"}
    misses = []
    for frame in range(1, 6):
        bpy.context.scene.frame_set(frame)
        misses.append(float(np.linalg.norm(world_point(obj, "b2") - np.array(target.location[:]))))
    assert (max(misses) < 1e-4) is (not use_locks)


@pytest.mark.parametrize("use_locks", [True, False])
def test_script_argument(scene, use_locks):
    """`use_locks=` from a script: a Tip Bone call keeps locks by default and can turn through them;
    over the panel's chain it overrides the chain's setting (which stays as it was)."""
    obj, target = _chain(True)
    assert bpy.ops.chain_ik.solve(tip="b2", chain_length=3, target=target.name, use_locks=use_locks) == {"FINISHED"}
    miss = float(np.linalg.norm(world_point(obj, "b2") - np.array(GOAL)))
    assert (miss < 1e-4) is (not use_locks)
    obj.pose.bones["b0"].rotation_euler = (0.0, 0.0, 0.0)
    assert bpy.ops.chain_ik.solve(use_locks=use_locks) == {"FINISHED"}
    miss = float(np.linalg.norm(world_point(obj, "b2") - np.array(GOAL)))
    assert (miss < 1e-4) is (not use_locks) and obj.chain_ik.chains[0].use_locks
