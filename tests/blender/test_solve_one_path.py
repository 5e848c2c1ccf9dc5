"""The one Solve path of a chain alone (rig.unit.read_unit, solvers.solve_skeleton's chain kernel,
rig.tree_write.unit_pose) with its faster kernels against the same path with the writer's quaternion
kernel switched off (Bone.convert_local_to_pose for every bone), and the reasons it gives where a
faster kernel cannot serve.

Every case solves the same chain both ways in the same state and compares: the
solver's points and rotations to the bit, the written channel values to float32
rounding. The edit cases (edit mode, rotation mode, parents, names, IK settings,
constraints, scale) change the rig between solves, so nothing read by an earlier
solve may be served to a later one.
"""

from __future__ import annotations

import math
from dataclasses import replace

import bpy
import numpy as np
import pytest
from builders import add_empty, bent_rolled_disconnected, random_pose, straight_chain, transform, world_point

MODES = ("QUATERNION", "XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX", "AXIS_ANGLE")
CHAIN = ["upper", "fore", "hand"]


@pytest.fixture
def run(ext):
    from chain_ik.app import solve as run

    return run


def _solve(run, obj, spec, depsgraph):
    """The outcome of a chain alone (a unit of one)."""
    (outcome,) = run.solve_unit(obj, [spec], depsgraph)
    return outcome


def _spec(run, target, tip="hand", length=3, **fields):
    if fields.get("method", "triangulation") == "triangulation":
        fields.setdefault("options", {"fold_angle": 180.0, "smooth_fold": 1.0})  # the panel's defaults
    return run.ChainSpec(tip=tip, chain_length=length, target=target, **fields)


def _both(run, monkeypatch, obj, spec):
    """(outcome, outcome with the writer's quaternion kernel off) of the same solve in the current state."""
    from chain_ik.rig import read

    bpy.context.view_layer.update()
    depsgraph = bpy.context.evaluated_depsgraph_get()
    fast = _solve(run, obj, spec, depsgraph)
    with monkeypatch.context() as m:
        m.setattr(read, "tree_terms", lambda *args: "off in this test")
        slow = _solve(run, obj, spec, depsgraph)
    assert "general writer: off in this test" in slow.reason
    return fast, slow


def _assert_same(run, fast, slow) -> None:
    from chain_ik.rig.read import PoseTerms

    assert isinstance(fast.unit.terms, PoseTerms), f"the quaternion kernel was not taken: {fast.reason}"
    assert "general writer" not in fast.reason
    (fast_chain, fast_solution, _), (slow_chain, slow_solution, _) = fast.solution.branch, slow.solution.branch
    np.testing.assert_array_equal(fast_solution.points, slow_solution.points)
    np.testing.assert_array_equal(fast_solution.rotations, slow_solution.rotations)
    figures = [(o.error, o.cost, o.iterations, o.reached) for o in (fast, slow)]
    assert figures[0] == figures[1]
    assert fast.unit.names == slow.unit.names and fast.unit.root_parents == slow.unit.root_parents
    np.testing.assert_array_equal(fast_chain.points, slow_chain.points)
    np.testing.assert_array_equal(fast_chain.frames, slow_chain.frames)
    assert fast.write.values.keys() == slow.write.values.keys()
    for name, values in slow.write.values.items():
        np.testing.assert_allclose(fast.write.values[name], values, atol=2e-5, err_msg=name)
    assert fast.write.before == slow.write.before
    assert (fast.write.locked, fast.write.constrained) == (slow.write.locked, slow.write.constrained)


def _solve_and_check(run, monkeypatch, obj, spec, rng, names=CHAIN, rounds=3) -> None:
    """Random poses and targets: both routes agree, and the written pose reaches."""
    for _ in range(rounds):
        random_pose(obj, names, rng)
        spec.target.location = rng.uniform(-1.5, 1.5, 3) + np.array([0.0, 0.5, 1.5])
        fast, slow = _both(run, monkeypatch, obj, spec)
        _assert_same(run, fast, slow)
    from chain_ik import rig

    rig.apply(obj, fast.write.values)
    if fast.error < 1e-6 and spec.influence == 1.0 and not fast.write.locked:
        tip = world_point(obj, spec.tip, spec.use_tail)
        assert np.linalg.norm(tip - np.array(spec.target.location)) < 1e-4


