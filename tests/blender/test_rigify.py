"""Rigify's human metarig: arm and leg chains reach random reachable targets."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from builders import add_empty, bone_lengths, channel_state, metarig, reachable_target, world_point

TOL = 1e-4
CHAINS = {
    # tip, length: the bones that rotate (root first)
    ("hand.L", 2): ["forearm.L", "hand.L"],
    ("hand.L", 3): ["upper_arm.L", "forearm.L", "hand.L"],
    # shoulder.L -> upper_arm.L is disconnected: the gap is part of the shoulder's link.
    ("hand.L", 4): ["shoulder.L", "upper_arm.L", "forearm.L", "hand.L"],
    ("shin.L", 2): ["thigh.L", "shin.L"],
    ("foot.L", 3): ["thigh.L", "shin.L", "foot.L"],
}


@pytest.mark.parametrize("method", ["triangulation", "fabrik", "jacobian"])
@pytest.mark.parametrize(("tip", "length"), list(CHAINS))
def test_metarig_chain_reaches(scene, rigify, tip, length, method):
    obj = metarig()
    names = CHAINS[(tip, length)]
    assert not obj.data.bones["upper_arm.L"].use_connect  # the case this covers
    target = add_empty()
    bpy.context.view_layer.objects.active = obj
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target, item.method = tip, length, target, method
    item.tolerance, item.max_iterations = 1e-6, 2000
    rng = np.random.default_rng(length * 100 + len(method))
    for _ in range(2):
        goal = reachable_target(obj, tip, names, rng)
        target.location = goal
        before, lengths = channel_state(obj), bone_lengths(obj)
        assert bpy.ops.chain_ik.solve() == {"FINISHED"}
        assert np.linalg.norm(world_point(obj, tip) - goal) < TOL
        after = channel_state(obj)
        assert {n for n in after if after[n] != before[n]} <= set(names)
        for name, length_before in bone_lengths(obj).items():
            assert length_before == pytest.approx(lengths[name], rel=1e-5)
