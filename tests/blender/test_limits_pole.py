"""Issue 5 in Blender: a Rigify metarig leg whose knee is limited in the bone's own IK
settings, a pole target and the tip orientation, against Blender's own IK constraint."""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest
from builders import add_empty, metarig, world_point
from mathutils import Quaternion, Vector

METHODS = ["triangulation", "fabrik", "ccd", "jacobian"]
LEG = ("thigh.L", "shin.L")
KNEE_MAX = 150.0  # degrees; the metarig's natural bend is a positive rotation of shin.L about its X axis
TOL = 1e-4  # world distance


@pytest.fixture
def leg(scene, rigify):
    """The metarig (moved, turned, scaled), the knee a hinge in 0..150° in its own IK settings, a chain item."""
    obj = metarig()
    for name in LEG:
        obj.pose.bones[name].rotation_mode = "QUATERNION"
    shin = obj.pose.bones["shin.L"]
    shin.lock_ik_y = shin.lock_ik_z = True
    shin.use_ik_limit_x = True
    shin.ik_min_x, shin.ik_max_x = 0.0, math.radians(KNEE_MAX)
    target = add_empty("Target")
    bpy.context.view_layer.objects.active = obj
    item = obj.chain_ik.chains.add()
    item.tip, item.chain_length, item.target = "shin.L", 2, target
    item.tolerance, item.max_iterations = TOL / 10, 2000
    return obj, item


def _set_pose(obj, thigh: Quaternion, knee_degrees: float) -> None:
    obj.pose.bones["thigh.L"].rotation_quaternion = thigh
    obj.pose.bones["shin.L"].rotation_quaternion = Quaternion((1, 0, 0), math.radians(knee_degrees))
    bpy.context.view_layer.update()


def _rest(obj) -> None:
    _set_pose(obj, Quaternion(), 0.0)


def _random_thigh(rng) -> Quaternion:
    axis = Vector(rng.normal(size=3)).normalized()
    return Quaternion(axis, rng.uniform(0.0, 0.7))


def _knee_side(obj) -> tuple[np.ndarray, np.ndarray]:
    """World knee, hip and ankle -> (unit offset of the knee from the hip-ankle line, knee)."""
    hip, knee, ankle = world_point(obj, "thigh.L", False), world_point(obj, "shin.L", False), world_point(obj, "shin.L")
    axis = (ankle - hip) / np.linalg.norm(ankle - hip)
    off = (knee - hip) - np.dot(knee - hip, axis) * axis
    return off / np.linalg.norm(off), knee


def _pole_for(obj, distance: float = 0.5) -> np.ndarray:
    """A pole point in front of the current knee, in its bend plane."""
    side, knee = _knee_side(obj)
    return knee + distance * side


def _side_of(obj, point) -> float:
    """Cosine between the knee's offset and the point's offset from the hip-ankle line."""
    side, _ = _knee_side(obj)
    hip, ankle = world_point(obj, "thigh.L", False), world_point(obj, "shin.L")
    axis = (ankle - hip) / np.linalg.norm(ankle - hip)
    off = (np.asarray(point) - hip) - np.dot(np.asarray(point) - hip, axis) * axis
    return float(np.dot(side, off / np.linalg.norm(off)))


def _knee_local(obj) -> Quaternion:
    """shin.L's local rotation (no constraints on it: the basis is the local rotation)."""
    return obj.pose.bones["shin.L"].matrix_basis.to_quaternion()


def _assert_hinge(q: Quaternion, max_degrees: float = KNEE_MAX) -> None:
    q = q if q.w >= 0 else -q
    assert abs(q.y) < 1e-5 and abs(q.z) < 1e-5, f"knee twists or swings sideways: {q}"
    angle = math.degrees(2.0 * math.atan2(q.x, q.w))
    assert -1e-3 <= angle <= max_degrees + 1e-3, f"knee bent {angle:.3f}° outside 0..{max_degrees}°"


