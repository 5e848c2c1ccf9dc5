"""IK stretch on a skeleton (solvers.skeleton_stretch): every branch can reach its target, only
stretchable bones change their own factor, and within reach nothing changes."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from tree_shapes import y_tree

import solvers
from solvers.skeleton_stretch import SLACK, stretch_skeleton


def _branch_reach(skeleton, bone: int) -> float:
    """The branch's reach from its root's head: the links to each next head, then the end point."""
    branch = skeleton.branch(bone)
    links = [np.linalg.norm(skeleton.offsets[c]) for c in branch[1:]]
    return float(sum(links) + skeleton.lengths[branch[-1]])


weights_st = st.lists(st.sampled_from([0.0, 0.3, 1.0]), min_size=8, max_size=8)


@settings(max_examples=60, deadline=None)
@given(
    weights=weights_st,
    inherit=st.lists(st.booleans(), min_size=8, max_size=8),
    far=st.tuples(st.floats(0.5, 3.0), st.floats(0.5, 3.0)),
)
def test_every_branch_reaches_and_only_stretchable_bones_scale(weights, inherit, far):
    skeleton, local, bones = y_tree()
    _, heads, ends = skeleton.forward(local)
    root = heads[0]
    goals = []
    for bone, k in zip(bones, far, strict=True):
        direction = ends[bone] - root
        goals.append(root + direction / np.linalg.norm(direction) * (_branch_reach(skeleton, bone) + k))
    effectors = [solvers.Effector(b, g) for b, g in zip(bones, goals, strict=True)]
    out = stretch_skeleton(skeleton, local, effectors, weights, inherit)
    for i, w in enumerate(weights):
        assert out.own[i] >= 1.0
        if w == 0.0:
            assert out.own[i] == 1.0
    for bone, goal in zip(bones, goals, strict=True):
        branch = skeleton.branch(bone)
        distance = float(np.linalg.norm(goal - root))
        if any(weights[i] > 0.0 for i in branch):
            assert _branch_reach(out.skeleton, bone) >= distance * (1.0 + SLACK) * (1.0 - 1e-12)
        else:
            assert _branch_reach(out.skeleton, bone) == _branch_reach(skeleton, bone)


def test_within_reach_nothing_stretches():
    skeleton, local, bones = y_tree()
    _, _, ends = skeleton.forward(local)
    effectors = [solvers.Effector(b, ends[b] * 0.9) for b in bones]
    out = stretch_skeleton(skeleton, local, effectors, [1.0] * 8, [True] * 8)
    assert out.skeleton is skeleton and out.own == (1.0,) * 8 and out.world == (1.0,) * 8


def test_a_pin_stretches_nothing():
    skeleton, local, bones = y_tree()
    effectors = [solvers.Effector(bones[0], pin=True), solvers.Effector(bones[1], (9.0, 0.0, 9.0))]
    out = stretch_skeleton(skeleton, local, effectors, [1.0] * 8, [False] * 8)
    stretched = {i for i, f in enumerate(out.own) if f > 1.0}
    assert stretched and stretched <= set(skeleton.branch(bones[1]))