@pytest.mark.parametrize(
    "xform", [transform(), transform((1, -2, 0.5), (0.4, -0.3, 1.1), (1.5, 0.5, 2.0)), transform(scale=(-1, 1.2, 1))]
)
@pytest.mark.parametrize("mode", MODES)
def test_every_rotation_mode_matches_the_general_writer(scene, run, monkeypatch, mode, xform):
    obj = bent_rolled_disconnected(matrix_world=xform)
    for name in CHAIN:
        obj.pose.bones[name].rotation_mode = mode
    _solve_and_check(run, monkeypatch, obj, _spec(run, add_empty()), np.random.default_rng(len(mode)))


@pytest.mark.parametrize(
    "case",
    [
        "head",
        "root_bone",
        "influence",
        "locks",
        "locks_4d",
        "hinge",
        "hinge_root",
        "uniform_scale",
        "fold",
        "tolerance",
    ],
)
def test_options_match_the_general_writer(scene, run, monkeypatch, case):
    obj = bent_rolled_disconnected()
    spec = _spec(run, add_empty())
    names = CHAIN
    pbones = obj.pose.bones
    if case == "head":
        spec = replace(spec, use_tail=False)
        names = CHAIN[:2]
        spec = replace(spec, chain_length=2)
    elif case == "root_bone":  # the chain's root bone has no parent
        spec = replace(spec, chain_length=4)
        names = ["root", *CHAIN]
    elif case == "influence":
        spec = replace(spec, influence=0.4)
    elif case == "locks":
        pbones["fore"].rotation_mode = "XYZ"
        pbones["fore"].lock_rotation = (True, False, False)
        pbones["upper"].lock_rotation = (False, True, False)  # quaternion: through Euler XYZ
    elif case == "locks_4d":
        pbones["upper"].rotation_mode = "AXIS_ANGLE"
        for name in ("upper", "fore"):
            pbones[name].lock_rotations_4d = pbones[name].lock_rotation_w = True
            pbones[name].lock_rotation = (False, True, False)
    elif case == "hinge":
        obj.data.bones["fore"].use_inherit_rotation = False
    elif case == "hinge_root":
        obj.data.bones["upper"].use_inherit_rotation = False
    elif case == "uniform_scale":
        pbones["root"].scale = (1.3, 1.3, 1.3)
        pbones["upper"].scale = (0.8, 0.8, 0.8)
        pbones["fore"].location = (0.05, 0.0, -0.02)
    elif case == "fold":
        spec = replace(spec, options={"fold_angle": 120.0, "smooth_fold": 0.0})
    elif case == "tolerance":
        spec = replace(spec, tolerance=0.05)
    _solve_and_check(run, monkeypatch, obj, spec, np.random.default_rng(3), names)


def test_the_operator_takes_the_fast_kernels_and_stores_its_result(scene, run, monkeypatch):
    obj = straight_chain(5)
    target = add_empty(location=(1.0, 0.5, 3.0))
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target = "b4", 5, target
    taken = []
    solve_unit = run.solve_unit
    monkeypatch.setattr(run, "solve_unit", lambda *a, **k: taken.extend(solve_unit(*a, **k)) or taken[-1:])
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert taken[0].reason == "" and taken[0].solution.reason == ""
    result = item.result
    assert (result.method, result.iterations, result.reached, result.reason) == ("triangulation", 1, True, "")
    written = float(np.linalg.norm(world_point(obj, "b4") - np.array(target.location)))
    assert written < 1e-4 and result.cost == pytest.approx(taken[0].cost)
    assert result.error == pytest.approx(written, abs=1e-7)  # measured on the written (float32) pose