# Triangulation and FABRIK twist the thigh so the hinge knee's plane holds the target
# (solvers.twist); CCD and the Jacobian turn about any axis. All four reach every such target.
@pytest.mark.parametrize("method", METHODS)
def test_fk_targets_reached_within_the_knee_limit_and_toward_the_pole(leg, method):
    obj, item = leg
    item.method = method
    pole = add_empty("Pole")
    item.pole_target, item.pole_angle = pole, math.radians(-90.0)
    bpy.context.view_layer.objects.active = obj
    rng = np.random.default_rng(5)
    for _ in range(4):
        _set_pose(obj, _random_thigh(rng), rng.uniform(15.0, 140.0))
        goal, pole.location = world_point(obj, "shin.L"), _pole_for(obj)
        _rest(obj)
        item.target.location = goal
        assert bpy.ops.chain_ik.solve() == {"FINISHED"}
        assert np.linalg.norm(world_point(obj, "shin.L") - goal) < TOL
        _assert_hinge(_knee_local(obj))
        assert _side_of(obj, pole.location) > math.cos(math.radians(1.0))  # the bend plane holds the pole


def test_knee_sign_matches_blenders_ik_constraint(leg):
    """Without a pole, from rest: Blender's IK and ours bend the knee the same (positive X) way."""
    obj, item = leg
    hip = world_point(obj, "thigh.L", False)
    item.target.location = hip + 0.6 * (world_point(obj, "shin.L") - hip)
    for method in METHODS:
        _rest(obj)
        assert bpy.ops.chain_ik.solve(method=method) == {"FINISHED"}
        q = _knee_local(obj)
        assert math.degrees(2.0 * math.atan2(q.x, q.w)) > 20.0, method
        _assert_hinge(q)
    _rest(obj)
    con = obj.pose.bones["shin.L"].constraints.new("IK")
    con.target, con.chain_count = item.target, 2
    bpy.context.view_layer.update()
    shin = obj.pose.bones["shin.L"]
    rest = obj.data.bones["thigh.L"].matrix_local.to_3x3().inverted() @ obj.data.bones["shin.L"].matrix_local.to_3x3()
    local = ((obj.pose.bones["thigh.L"].matrix.to_3x3() @ rest).inverted() @ shin.matrix.to_3x3()).to_quaternion()
    assert math.degrees(2.0 * math.atan2(local.x, local.w)) > 20.0  # Blender: positive X too
    _assert_hinge(local)


def _angle(a: Quaternion, b: Quaternion) -> float:
    """Degrees between two orientations (the short way)."""
    d = math.degrees(a.rotation_difference(b).angle)
    return min(d, 360.0 - d)


def _knee_degrees(obj) -> float:
    q = _knee_local(obj)
    q = q if q.w >= 0 else -q
    return math.degrees(2.0 * math.atan2(q.x, q.w))


def _deep_bend_target(obj, knee: float = 100.0) -> np.ndarray:
    _set_pose(obj, Quaternion((1, 0, 0), 0.3), knee)
    goal = world_point(obj, "shin.L")
    _rest(obj)
    return goal


@pytest.mark.parametrize("method", METHODS)
def test_limits_are_read_from_the_bones(leg, method):
    obj, item = leg
    item.method = method
    item.target.location = _deep_bend_target(obj)
    shin = obj.pose.bones["shin.L"]
    shin.ik_max_x = math.radians(40.0)  # the target needs 100°
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert _knee_degrees(obj) <= 40.0 + 1e-3
    _assert_hinge(_knee_local(obj), 40.0)
    assert np.linalg.norm(world_point(obj, "shin.L") - np.array(item.target.location)) > 1e-2
    # The toggle: the bones' settings ignored, the knee bends past them.
    _rest(obj)
    item.use_limits = False
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert np.linalg.norm(world_point(obj, "shin.L") - np.array(item.target.location)) < TOL
    assert _knee_degrees(obj) > 45.0 or abs(_knee_local(obj).y) + abs(_knee_local(obj).z) > 1e-3


