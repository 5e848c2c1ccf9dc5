"""A lone chain is a group of one (issue 19 item 1): Solve reads every unit with rig.unit, solves it
with solvers.solve_skeleton and writes it with rig.tree_write.unit_pose. A chain alone keeps the
chain path's numbers to the bit (joint limits and IK stretch included), and what a chain alone
supports a group now does too (a bone with Inherit Rotation off inside it)."""

from __future__ import annotations

import json
from pathlib import Path

import bpy
import numpy as np
import pytest
from builders import add_empty, bent_rolled_disconnected, make_armature, random_pose, world_point

CHAIN = ["upper", "fore", "hand"]
METHODS = ("triangulation", "fabrik", "ccd", "jacobian")


@pytest.fixture
def run(ext):
    from chain_ik.app import solve as run

    return run


# What the former chain-only path (rig.read_chain or rig.stretch.read_stretched, solvers.solve,
# rig.compute_pose; deleted with the bake's last use of it) wrote for each case below, recorded
# with it on bpy 5.0.1 and 4.2.23 (the same bits on both): per test id, per solve in order.
SAVED = json.loads((Path(__file__).with_name("unit_solve_chain_path.json")).read_text())


def _chain_path(request, i: int):
    """(written values, Y scales, solver error) the former chain path gave for solve `i` of this test."""
    saved = SAVED[request.node.name][i]
    return {k: tuple(v) for k, v in saved["values"].items()}, saved["scales"], saved["error"]


@pytest.mark.parametrize("method", METHODS)
def test_a_lone_chain_with_joint_limits_writes_what_the_chain_path_wrote(scene, run, method, request):
    """rig.tree's rests are now normalised in float64 as rig.read's (they differed by float32
    rounding: poses up to 2e-9 apart): the unit path writes the chain path's channels."""
    obj = bent_rolled_disconnected()
    fore = obj.pose.bones["fore"]
    fore.use_ik_limit_x, fore.ik_min_x, fore.ik_max_x = True, -0.5, 1.5
    obj.pose.bones["upper"].ik_stretch = 0.0
    target = add_empty(location=(0.4, 0.7, 1.9))
    rng = np.random.default_rng(11)
    for i in range(3):
        random_pose(obj, CHAIN, rng, max_angle=0.3)
        target.location = rng.uniform(-1.0, 1.0, 3) + np.array([0.0, 0.5, 1.5])
        bpy.context.view_layer.update()
        depsgraph = bpy.context.evaluated_depsgraph_get()
        spec = run.ChainSpec(tip="hand", chain_length=3, target=target, method=method, use_limits=True)
        (outcome,) = run.solve_unit(obj, [spec], depsgraph)
        values, _, error = _chain_path(request, i)
        assert outcome.reason.startswith("general solver: joint limits")
        assert outcome.write.values == values
        assert outcome.solution.error.tolist() == [error]


@pytest.mark.parametrize("softness", [0.0, 0.2])
@pytest.mark.parametrize("method", METHODS)
def test_a_lone_stretched_chain_writes_what_the_chain_path_wrote(scene, run, method, softness, request):
    """IK stretch of one effector is planned as a chain's (float64, straight to a far target):
    rotations and Y scales as the chain path's, the reason as before."""
    obj = bent_rolled_disconnected()
    obj.pose.bones["upper"].ik_stretch = 0.5
    obj.pose.bones["fore"].ik_stretch = 1.0
    obj.data.bones["fore"].inherit_scale = "ALIGNED"
    obj.data.bones["hand"].inherit_scale = "ALIGNED"
    target = add_empty()
    for i, location in enumerate(((0.4, 0.7, 1.9), (1.5, 2.5, 3.5), (0.0, -2.0, 4.0))):
        target.location = location
        bpy.context.view_layer.update()
        depsgraph = bpy.context.evaluated_depsgraph_get()
        spec = run.ChainSpec(tip="hand", chain_length=3, target=target, method=method, softness=softness)
        (outcome,) = run.solve_unit(obj, [spec], depsgraph)
        values, scales, error = _chain_path(request, i)
        assert outcome.reason.endswith("general writer: IK stretch scales the bones")
        assert outcome.write.values == values and outcome.write.scales == scales
        assert outcome.solution.error.tolist() == [error]
        run.apply_write(obj, outcome.write)
        bpy.context.view_layer.update()
        written = float(np.linalg.norm(world_point(obj, "hand") - np.array(location)))
        assert written == pytest.approx(outcome.error, abs=1e-5)  # the stretch is followed


def _hinged_tree():
    """A spine bone with two arms; the left arm's middle bone does not inherit rotation."""
    bones = [
        ("spine", (0, 0, 0), (0, 0, 1), None, False, 0.0),
        ("l0", (0, 0, 1), (0.6, 0, 1.6), "spine", True, 0.0),
        ("l1", (0.6, 0, 1.6), (1.2, 0.1, 1.9), "l0", True, 20.0),
        ("l2", (1.2, 0.1, 1.9), (1.6, 0.2, 2.0), "l1", True, 0.0),
        ("r0", (0, 0, 1), (-0.6, 0, 1.6), "spine", True, 0.0),
        ("r1", (-0.6, 0, 1.6), (-1.2, 0.1, 1.9), "r0", True, 0.0),
    ]
    obj = make_armature(bones)
    obj.data.bones["l1"].use_inherit_rotation = False
    return obj


@pytest.mark.parametrize("method", METHODS)
def test_a_group_takes_a_bone_that_does_not_inherit_rotation(scene, run, method):
    """Refused in a group before ("cannot be inside a tree"); a chain alone solved it. Now the tree
    kernel solves the group and the writer puts that bone's solved world frame back through its
    own rest: both tips reach on the written pose."""
    obj = _hinged_tree()
    goals = {"l2": add_empty("L", (1.2, 0.9, 2.2)), "r1": add_empty("R", (-0.9, 0.6, 2.1))}
    for tip, length in (("l2", 4), ("r1", 3)):
        item = obj.chain_ik.chains.add()
        item.name, item.tip, item.chain_length, item.target, item.method = tip, tip, length, goals[tip], method
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    bpy.context.view_layer.update()
    for tip, goal in goals.items():
        item = next(i for i in obj.chain_ik.chains if i.tip == tip)
        assert item.result.group  # solved as one group
        error = float(np.linalg.norm(world_point(obj, tip) - np.array(goal.location)))
        assert error == pytest.approx(item.result.error, abs=1e-6)
        if item.result.reached:
            assert error < 1e-3
    assert any(i.result.reached for i in obj.chain_ik.chains)


def test_a_group_refuses_limits_on_a_bone_that_does_not_inherit_rotation(scene, run):
    obj = _hinged_tree()
    obj.pose.bones["l1"].use_ik_limit_x = True
    goals = (add_empty("L", (1.2, 0.9, 2.2)), add_empty("R", (-0.9, 0.6, 2.1)))
    specs = [
        run.ChainSpec(tip="l2", chain_length=4, target=goals[0], use_limits=True),
        run.ChainSpec(tip="r1", chain_length=3, target=goals[1], use_limits=True),
    ]
    with pytest.raises(ValueError, match="bone 'l1' has IK limits but does not inherit"):
        run.solve_unit(obj, specs, bpy.context.evaluated_depsgraph_get())
