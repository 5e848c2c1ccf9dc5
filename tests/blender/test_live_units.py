"""Live with several units on one armature (app.live): units that do not read one another's bones
are read on the same evaluated pose and the pose is evaluated once after they all wrote; a unit
that reads a bone another unit wrote (hanging below it, or its target riding on it) is read after
that write is evaluated. Either way the pose is bit for bit the one of solving the chains one by
one, evaluating after each (app.solve.solve_and_write), and every figure is measured on it."""

from __future__ import annotations

import bpy
import numpy as np
import pytest
from builders import channel_state, metarig, random_pose, restore_channels, world_point
from mathutils import Matrix

FIVE = [("forearm.L", 2), ("forearm.R", 2), ("spine.006", 2), ("shin.L", 2), ("shin.R", 2)]
METHODS = ("triangulation", "fabrik", "ccd", "jacobian")


def _metarig():
    return metarig(location=(0.4, -0.2, 0.1), turn=0.5, scale=1.0)  # `rigify`: conftest's fixture


def _add_chain(obj, tip: str, length: int, method: str, target):
    item = obj.chain_ik.chains.add()
    item.name, item.tip, item.chain_length, item.target, item.method = tip, tip, length, target, method
    item.tolerance = 1e-5
    return item


def _empty(name: str, location) -> bpy.types.Object:
    empty = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(empty)
    empty.location = location
    return empty


def _reachable_goals(obj, chains, rng) -> list:
    """World tips of `chains` ((tip, length)) in a random FK pose of their bones (the pose put back)."""
    from chain_ik import rig

    names = sorted({n for tip, length in chains for n in rig.chain_bone_names(obj, tip, length)})
    saved = channel_state(obj)
    random_pose(obj, names, rng, 0.6)
    bpy.context.view_layer.update()
    goals = [world_point(obj, tip) for tip, _ in chains]
    restore_channels(obj, saved)
    bpy.context.view_layer.update()
    return goals


def _one_by_one(obj) -> tuple[dict, list[float]]:
    """The chains solved in list order, one at a time, the pose evaluated after each: (channels,
    each chain's tip error measured on the final pose)."""
    from chain_ik.app import solve, spec
    from chain_ik.app.solve.result import measured_error

    for item in obj.chain_ik.chains:
        solve.solve_and_write(obj, [spec.spec_from_item(item)], bpy.context.evaluated_depsgraph_get)
        bpy.context.view_layer.update()
    depsgraph = bpy.context.evaluated_depsgraph_get()
    errors = [measured_error(depsgraph, obj, spec.spec_from_item(item)) for item in obj.chain_ik.chains]
    return channel_state(obj), errors


def _live_once(obj) -> tuple[dict, int]:
    """Every chain switched to Live and one update: (channels, the depsgraph evaluations the update
    made: the update itself and each one Live asked for)."""
    evaluations = []

    def count(*_args):
        evaluations.append(1)

    bpy.app.handlers.depsgraph_update_post.append(count)
    try:
        for item in obj.chain_ik.chains:
            item.live = True
        evaluations.clear()
        bpy.context.view_layer.update()
        found = len(evaluations)
    finally:
        bpy.app.handlers.depsgraph_update_post.remove(count)
    return channel_state(obj), found


def _switch_off(obj) -> None:
    for item in obj.chain_ik.chains:
        item.live = False


@pytest.mark.parametrize("method", METHODS)
def test_five_separate_chains_live_as_one_by_one_with_one_evaluation(rigify, method):
    from chain_ik.app import live

    obj = _metarig()
    goals = _reachable_goals(obj, FIVE, np.random.default_rng(7))
    for (tip, length), goal in zip(FIVE, goals, strict=True):
        _add_chain(obj, tip, length, method, _empty(f"T_{tip}", goal))
    bpy.context.view_layer.update()
    start = channel_state(obj)
    expected, errors = _one_by_one(obj)
    restore_channels(obj, start)
    bpy.context.view_layer.update()
    try:
        pose, evaluations = _live_once(obj)
        assert pose == expected  # bit for bit
        assert evaluations == 2  # the update, and one evaluation of what the five units wrote
        for item, error in zip(obj.chain_ik.chains, errors, strict=True):
            assert item.result.error == float(np.float32(error)), item.name  # as stored (float32)
            reach = 2e-3 if method == "ccd" else 2e-5  # CCD crawls on two bones within its sweeps
            assert item.result.error <= reach, (item.name, item.result.error)
        # Nothing moved: the next update solves nothing (no loop through Live's own write).
        assert live.solve_live(bpy.context.scene, bpy.context.evaluated_depsgraph_get()) == 0
    finally:
        _switch_off(obj)