def test_read_chain_limits_match_the_bone_settings(leg):
    from chain_ik import rig

    obj, _ = leg
    shin = obj.pose.bones["shin.L"]
    shin.ik_stiffness_x, shin.ik_min_x = 0.3, math.radians(-10.0)
    obj.pose.bones["thigh.L"].lock_ik_y = True
    chain = rig.read_chain(obj.evaluated_get(bpy.context.evaluated_depsgraph_get()), "shin.L", 2, True, True).chain
    lim = chain.limits
    assert lim.lock.tolist() == [[False, True, False], [False, True, True]]
    assert lim.use_limit.tolist() == [[False, False, False], [True, False, False]]
    assert math.degrees(lim.minimum[1, 0]) == pytest.approx(-10.0, abs=1e-4)
    assert math.degrees(lim.maximum[1, 0]) == pytest.approx(KNEE_MAX, abs=1e-4)
    assert lim.stiffness[1, 0] == pytest.approx(0.3)
    # Rest pose: both local rotations are the identity (reference and base frame consistent with Blender).
    for q in chain.input_locals:
        assert abs(abs(q[0]) - 1.0) < 1e-6
    for name in LEG:  # no settings at all: the plain, unlimited chain
        pb = obj.pose.bones[name]
        pb.lock_ik_y = pb.lock_ik_z = pb.use_ik_limit_x = False
        pb.ik_stiffness_x = 0.0
    assert rig.read_chain(obj.evaluated_get(bpy.context.evaluated_depsgraph_get()), "shin.L", 2).chain.limits is None


def _blender_ik(obj, target, pole, pole_angle: float, use_rotation: bool = False, tip: str = "shin.L", count: int = 2):
    con = obj.pose.bones[tip].constraints.new("IK")
    con.target, con.chain_count = target, count
    if pole is not None:
        con.pole_target, con.pole_angle = pole, pole_angle
    con.use_rotation = use_rotation
    con.iterations = 5000
    bpy.context.view_layer.update()
    return con


@pytest.mark.parametrize("pole_angle", [-90.0, 0.0])
def test_pole_side_matches_blenders_ik_constraint(leg, pole_angle):
    """Same rig, limits, pole and pole angle: the knee lands on the same side (and place) in both."""
    obj, item = leg
    pole = add_empty("Pole")
    item.pole_target, item.pole_angle = pole, math.radians(pole_angle)
    rng = np.random.default_rng(7)
    for _ in range(3):
        _set_pose(obj, _random_thigh(rng), rng.uniform(40.0, 120.0))
        item.target.location = world_point(obj, "shin.L")
        hip = world_point(obj, "thigh.L", False)
        pole.location = hip + Vector(rng.normal(size=3)).normalized() * 0.8
        _rest(obj)
        con = _blender_ik(obj, item.target, pole, math.radians(pole_angle))
        blender_knee = world_point(obj, "shin.L", False)
        blender_side = _side_of(obj, blender_knee)
        obj.pose.bones["shin.L"].constraints.remove(con)
        for method in METHODS:
            _rest(obj)
            assert bpy.ops.chain_ik.solve(method=method) == {"FINISHED"}
            knee = world_point(obj, "shin.L", False)
            assert blender_side > 0.99
            assert np.linalg.norm(knee - blender_knee) < 0.01, method
            _assert_hinge(_knee_local(obj))


def _knee_path(obj, item, steps: int, blender: bool = False) -> np.ndarray:
    """Knee positions while the target crosses the hip-pole line, each solve from the previous pose."""
    pole = item.pole_target
    hip = world_point(obj, "thigh.L", False)
    along = (np.array(pole.location) - hip) / np.linalg.norm(np.array(pole.location) - hip)
    across = np.cross(along, [0.0, 0.0, 1.0])
    across /= np.linalg.norm(across)
    _rest(obj)
    con = _blender_ik(obj, item.target, pole, item.pole_angle) if blender else None
    knees = []
    for s in np.linspace(-0.15, 0.15, steps):
        item.target.location = hip + 0.55 * along + s * across
        if con is None:
            assert bpy.ops.chain_ik.solve() == {"FINISHED"}
            _assert_hinge(_knee_local(obj))
        knees.append(world_point(obj, "shin.L", False))
    if con is not None:
        obj.pose.bones["shin.L"].constraints.remove(con)
    return np.linalg.norm(np.diff(knees, axis=0), axis=1)


def test_pole_no_flip_when_the_target_crosses_the_root_pole_line(leg):
    """Past the hip-pole line the pole is on the other side, so the knee must go round to it:
    Blender's constraint flips in one step; ours swings continuously (the step shrinks with the
    target's step), within the pole's fade zone."""
    obj, item = leg
    item.method = "jacobian"
    item.pole_target, item.pole_angle = add_empty("Pole"), math.radians(-90.0)
    _set_pose(obj, Quaternion(), 60.0)
    item.pole_target.location = _pole_for(obj, 0.6)
    coarse, fine = _knee_path(obj, item, 61), _knee_path(obj, item, 241)
    blender = _knee_path(obj, item, 241, blender=True)
    print("knee steps: coarse", coarse.max(), "fine", fine.max(), "blender", blender.max(), "median", np.median(fine))
    assert fine.max() < 0.5 * coarse.max()  # continuous: a flip would not shrink with the step
    assert fine.max() < 0.5 * blender.max()  # Blender's constraint jumps across in one step
    # Away from the swing, the knee moves with the target (no wobble).
    assert np.median(fine) < 0.01 and np.sort(fine)[-int(0.9 * len(fine))] <= 3.0 * np.median(fine)