def test_where_a_faster_kernel_cannot_serve_the_result_says_why(scene, run):
    obj = straight_chain(3)
    target = add_empty(location=(0.5, 0.6, 1.8))
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target = "b2", 3, target
    obj.pose.bones["b1"].use_ik_limit_x = True  # joint limits: the numpy solver
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert item.result.reason.startswith("general solver: joint limits")
    obj.pose.bones["b1"].use_ik_limit_x = False
    obj.pose.bones["b1"].ik_stretch = 0.5  # IK stretch: the bones are scaled, Bone.convert_local_to_pose writes
    target.location = (0.0, 0.0, 9.0)
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert item.result.reason == "general writer: IK stretch scales the bones"
    obj.pose.bones["b1"].ik_stretch = 0.0
    obj.pose.bones["b1"].scale = (1.0, 1.0, 1.0)  # the stretch the last solve wrote
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert item.result.reason == ""


def _writer_declined(run, monkeypatch, obj, spec, why: str):
    fast, slow = _both(run, monkeypatch, obj, spec)
    assert fast.reason == f"general writer: {why}"
    assert fast.write.values == slow.write.values
    return fast


def test_every_method_and_goal_takes_the_one_path(scene, run, monkeypatch):
    obj = bent_rolled_disconnected()
    target = add_empty(location=(0.5, 0.6, 1.8))
    rng = np.random.default_rng(4)
    pole = add_empty("Pole", (1, 0, 1))
    for fields in ({"method": "fabrik"}, {"method": "ccd"}, {"pole": pole}, {"use_rotation": True}):
        _solve_and_check(run, monkeypatch, obj, _spec(run, target, **fields), rng, rounds=1)


def test_scaled_bones_are_written_through_the_general_writer(scene, run, monkeypatch):
    obj = bent_rolled_disconnected()
    target = add_empty(location=(0.5, 0.6, 1.8))
    pbones = obj.pose.bones
    constraint = pbones["fore"].constraints.new("COPY_SCALE")
    constraint.influence = 0.3
    fast, slow = _both(run, monkeypatch, obj, _spec(run, target))
    _assert_same(run, fast, slow)
    assert fast.write.constrained == ("fore",)
    pbones["fore"].constraints.remove(constraint)
    pbones["upper"].scale = (1.0, 1.4, 1.0)  # the child's Inherit Scale decides: the rigidity check
    obj.data.bones["fore"].inherit_scale = "NONE"
    _writer_declined(run, monkeypatch, obj, _spec(run, target), "bone 'upper' has a non-uniform or negative scale")
    obj.data.bones["fore"].inherit_scale = "FULL"
    with pytest.raises(ValueError, match="bone 'fore' inherits a non-uniform scale"):
        _solve(run, obj, _spec(run, target), bpy.context.evaluated_depsgraph_get())


def test_errors_are_the_read_checks(scene, run):
    obj = bent_rolled_disconnected()
    target = add_empty(location=(0.5, 0.6, 1.8))
    depsgraph = bpy.context.evaluated_depsgraph_get()
    cases = [
        (_spec(run, target, tip="nope"), "has no bone 'nope'"),
        (_spec(run, target, length=9), "longer than the hierarchy"),
        (_spec(run, target, tip="root", use_tail=False), "has no parent"),
    ]
    for spec, message in cases:
        with pytest.raises(ValueError, match=message):
            _solve(run, obj, spec, depsgraph)
    target.location = (math.nan, 0.0, 0.0)
    bpy.context.view_layer.update()
    with pytest.raises(ValueError, match="non-finite"):
        _solve(run, obj, _spec(run, target), bpy.context.evaluated_depsgraph_get())


# ---------------------------------------------------------------- nothing stale after an edit


def _edit(obj, change) -> None:
    bpy.ops.object.mode_set(mode="EDIT")
    change(obj.data.edit_bones)
    bpy.ops.object.mode_set(mode="POSE")


def test_edit_mode_changes_are_seen(scene, run, monkeypatch):
    obj = bent_rolled_disconnected()
    spec = _spec(run, add_empty(location=(0.4, 0.7, 1.9)))
    rng = np.random.default_rng(7)
    _solve_and_check(run, monkeypatch, obj, spec, rng, rounds=1)
    lengths = [(obj.pose.bones[n].tail - obj.pose.bones[n].head).length for n in CHAIN]

    def move(edit_bones):
        edit_bones["fore"].tail = (0.6, 0.7, 2.6)  # longer, turned
        edit_bones["hand"].roll = 1.1

    _edit(obj, move)
    _solve_and_check(run, monkeypatch, obj, spec, rng, rounds=2)
    fast, _ = _both(run, monkeypatch, obj, spec)
    assert fast.solution.branch[0].lengths[1] != pytest.approx(lengths[1], abs=1e-3)


