"""IK stretch inside a group (issue 19 item 1): two chains sharing a root bone, one of them with a
stretchable bone; its target beyond that chain's reach is reached in Solve and Bake, only its
stretchable bone's Y scale is written, and the figures reported are those of the written pose."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from builders import add_empty, make_armature, world_point

TOL = 1e-4
# A's reach from the shared root's head: 1 + 1 + 1 = 3; this target is 4.1 away.
FAR_A = (0.9, 0.3, 4.0)
NEAR_A = (0.9, 0.2, 2.2)
GOAL_B = (-0.8, 0.3, 2.0)  # within B's reach


def _tree(name: str = "Rig"):
    bones = [
        ("root", (0, 0, 0), (0, 0, 1), None, False, 0.0),
        ("a0", (0, 0, 1), (0.5, 0, 1.866), "root", True, 0.0),
        ("a1", (0.5, 0, 1.866), (0.8, 0.2, 2.778), "a0", True, 0.0),
        ("b0", (0, 0, 1), (-0.5, 0, 1.866), "root", True, 0.0),
        ("b1", (-0.5, 0, 1.866), (-0.8, 0.2, 2.778), "b0", True, 0.0),
    ]
    obj = make_armature(bones, name)
    for pb in obj.pose.bones:
        pb.rotation_mode = "QUATERNION"
    obj.pose.bones["a1"].ik_stretch = 1.0
    obj.pose.bones["b1"].ik_stretch = 1.0  # B's Stretch is off: never scaled
    return obj


def _chains(obj, target_a, target_b, method: str):
    items = []
    for tip, target, stretch in (("a1", target_a, True), ("b1", target_b, False)):
        item = obj.chain_ik.chains.add()
        item.name, item.tip, item.chain_length, item.target, item.method = tip, tip, 3, target, method
        item.use_stretch = stretch
        items.append(item)
    return items


def _scales(obj) -> dict[str, tuple]:
    return {pb.name: tuple(pb.scale) for pb in obj.pose.bones}


@pytest.mark.parametrize("method", ["fabrik", "jacobian", "triangulation"])
def test_group_solve_stretches_the_far_chain_only(scene, method):
    from chain_ik.app.spec import groups

    obj = _tree()
    ta, tb = add_empty("A", FAR_A), add_empty("B", GOAL_B)
    items = _chains(obj, ta, tb, method)
    assert [u.members for u in groups.units(obj, list(items))] == [(0, 1)]  # one group
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    bpy.context.view_layer.update()
    error_a = float(np.linalg.norm(world_point(obj, "a1") - np.array(FAR_A)))
    error_b = float(np.linalg.norm(world_point(obj, "b1") - np.array(GOAL_B)))
    assert error_a < TOL and error_b < TOL
    scales = _scales(obj)
    assert scales["a1"][0] == scales["a1"][2] == 1.0 and scales["a1"][1] > 1.2  # along Y only
    assert all(s == (1.0, 1.0, 1.0) for n, s in scales.items() if n != "a1")
    # The panel's figures are the written pose's.
    for item, error in zip(items, (error_a, error_b), strict=True):
        assert item.result.error == pytest.approx(error, abs=1e-6)
        assert item.result.reached and item.result.group
    # Solved again: read with its own stretch divided out, the same pose.
    before = _scales(obj)["a1"][1]
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert _scales(obj)["a1"][1] == pytest.approx(before, rel=1e-6)
    # Back within reach: the stretch resets.
    ta.location = NEAR_A
    bpy.context.view_layer.update()
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    bpy.context.view_layer.update()
    assert np.linalg.norm(world_point(obj, "a1") - np.array(NEAR_A)) < TOL
    assert _scales(obj)["a1"] == pytest.approx((1.0, 1.0, 1.0), abs=1e-7)


def test_group_without_stretch_misses_the_far_target(scene):
    """The same group with Stretch off on A: nothing scales, the target is missed (as before)."""
    obj = _tree()
    items = _chains(obj, add_empty("A", FAR_A), add_empty("B", GOAL_B), "fabrik")
    items[0].use_stretch = False
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert all(s == (1.0, 1.0, 1.0) for s in _scales(obj).values())
    assert np.linalg.norm(world_point(obj, "a1") - np.array(FAR_A)) > 0.5


@pytest.mark.parametrize("method", ["fabrik", "triangulation"])
def test_group_bake_keys_scale_on_the_stretching_chain_only(scene, method):
    from chain_ik.app import bake, spec
    from test_bake import fcurves

    obj = _tree()
    ta, tb = add_empty("A", NEAR_A), add_empty("B", GOAL_B)
    for frame, where in ((1, NEAR_A), (6, FAR_A), (11, NEAR_A)):
        ta.location = where
        ta.keyframe_insert("location", frame=frame)
    items = _chains(obj, ta, tb, method)
    bpy.context.view_layer.objects.active = obj
    specs = [spec.spec_from_item(item) for item in items]
    result = bake.bake(bpy.context, obj, specs, bake.BakeOptions(frame_start=1, frame_end=11))
    scale_curves = sorted((fc.data_path, fc.array_index) for fc in fcurves(obj) if fc.data_path.endswith(".scale"))
    assert scale_curves == [('pose.bones["a1"].scale', 1)]
    scene = bpy.context.scene
    worst = {"a1": 0.0, "b1": 0.0}
    stretched = 0
    for frame in range(1, 12):
        scene.frame_set(frame)
        for tip, target in (("a1", ta), ("b1", tb)):
            error = float(np.linalg.norm(world_point(obj, tip) - np.array(target.matrix_world.translation)))
            assert error < TOL, (tip, frame, error)
            worst[tip] = max(worst[tip], error)
        stretched += obj.pose.bones["a1"].scale[1] > 1.0 + 1e-6
    assert 0 < stretched < 11  # stretched around the far frame only
    # The report's figures are measured on the keyed pose as it plays.
    for chain in result.chains:
        assert chain.worst_error == pytest.approx(worst[chain.tip], abs=1e-6)
    assert all(tuple(obj.pose.bones[n].scale) == (1.0, 1.0, 1.0) for n in ("root", "a0", "b0", "b1"))


@pytest.mark.parametrize("inherit", ["ALIGNED", "NONE", "FULL"])
def test_group_stretch_below_a_stretched_bone(scene, inherit):
    """a0 stretches and a1 hangs below it: Aligned carries a0's stretch along a1 (the plan's
    model), None leaves it out; Full would shear a1 as it turns, so it is refused, naming it."""
    obj = _tree()
    obj.pose.bones["a0"].ik_stretch, obj.pose.bones["a1"].ik_stretch = 1.0, 0.0
    obj.data.bones["a1"].inherit_scale = inherit
    items = _chains(obj, add_empty("A", FAR_A), add_empty("B", GOAL_B), "fabrik")
    bpy.context.view_layer.objects.active = obj
    if inherit == "FULL":
        with pytest.raises(RuntimeError, match="bone 'a1' inherits the stretch of 'a0'"):
            bpy.ops.chain_ik.solve()
        assert all(s == (1.0, 1.0, 1.0) for s in _scales(obj).values())  # nothing written
        return
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    bpy.context.view_layer.update()
    error = float(np.linalg.norm(world_point(obj, "a1") - np.array(FAR_A)))
    assert error < TOL and items[0].result.error == pytest.approx(error, abs=1e-6)
    assert obj.pose.bones["a0"].scale[1] > 1.2
    assert all(s == (1.0, 1.0, 1.0) for n, s in _scales(obj).items() if n != "a0")


def test_live_group_stretches_and_comes_back(scene, ext):
    """A live chain in a group: its whole group solves on each target move, stretching the far
    chain's bone and back; its own scale write is not a change of input (nothing solved again)."""
    from chain_ik.app import live

    obj = _tree()
    ta, tb = add_empty("A", NEAR_A), add_empty("B", GOAL_B)
    items = _chains(obj, ta, tb, "fabrik")
    items[0].live = True
    for location in (FAR_A, NEAR_A, FAR_A):
        ta.location = location
        bpy.context.view_layer.update()  # the handler solves
        bpy.context.view_layer.update()  # the written pose evaluates
        assert np.linalg.norm(world_point(obj, "a1") - np.array(location)) < TOL
        assert np.linalg.norm(world_point(obj, "b1") - np.array(GOAL_B)) < TOL
        assert (obj.pose.bones["a1"].scale[1] > 1.2) == (location == FAR_A)
    assert live.solve_live(bpy.context.scene, bpy.context.evaluated_depsgraph_get()) == 0
    items[0].live = False