def test_tip_rotation_matches_the_target_like_blenders_ik(leg):
    """thigh, shin, foot reaching an FK pose's foot tail and orientation: the foot turns to the target."""
    obj, item = leg
    item.tip, item.chain_length, item.use_rotation, item.method = "foot.L", 3, True, "jacobian"
    foot = obj.pose.bones["foot.L"]
    foot.rotation_mode = "QUATERNION"
    rng = np.random.default_rng(11)
    target = item.target
    for _ in range(3):
        _set_pose(obj, _random_thigh(rng), rng.uniform(20.0, 100.0))
        foot.rotation_quaternion = Quaternion(Vector(rng.normal(size=3)).normalized(), 0.5)
        bpy.context.view_layer.update()
        wanted = (obj.matrix_world @ foot.matrix).to_3x3().normalized().to_quaternion()
        target.rotation_mode = "QUATERNION"
        target.location, target.rotation_quaternion = obj.matrix_world @ foot.tail, wanted
        _rest(obj)
        foot.rotation_quaternion = Quaternion()
        assert bpy.ops.chain_ik.solve() == {"FINISHED"}
        bpy.context.view_layer.update()
        got = (obj.matrix_world @ foot.matrix).to_3x3().normalized().to_quaternion()
        assert _angle(got, wanted) < 0.05
        assert np.linalg.norm(world_point(obj, "foot.L") - np.array(target.location)) < TOL
        _assert_hinge(_knee_local(obj))
        # Blender's IK constraint with Rotation on: the same meaning (the foot takes the target's orientation).
        _rest(obj)
        foot.rotation_quaternion = Quaternion()
        con = _blender_ik(obj, target, None, 0.0, use_rotation=True, tip="foot.L", count=3)
        blender = (obj.matrix_world @ foot.matrix).to_3x3().normalized().to_quaternion()
        foot.constraints.remove(con)
        assert _angle(blender, wanted) < 2.0


def test_solve_script_arguments_pole(leg):
    obj, item = leg
    item.target.location = _deep_bend_target(obj, 80.0)
    hip = world_point(obj, "thigh.L", False)
    side = add_empty("Side", location=hip + np.array([0.0, 0.0, -0.4]) + 0.8 * np.cross([0, 0, 1.0], [1.0, 0, 0]))
    kwargs = {"tip": "shin.L", "chain_length": 2, "target": "Target", "method": "jacobian"}
    assert bpy.ops.chain_ik.solve(pole="Side", pole_angle=math.radians(-90.0), **kwargs) == {"FINISHED"}
    assert _side_of(obj, side.location) > 0.99
    # A bone of another armature as the pole; the panel's pole stays unset.
    other = bpy.data.objects.new("Poles", bpy.data.armatures.new("Poles"))
    bpy.context.scene.collection.objects.link(other)
    bpy.context.view_layer.objects.active = other
    bpy.ops.object.mode_set(mode="EDIT")
    eb = other.data.edit_bones.new("p")
    eb.head, eb.tail = Vector(side.location), Vector(side.location) + Vector((0, 0, 0.1))
    bpy.ops.object.mode_set(mode="OBJECT")
    bpy.context.view_layer.objects.active = obj
    _rest(obj)
    assert bpy.ops.chain_ik.solve(pole="Poles", pole_bone="p", pole_angle=math.radians(-90.0), **kwargs) == {"FINISHED"}
    assert _side_of(obj, side.location) > 0.99
    assert item.pole_target is None
    with pytest.raises(RuntimeError, match="no pole object"):
        bpy.ops.chain_ik.solve(pole="Nope", **kwargs)