@pytest.mark.parametrize("method", ("fabrik", "jacobian"))
def test_a_unit_below_another_is_read_after_its_write_is_evaluated(rigify, method):
    """The hand chain (forearm.L, hand.L) hangs below the arm chain (shoulder.L, upper_arm.L) and
    is listed first: Live solves the arm, evaluates, then the hand on the arm's new pose."""
    obj = _metarig()
    chains = [("hand.L", 2), ("upper_arm.L", 2)]
    goals = _reachable_goals(obj, chains, np.random.default_rng(3))
    for (tip, length), goal in zip(chains, goals, strict=True):
        _add_chain(obj, tip, length, method, _empty(f"T_{tip}", goal))
    bpy.context.view_layer.update()
    start = channel_state(obj)
    chain_items = obj.chain_ik.chains
    chain_items.move(1, 0)  # one by one in the order Live solves them: the arm first
    expected, errors = _one_by_one(obj)
    chain_items.move(1, 0)
    restore_channels(obj, start)
    bpy.context.view_layer.update()
    try:
        pose, evaluations = _live_once(obj)
        assert pose == expected
        assert evaluations == 3  # the update, the arm's write before the hand is read, the hand's
        for item, error in zip(chain_items, reversed(errors), strict=True):
            assert item.result.error == float(np.float32(error)), item.name  # as stored (float32)
        assert chain_items[1].result.error <= 2e-5  # the arm reached (the hand: as one by one)
    finally:
        _switch_off(obj)


def test_a_target_riding_on_a_bone_another_unit_moves(rigify):
    """The right arm's target rides on hand.L, which the left arm's solve moves: Live reads the right
    arm's target after the left arm's write is evaluated (as solving one by one does)."""
    from chain_ik.app import solve, spec

    obj = _metarig()
    goals = _reachable_goals(obj, [("forearm.L", 2), ("forearm.R", 2)], np.random.default_rng(5))
    left = _add_chain(obj, "forearm.L", 2, "jacobian", _empty("T_left", goals[0]))
    bpy.context.view_layer.update()
    start = channel_state(obj)
    # Put the rider where the right arm reaches it once the left arm has solved (its solve is the same
    # from the same start), then take the left arm back: the rider moves away with hand.L.
    solve.solve_and_write(obj, [spec.spec_from_item(left)], bpy.context.evaluated_depsgraph_get)
    rider = _empty("T_right", (0.0, 0.0, 0.0))
    rider.parent, rider.parent_type, rider.parent_bone = obj, "BONE", "hand.L"
    bpy.context.view_layer.update()
    rider.matrix_world = Matrix.Translation(goals[1])
    bpy.context.view_layer.update()
    restore_channels(obj, start)
    bpy.context.view_layer.update()
    away = np.linalg.norm(np.array(rider.matrix_world.translation) - goals[1])
    assert away > 0.05, away  # the left arm's solve carries the right arm's target
    right = _add_chain(obj, "forearm.R", 2, "jacobian", rider)
    expected, errors = _one_by_one(obj)
    restore_channels(obj, start)
    bpy.context.view_layer.update()
    try:
        pose, evaluations = _live_once(obj)
        assert pose == expected
        assert evaluations == 3  # the update, the left arm's write before the right arm is read, the right's
        for item, error in zip(obj.chain_ik.chains, errors, strict=True):
            assert item.result.error == float(np.float32(error)), item.name  # as stored (float32)
        assert left.result.error <= 2e-5 and right.result.error <= 2e-5, (left.result.error, right.result.error)
    finally:
        _switch_off(obj)


def test_a_unit_whose_bone_has_a_constraint_on_another_units_bone(rigify):
    """The right shoulder copies the left upper arm's rotation (a constraint, not a parent): the
    right arm's chain (shoulder.R, upper_arm.R) rides on the left arm's write and is read after it
    is evaluated, as solving one by one does."""
    obj = _metarig()
    chains = [("forearm.L", 2), ("upper_arm.R", 2)]
    goals = _reachable_goals(obj, chains, np.random.default_rng(11))
    for (tip, length), goal in zip(chains, goals, strict=True):
        _add_chain(obj, tip, length, "jacobian", _empty(f"T_{tip}", goal))
    con = obj.pose.bones["shoulder.R"].constraints.new("COPY_ROTATION")
    con.target, con.subtarget, con.influence = obj, "upper_arm.L", 0.5
    bpy.context.view_layer.update()
    start = channel_state(obj)
    expected, errors = _one_by_one(obj)
    restore_channels(obj, start)
    bpy.context.view_layer.update()
    try:
        pose, evaluations = _live_once(obj)
        assert pose == expected
        assert evaluations == 3
        for item, error in zip(obj.chain_ik.chains, errors, strict=True):
            assert item.result.error == float(np.float32(error)), item.name  # as stored (float32)
    finally:
        _switch_off(obj)


