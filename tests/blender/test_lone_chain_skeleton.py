"""A lone chain read as a one-effector skeleton (rig.tree.read_tree_pose) and solved by
solvers.solve_skeleton with the pose as read gives the chain kernel's solve (rig.read_chain,
solvers.solve) to the bit: the groundwork for reading, solving and writing a lone chain as a group
of one (issue 19 item 1). Joint limits differ by float32 rounding of the rests (see the test)."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from builders import bent_rolled_disconnected, random_pose, transform

CHAIN = ["upper", "fore", "hand"]
METHODS = ("triangulation", "fabrik", "ccd", "jacobian")


@pytest.fixture
def parts(ext):
    from chain_ik import rig, solvers
    from chain_ik.rig import tree
    from chain_ik.solvers.skeleton_solve import branch_locals

    return rig, solvers, tree, branch_locals


def _both(parts, obj, tip, length, use_tail, goals, method, use_limits=False):
    """(chain solve, skeleton solve, the skeleton's local rotations of that chain solve) on the current pose."""
    rig, solvers, tree, branch_locals = parts
    bpy.context.view_layer.update()
    obj_eval = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    rig_chain = rig.read_chain(obj_eval, tip, length, use_tail, use_limits)
    skeleton, local, names, pose = tree.read_tree_pose(obj, obj_eval, [(tip, length, use_tail)])
    assert names == rig_chain.names
    effector = solvers.Effector(len(names) - 1, **goals)
    chain_goals = {"pole": effector.pole, "pole_angle": effector.pole_angle}
    if effector.orientation is not None:  # as the Effector holds it (normalised)
        chain_goals.update(target_rotation=effector.orientation, rotation_weight=effector.rotation_weight)
    want = solvers.solve(rig_chain.chain, effector.position, method=method, **chain_goals)
    got = solvers.solve_skeleton(skeleton, local, [effector], method=method, pose=pose)
    bones = list(range(len(names)))
    return want, got, branch_locals(skeleton, local, bones, want.frames(rig_chain.chain))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("mode", ["QUATERNION", "XYZ", "AXIS_ANGLE"])
@pytest.mark.parametrize("case", ["plain", "moved", "head", "root_bone", "pole", "tip_rotation"])
def test_a_lone_chain_as_a_skeleton_solves_to_the_bit(scene, parts, method, mode, case):
    xform = transform((1, -2, 0.5), (0.4, -0.3, 1.1), (1.5, 1.5, 1.5)) if case == "moved" else None
    obj = bent_rolled_disconnected(matrix_world=xform)
    for name in CHAIN:
        obj.pose.bones[name].rotation_mode = mode
    tip, length, use_tail, names = "hand", 3, True, CHAIN
    if case == "head":
        length, use_tail, names = 2, False, CHAIN[:2]
    elif case == "root_bone":
        length, names = 4, ["root", *CHAIN]
    rng = np.random.default_rng(len(mode) + len(case))
    for _ in range(3):
        random_pose(obj, names, rng)
        goals = {"position": rng.uniform(-1.5, 1.5, 3) + np.array([0.0, 0.5, 1.5])}
        if case == "pole":
            goals.update(pole=rng.uniform(-3.0, 3.0, 3), pole_angle=0.3)
        elif case == "tip_rotation":
            goals.update(orientation=rng.normal(size=4), rotation_weight=0.5)
        want, got, want_local = _both(parts, obj, tip, length, use_tail, goals, method)
        np.testing.assert_array_equal(got.local, want_local)
        assert got.error.tolist() == [want.error]
        assert (got.reached, got.iterations, got.method, got.reason) == (
            want.reached,
            want.iterations,
            want.method,
            want.reason,
        )


@pytest.mark.parametrize("method", METHODS)
def test_with_joint_limits_the_rests_differ_by_float32_rounding(scene, parts, method):
    """rig.read's joint rests are Bone.matrix's quaternion as it comes; rig.tree's are normalised
    in mathutils (float32) first. The solve then differs at float32 rounding, not more."""
    obj = bent_rolled_disconnected()
    obj.pose.bones["fore"].use_ik_limit_x = True
    obj.pose.bones["fore"].ik_min_x, obj.pose.bones["fore"].ik_max_x = -0.5, 1.5
    rng = np.random.default_rng(7)
    for _ in range(3):
        random_pose(obj, CHAIN, rng, max_angle=0.3)
        goals = {"position": rng.uniform(-1.0, 1.0, 3) + np.array([0.0, 0.5, 1.5])}
        want, got, want_local = _both(parts, obj, "hand", 3, True, goals, method, use_limits=True)
        np.testing.assert_allclose(np.abs(np.sum(got.local * want_local, axis=-1)), 1.0, atol=1e-6)
        assert got.error[0] == pytest.approx(want.error, abs=1e-5)
        assert got.reason == want.reason