def test_compare_solvers_use_the_same_limits_and_pole(leg):
    obj, item = leg
    item.target.location = _deep_bend_target(obj)
    item.pole_target, item.pole_angle = add_empty("Pole", location=(1.0, -4.0, 1.0)), math.radians(-90.0)
    obj.pose.bones["shin.L"].ik_max_x = math.radians(40.0)
    assert bpy.ops.chain_ik.compare() == {"FINISHED"}
    assert len(item.comparison) == 4 and all(row.error > 1e-2 for row in item.comparison)
    item.use_limits = False
    assert bpy.ops.chain_ik.compare() == {"FINISHED"}
    assert {row.method for row in item.comparison if row.error < TOL} >= {"jacobian", "ccd"}


def test_tip_rotation_with_the_head_reaching(leg):
    """use_tail off: the chain is thigh + shin and foot.L's head reaches; foot.L still takes the target's rotation."""
    obj, item = leg
    item.tip, item.use_tail, item.use_rotation, item.method, item.use_limits = "foot.L", False, True, "jacobian", False
    foot, shin = obj.pose.bones["foot.L"], obj.pose.bones["shin.L"]
    foot.rotation_mode = "QUATERNION"
    foot.rotation_quaternion = Quaternion((0, 0, 1), 0.3)  # the foot's own pose is kept: it only follows the shin
    _set_pose(obj, _random_thigh(np.random.default_rng(3)), 70.0)
    shin.rotation_quaternion = Quaternion((0, 1, 0), 0.4) @ shin.rotation_quaternion
    bpy.context.view_layer.update()
    wanted = (obj.matrix_world @ foot.matrix).to_3x3().normalized().to_quaternion()
    item.target.rotation_mode = "QUATERNION"
    item.target.location, item.target.rotation_quaternion = obj.matrix_world @ foot.head, wanted
    _rest(obj)
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    bpy.context.view_layer.update()
    got = (obj.matrix_world @ foot.matrix).to_3x3().normalized().to_quaternion()
    assert _angle(got, wanted) < 0.05
    assert np.linalg.norm(world_point(obj, "foot.L", False) - np.array(item.target.location)) < TOL
    assert tuple(foot.rotation_quaternion) == pytest.approx(tuple(Quaternion((0, 0, 1), 0.3)))


def test_limits_on_a_bone_not_inheriting_rotation_are_refused(leg):
    obj, item = leg
    item.target.location = _deep_bend_target(obj)
    obj.data.bones["shin.L"].use_inherit_rotation = False
    before = [tuple(obj.pose.bones[n].rotation_quaternion) for n in LEG]
    with pytest.raises(RuntimeError, match="does not inherit its parent's rotation"):
        bpy.ops.chain_ik.solve()
    assert [tuple(obj.pose.bones[n].rotation_quaternion) for n in LEG] == before
    item.use_limits = False  # the way out the message names
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}


def test_live_follows_the_pole_and_the_bones_ik_settings_without_feedback(leg):
    from chain_ik.app import live

    obj, item = leg
    item.method = "jacobian"
    item.target.location = _deep_bend_target(obj, 80.0)
    hip = world_point(obj, "thigh.L", False)
    pole = add_empty("Pole", location=hip + np.array([0.6, 0.0, -0.3]))
    item.pole_target, item.pole_angle = pole, math.radians(-90.0)
    item.live = True
    try:
        for offset in ((0.6, 0.0, -0.3), (-0.6, 0.0, -0.3), (0.0, -0.6, -0.3)):
            pole.location = hip + np.array(offset)
            bpy.context.view_layer.update()  # the handler solves
            assert _side_of(obj, pole.location) > 0.99
        obj.pose.bones["shin.L"].ik_max_x = math.radians(30.0)  # a bone's IK setting changes: solved again
        bpy.context.view_layer.update()
        assert _knee_degrees(obj) <= 30.0 + 1e-3
        assert live.solve_live(bpy.context.scene, bpy.context.evaluated_depsgraph_get()) == 0
    finally:
        item.live = False


def test_pole_carried_by_the_chain_is_refused(leg):
    obj, item = leg
    item.target.location = _deep_bend_target(obj)
    item.pole_target, item.pole_subtarget = obj, "foot.L"  # below shin.L: it moves with the chain
    before = [tuple(obj.pose.bones[n].rotation_quaternion) for n in LEG]
    with pytest.raises(RuntimeError, match="pole target moves with the chain"):
        bpy.ops.chain_ik.solve()
    assert [tuple(obj.pose.bones[n].rotation_quaternion) for n in LEG] == before
    item.pole_subtarget = "spine"  # outside the chain: fine
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}