def test_a_target_driven_by_a_bone_another_unit_moves(rigify):
    """The right arm's target is placed by drivers reading hand.L's world location (no parent, no
    constraint), which the left arm's solve moves: Live reads the right arm's target after the left
    arm's write is evaluated (as solving one by one does), not the target as it was before it."""
    obj = _metarig()
    goals = _reachable_goals(obj, [("forearm.L", 2), ("forearm.R", 2)], np.random.default_rng(5))
    left = _add_chain(obj, "forearm.L", 2, "jacobian", _empty("T_left", goals[0]))
    bpy.context.view_layer.update()
    start = channel_state(obj)
    rider = _empty("T_right", (0.0, 0.0, 0.0))
    for axis in range(3):
        fcurve = rider.driver_add("location", axis)
        var = fcurve.driver.variables.new()
        var.type = "TRANSFORMS"
        var.targets[0].id = obj
        var.targets[0].bone_target = "hand.L"
        var.targets[0].transform_type = "LOC_" + "XYZ"[axis]
        var.targets[0].transform_space = "WORLD_SPACE"
        # hand.L's head at rest, offset to the right arm's reachable goal
        fcurve.driver.expression = f"{var.name} + {float(goals[1][axis] - world_point(obj, 'forearm.L')[axis])!r}"
    bpy.context.view_layer.update()
    before = np.array(rider.matrix_world.translation)
    right = _add_chain(obj, "forearm.R", 2, "jacobian", rider)
    expected, errors = _one_by_one(obj)
    assert np.linalg.norm(np.array(rider.matrix_world.translation) - before) > 0.05  # the driver carries it
    restore_channels(obj, start)
    bpy.context.view_layer.update()
    try:
        pose, _ = _live_once(obj)
        assert pose == expected
        for item, error in zip(obj.chain_ik.chains, errors, strict=True):
            assert item.result.error == float(np.float32(error)), item.name  # as stored (float32)
        assert left.result.error <= 2e-5, left.result.error
        assert right.result.error == pytest.approx(errors[1], abs=1e-6)
    finally:
        _switch_off(obj)


@pytest.mark.parametrize("method", METHODS)
def test_live_updates_leave_no_cyclic_garbage(rigify, method):
    """Live's every update reads, solves and writes five chains: objects it leaves in reference
    cycles would wait for Python's cyclic collector, whose full collections then stall an update
    (tens of ms with Blender's modules loaded). Counted against the same updates with Live off."""
    import gc

    obj = _metarig()
    rng = np.random.default_rng(13)
    paths = [_reachable_goals(obj, FIVE, rng) for _ in range(6)]
    empties = [_empty(f"T_{tip}", goal) for (tip, _), goal in zip(FIVE, paths[0], strict=True)]
    for (tip, length), empty in zip(FIVE, empties, strict=True):
        _add_chain(obj, tip, length, method, empty)

    def garbage(live: bool) -> int:
        for item in obj.chain_ik.chains:
            item.live = live
        bpy.context.view_layer.update()
        gc.collect()
        gc.disable()
        try:
            for goals in paths:
                for empty, goal in zip(empties, goals, strict=True):
                    empty.location = goal
                bpy.context.view_layer.update()
            return gc.collect()
        finally:
            gc.enable()

    try:
        without = garbage(False)
        with_live = garbage(True)
        assert all(item.has_result for item in obj.chain_ik.chains)  # Live solved them
        assert with_live <= without, (with_live, without)
    finally:
        _switch_off(obj)


def test_a_driven_target_is_carried_by_the_bone_its_drivers_read(rigify):
    """One check for Live and the bake (app.checks.carried_by): a target placed by drivers reading a
    bone is carried by that bone and the bones above it, so a bake of a chain reaching for it is
    refused while a Live chain poses those bones (app.live.live_above), as with a parent."""
    from chain_ik.app import checks, spec
    from chain_ik.app.live import live_above

    obj = _metarig()
    arm = _add_chain(obj, "forearm.L", 2, "jacobian", _empty("T_left", (0.5, -0.3, 1.2)))
    rider = _empty("T_right", (0.0, 0.0, 0.0))
    fcurve = rider.driver_add("location", 0)
    var = fcurve.driver.variables.new()
    var.type = "SINGLE_PROP"
    var.targets[0].id = obj
    var.targets[0].data_path = 'pose.bones["hand.L"].matrix[3][0]'
    other = rider.driver_add("location", 1)  # a transform-channel variable, by bone
    var = other.driver.variables.new()
    var.type = "TRANSFORMS"
    var.targets[0].id = obj
    var.targets[0].bone_target = "hand.L"
    bpy.context.view_layer.update()
    carried = {(ob.name, bone) for ob, bone in checks.carried_by([(rider, "", True)])}
    assert {(obj.name, "hand.L"), (obj.name, "forearm.L"), (obj.name, "upper_arm.L")} <= carried
    assert (obj.name, "hand.R") not in carried
    right = _add_chain(obj, "forearm.R", 2, "jacobian", rider)
    arm.live = True
    try:
        found = live_above.live_chains_above(obj, ["forearm.R", "upper_arm.R"], [spec.spec_from_item(right)])
        assert [(item.name, posed) for _, item, posed in found] == [("forearm.L", ["upper_arm.L", "forearm.L"])]
    finally:
        _switch_off(obj)