def test_parent_and_name_changes_are_seen(scene, run, monkeypatch):
    obj = bent_rolled_disconnected()
    spec = _spec(run, add_empty(location=(0.4, 0.7, 1.9)))
    rng = np.random.default_rng(8)
    _solve_and_check(run, monkeypatch, obj, spec, rng, rounds=1)

    def reparent(edit_bones):
        edit_bones["hand"].use_connect = False
        edit_bones["hand"].parent = edit_bones["other"]

    _edit(obj, reparent)
    fast, slow = _both(run, monkeypatch, obj, spec)
    _assert_same(run, fast, slow)
    assert fast.unit.names == ("root", "other", "hand")
    obj.pose.bones["other"].name = "renamed"  # pose-mode rename: the walk follows the bones
    fast, slow = _both(run, monkeypatch, obj, spec)
    _assert_same(run, fast, slow)
    assert fast.unit.names == ("root", "renamed", "hand")


def test_rotation_mode_changes_are_seen(scene, run, monkeypatch):
    obj = bent_rolled_disconnected()
    spec = _spec(run, add_empty(location=(0.4, 0.7, 1.9)))
    rng = np.random.default_rng(9)
    for mode in ("QUATERNION", "ZXY", "AXIS_ANGLE", "YXZ"):
        obj.pose.bones["fore"].rotation_mode = mode
        _solve_and_check(run, monkeypatch, obj, spec, rng, rounds=1)
        fast, _ = _both(run, monkeypatch, obj, spec)
        assert len(fast.write.values["fore"]) == (3 if mode not in ("QUATERNION", "AXIS_ANGLE") else 4)


def test_ik_setting_and_lock_changes_are_seen(scene, run, monkeypatch):
    obj = bent_rolled_disconnected()
    spec = _spec(run, add_empty(location=(0.4, 0.7, 1.9)))
    rng = np.random.default_rng(10)
    _solve_and_check(run, monkeypatch, obj, spec, rng, rounds=1)
    fore = obj.pose.bones["fore"]
    fore.ik_min_z, fore.ik_max_z = -1.0, 1.0  # the range a Limit Z uses
    for setting in ("lock_ik_x", "use_ik_limit_z", "ik_stiffness_y"):
        setattr(fore, setting, 0.5 if setting.startswith("ik_") else True)
        fast, slow = _both(run, monkeypatch, obj, spec)  # limits apply: the numpy solver
        _assert_same(run, fast, slow)
        assert fast.reason.startswith("general solver: joint limits")
        spec = replace(spec, use_limits=False)
        _solve_and_check(run, monkeypatch, obj, spec, rng, rounds=1)  # ignored: the float kernel again
        spec = replace(spec, use_limits=True)
        setattr(fore, setting, 0.0 if setting.startswith("ik_") else False)
        _solve_and_check(run, monkeypatch, obj, spec, rng, rounds=1)
    fore.lock_rotation = (False, False, True)
    fast, _ = _both(run, monkeypatch, obj, spec)
    assert fast.write.locked == ("fore",)


def test_scale_and_constraint_changes_are_seen(scene, run, monkeypatch):
    obj = bent_rolled_disconnected()
    spec = _spec(run, add_empty(location=(0.4, 0.7, 1.9)))
    rng = np.random.default_rng(12)
    _solve_and_check(run, monkeypatch, obj, spec, rng, rounds=1)
    obj.pose.bones["root"].scale = (1.0, 1.5, 1.0)
    with pytest.raises(ValueError, match="bone 'upper' inherits a non-uniform scale"):
        _solve(run, obj, spec, bpy.context.evaluated_depsgraph_get())
    obj.pose.bones["root"].scale = (1.5, 1.5, 1.5)
    _solve_and_check(run, monkeypatch, obj, spec, rng, rounds=1)
    obj.pose.bones["hand"].constraints.new("COPY_LOCATION")
    fast, slow = _both(run, monkeypatch, obj, spec)
    _assert_same(run, fast, slow)
    assert fast.write.constrained == ("hand",)