def _local_in_pose(obj) -> Quaternion:
    """shin.L's local rotation from the evaluated pose matrices (what a constraint produced)."""
    bones = obj.data.bones
    rest = bones["thigh.L"].matrix_local.to_3x3().inverted() @ bones["shin.L"].matrix_local.to_3x3()
    parent = obj.pose.bones["thigh.L"].matrix.to_3x3().normalized()
    q = ((parent @ rest).inverted() @ obj.pose.bones["shin.L"].matrix.to_3x3().normalized()).to_quaternion()
    return q if q.w >= 0 else -q


@pytest.mark.parametrize("axis", ["x", "z"])
def test_limit_sign_is_blenders(leg, axis):
    """Only a positive turn about the knee's own X (or Z) allowed: a target made with +60° is reached
    by Blender's IK constraint and by every solver, both turning the knee +60° about that axis."""
    obj, item = leg
    shin = obj.pose.bones["shin.L"]
    shin.lock_ik_x, shin.lock_ik_y, shin.lock_ik_z = axis != "x", True, axis != "z"
    shin.use_ik_limit_x, shin.use_ik_limit_z = axis == "x", axis == "z"
    shin.ik_min_x = shin.ik_min_z = 0.0
    shin.ik_max_x = shin.ik_max_z = math.radians(150.0)
    thigh = Quaternion((0.0, 1.0, 0.0), 0.4)
    obj.pose.bones["thigh.L"].rotation_quaternion = thigh
    shin.rotation_quaternion = Quaternion((axis == "x", 0.0, axis == "z"), math.radians(60.0))
    bpy.context.view_layer.update()
    goal = world_point(obj, "shin.L")
    item.target.location = goal
    k = "xyz".index(axis) + 1

    def bend() -> float:
        q = _local_in_pose(obj)
        return math.degrees(2.0 * math.atan2(q[k], q.w))

    _rest(obj)
    # Blender's constraint (no pole: with one, its solver stays straight on a Z hinge from rest).
    con = _blender_ik(obj, item.target, None, 0.0)
    assert np.linalg.norm(world_point(obj, "shin.L") - goal) < 1e-3
    assert bend() == pytest.approx(60.0, abs=0.5)
    shin.constraints.remove(con)
    for method in METHODS:
        _rest(obj)
        assert bpy.ops.chain_ik.solve(method=method) == {"FINISHED"}
        assert np.linalg.norm(world_point(obj, "shin.L") - goal) < TOL
        assert bend() == pytest.approx(60.0, abs=1e-2)
    # The range negated: neither Blender nor Chain IK can turn +60° any more. Blender's constraint,
    # CCD and the Jacobian (from rest) then miss; triangulation and FABRIK twist the free thigh half a
    # turn (solvers.twist) and reach the same point bending the allowed way (-60°, less the knee's
    # rest bend about X counted twice).
    setattr(shin, f"ik_min_{axis}", math.radians(-150.0))
    setattr(shin, f"ik_max_{axis}", 0.0)
    _rest(obj)
    con = _blender_ik(obj, item.target, None, 0.0)
    assert np.linalg.norm(world_point(obj, "shin.L") - goal) > 0.05
    shin.constraints.remove(con)
    for method in METHODS:
        _rest(obj)
        assert bpy.ops.chain_ik.solve(method=method) == {"FINISHED"}
        error = np.linalg.norm(world_point(obj, "shin.L") - goal)
        if method in ("triangulation", "fabrik"):
            assert error < TOL and -90.0 < bend() < -59.0, method
        else:
            assert error > 0.05 and bend() <= 1e-3, method


def test_rotation_weight_turns_the_tip_part_way(leg):
    obj, item = leg
    item.tip, item.chain_length, item.method, item.use_limits = "foot.L", 3, "jacobian", False
    foot = obj.pose.bones["foot.L"]
    foot.rotation_mode = "QUATERNION"
    wanted = (obj.matrix_world @ foot.matrix).to_3x3().normalized().to_quaternion() @ Quaternion((1, 0, 0), 0.8)
    item.target.rotation_mode = "QUATERNION"
    item.target.location = world_point(obj, "foot.L") + np.array([0.05, -0.05, 0.1])
    item.target.rotation_quaternion = wanted
    misses = []
    for use, weight in ((False, 1.0), (True, 0.5), (True, 1.0)):
        _rest(obj)
        foot.rotation_quaternion = Quaternion()
        item.use_rotation, item.rotation_weight = use, weight
        assert bpy.ops.chain_ik.solve() == {"FINISHED"}
        bpy.context.view_layer.update()
        got = (obj.matrix_world @ foot.matrix).to_3x3().normalized().to_quaternion()
        misses.append(_angle(got, wanted))
        assert np.linalg.norm(world_point(obj, "foot.L") - np.array(item.target.location)) < TOL
    assert misses[0] > 20.0 and misses[2] < 0.05
    assert 0.3 * misses[0] < misses[1] < 0.7 * misses[0]


def test_blenders_default_full_range_limit_is_accepted(leg):
    """Limit Z switched on with Blender's default -180°..180° (stored as 32-bit floats, so
    just past pi when read back) is a valid limit, not an error."""
    obj, item = leg
    thigh = obj.pose.bones["thigh.L"]
    thigh.use_ik_limit_z = True
    assert thigh.ik_min_z < -math.pi or thigh.ik_max_z > math.pi or thigh.ik_max_z == pytest.approx(math.pi)
    item.target.location = _deep_bend_target(obj)
    assert bpy.ops.chain_ik.solve() == {"FINISHED"}
    assert item.result.reached


def test_fabrik_honours_bone_stiffness(leg):
    """Issue 11: a stiff thigh (Bone > Inverse Kinematics > Stiffness) swings less under FABRIK,
    one iteration from the same pose, and the leg still reaches over the full solve."""
    obj, item = leg
    item.method, item.target.location = "fabrik", world_point(obj, "shin.L") + Vector((0.15, -0.1, 0.2))
    _rest(obj)
    hip = world_point(obj, "thigh.L", False)
    rest_dir = world_point(obj, "thigh.L") - hip

    def thigh_turn(stiffness: float, iterations: int) -> float:
        _rest(obj)
        thigh = obj.pose.bones["thigh.L"]
        thigh.ik_stiffness_x = thigh.ik_stiffness_y = thigh.ik_stiffness_z = stiffness
        item.max_iterations = iterations
        assert bpy.ops.chain_ik.solve() == {"FINISHED"}
        d = world_point(obj, "thigh.L") - hip
        return math.acos(np.clip(np.dot(d, rest_dir) / np.linalg.norm(d) / np.linalg.norm(rest_dir), -1.0, 1.0))

    free, stiff = thigh_turn(0.0, 1), thigh_turn(0.9, 1)
    assert free > 0.05 and stiff < 0.5 * free
    thigh_turn(0.9, 2000)
    assert np.linalg.norm(world_point(obj, "shin.L") - np.array(item.target.location)) < TOL


def test_smooth_fold_acts_on_a_limited_chain(scene):
    """Smooth Fold was silently dropped on chains with IK limits; it now softens the fold there
    too (each limited pass as the unlimited one), and the target is still reached."""
    from builders import straight_chain

    obj = straight_chain(3)
    bpy.ops.object.mode_set(mode="POSE")
    middle = obj.pose.bones["b1"]
    middle.use_ik_limit_x, middle.ik_min_x, middle.ik_max_x = True, math.radians(-160), math.radians(160)
    bpy.ops.object.mode_set(mode="OBJECT")
    item = obj.chain_ik.chains.add()
    # At the root bone's fold distance (b - a = 1 from the root), the middle of the smooth fold's band.
    item.tip, item.chain_length, item.target = "b2", 3, add_empty(location=(0.6, 0.0, 0.8))
    item.method, item.fold_angle = "triangulation", 180.0
    bpy.context.view_layer.objects.active = obj
    knees = []
    for smooth in (0.0, 1.0):
        for pb in obj.pose.bones:
            pb.rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
        item.smooth_fold = smooth
        assert bpy.ops.chain_ik.solve() == {"FINISHED"}
        assert np.linalg.norm(world_point(obj, "b2") - np.array([0.6, 0.0, 0.8])) < 1e-4
        knees.append(world_point(obj, "b1", False))
    assert np.linalg.norm(knees[0] - knees[1]) > 1e-4
