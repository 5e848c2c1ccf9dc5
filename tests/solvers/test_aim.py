"""Aim chains (solvers.common.aim): the tip bone's axis ends on the target, the turn shared over the
bones by aim_spread and stiffness, limits never exceeded, the angle left reported honestly, the
batch form equal to single solves, the tree rule (aim after reach, on free bones only), bad input."""

import math

import ik_strategies as ik
import numpy as np
import pytest
import tree_shapes
from hypothesis import given, settings
from hypothesis import strategies as st

import solvers
from solvers import limits as joint_limits
from solvers import quat
from solvers.common import aim

IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])
# A bone along world +Z with Blender's roll 0: its Y up the bone, its Z facing world -Y (the
# metarig's front), as the metarig's neck and head bones.
UPRIGHT = quat.from_axis_angle(np.array([1.0, 0.0, 0.0]), math.pi / 2)
FORWARD = np.array([0.0, -1.0, 0.0])


def neck(lengths=(0.05, 0.05, 0.2), limits=None) -> solvers.Chain:
    """A vertical neck-and-head chain, the head bone's +Z facing forward."""
    z = np.concatenate(([0.0], np.cumsum(lengths)))
    points = np.column_stack((np.zeros_like(z), np.zeros_like(z), 1.5 + z))
    return solvers.Chain(points, np.tile(UPRIGHT, (len(lengths), 1)), limits=limits)


def look(chain: solvers.Chain, yaw_deg: float, pitch_deg: float = 0.0, distance: float = 2.0) -> np.ndarray:
    """A target `distance` from the head, turned from straight ahead by yaw (about world Z,
    positive to the left) and pitch (about world X)."""
    turn = quat.multiply(
        quat.from_axis_angle(np.array([0.0, 0.0, 1.0]), math.radians(yaw_deg)),
        quat.from_axis_angle(np.array([1.0, 0.0, 0.0]), math.radians(pitch_deg)),
    )
    return chain.points[-2] + distance * quat.rotate(turn, FORWARD)


def turn_angles(chain: solvers.Chain, solution) -> np.ndarray:
    """Each bone's local turn (radians) from the input pose."""
    return quat.angle(quat.multiply(solution.locals, quat.conjugate(chain.input_locals)))


def measured_angle(chain: solvers.Chain, solution, target, axis: str) -> float:
    """The angle between the solved tip bone's axis and its head-to-target line, from the
    solution's rotations and points alone."""
    frame = quat.multiply(solution.rotations[-1], chain.frames[-1])
    a = quat.rotate(frame, aim.axis_vector(axis))
    d = np.asarray(target, dtype=float) - solution.points[-2]
    return math.atan2(np.linalg.norm(np.cross(a, d)), float(a @ d))


def check_pose(chain: solvers.Chain, solution) -> None:
    """Root fixed, lengths kept, rotations unit and taking the input bones to the solved ones,
    locals consistent with the rotations."""
    pts, rots = solution.points, solution.rotations
    assert np.all(np.isfinite(pts)) and np.all(np.isfinite(rots))
    np.testing.assert_array_equal(pts[0], chain.root)
    np.testing.assert_allclose(np.linalg.norm(np.diff(pts, axis=0), axis=1), chain.lengths, rtol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(rots, axis=-1), 1.0, atol=1e-12)
    solved = np.diff(pts, axis=0) / chain.lengths[:, None]
    np.testing.assert_allclose(quat.rotate(rots, chain.directions), solved, atol=1e-9)
    locals_ = ik.solved_locals(chain, rots)
    d = np.minimum(
        np.linalg.norm(locals_ - solution.locals, axis=-1), np.linalg.norm(locals_ + solution.locals, axis=-1)
    )
    assert np.all(d < 1e-9)


@st.composite
def framed_chains(draw, max_bones: int = 8) -> solvers.Chain:
    plain = draw(ik.chains(1, max_bones))
    rolls = draw(st.lists(st.floats(-math.pi, math.pi), min_size=plain.n_bones, max_size=plain.n_bones))
    return solvers.Chain(plain.points, ik.frames_along(plain.directions, rolls))


@st.composite
def targets_off_head(draw, chain: solvers.Chain) -> np.ndarray:
    """A target anywhere within twice the chain's reach, not within 1% of it from the tip head."""
    u = draw(ik.unit_vectors())
    r = draw(st.floats(0.01, 2.0)) * chain.total_length
    return chain.points[-2] + r * u


# --------------------------------------------------------------------------- reaching the aim


@given(data=st.data(), axis=st.sampled_from(sorted(aim.AIM_AXES)), spread=st.floats(0.0, 1.0))
def test_free_chains_aim_at_any_target(data, axis, spread):
    """Without limits the axis ends on the target (the tip bone ends each pass on it), and
    the reported angle is the one measured on the returned pose."""
    chain = data.draw(framed_chains())
    target = data.draw(targets_off_head(chain))
    ik.describe(chain, target)
    solution = aim.solve_aim(chain, target, axis, aim_spread=spread)
    check_pose(chain, solution)
    assert solution.reached and solution.reason == ""
    assert solution.angle <= aim.DEFAULT_TOLERANCE
    assert math.isclose(solution.angle, measured_angle(chain, solution, target, axis), abs_tol=1e-9)
    assert solution.iterations <= 1


@settings(max_examples=100)
@given(data=st.data(), axis=st.sampled_from(sorted(aim.AIM_AXES)), spread=st.floats(0.0, 1.0))
def test_limits_are_never_exceeded_and_the_angle_is_honest(data, axis, spread):
    chain = data.draw(ik.limited_chains(1, 6))
    target = data.draw(targets_off_head(chain))
    ik.describe(chain, target)
    solution = aim.solve_aim(chain, target, axis, aim_spread=spread)
    ik.check_limited_solution(chain, solution.points, solution.rotations)
    assert np.max(joint_limits.violation(chain.limits, solution.locals)) < 1e-9
    assert math.isclose(solution.angle, measured_angle(chain, solution, target, axis), abs_tol=1e-9)
    assert solution.reached == (solution.angle <= aim.DEFAULT_TOLERANCE)
    assert (solution.reason == "") == solution.reached
    # NOT_FREE: a drawn chain may lock every axis of every bone.
    assert solution.reason in ("", aim.BLOCKED, aim.CAPPED, aim.NOT_FREE)


def test_aimable_targets_of_limited_chains_are_mostly_reached():
    """Targets the limited chain can aim at by construction (the axis of a random allowed pose,
    extended): at least 95% reached (40 random chains x 10 targets; the rest stop short honestly)."""
    rng = np.random.default_rng(7)
    reached = total = 0
    for seed in range(40):
        chain = _seeded_limited_chain(seed)
        for _ in range(10):
            frames, points = ik.forward_kinematics(chain, ik.allowed_pose(chain, rng))
            a = quat.rotate(frames[-1], aim.axis_vector("+Z"))
            target = points[-2] + rng.uniform(0.5, 3.0) * chain.total_length * a
            reached += aim.solve_aim(chain, target, "+Z", aim_spread=1.0).reached
            total += 1
    assert reached / total >= 0.95, reached / total  # 393 of 400 when written


def _seeded_limited_chain(seed: int) -> solvers.Chain:
    """A 2-5 bone chain with frames, per-axis ranges of +-(20..90) degrees on every bone."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 6))
    dirs = rng.normal(size=(n, 3))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    points = np.concatenate(([np.zeros(3)], np.cumsum(rng.uniform(0.2, 1.0, (n, 1)) * dirs, axis=0)))
    span = np.radians(rng.uniform(20.0, 90.0, (n, 3)))
    limits = solvers.make_limits(n, use_limit=[True, True, True], minimum=-span, maximum=span)
    return solvers.Chain(points, ik.frames_along(dirs, rng.uniform(-math.pi, math.pi, n)), limits=limits)


# --------------------------------------------------------------------------- sharing the turn


@given(data=st.data(), axis=st.sampled_from(sorted(aim.AIM_AXES)))
def test_spread_zero_turns_only_the_tip_bone(data, axis):
    chain = data.draw(framed_chains())
    target = data.draw(targets_off_head(chain))
    solution = aim.solve_aim(chain, target, axis, aim_spread=0.0)
    n = chain.n_bones
    np.testing.assert_array_equal(solution.rotations[: n - 1], np.tile(IDENTITY, (n - 1, 1)))
    np.testing.assert_array_equal(solution.points[:n], chain.points[:n])
    np.testing.assert_array_equal(solution.locals[: n - 1], chain.input_locals[: n - 1])
    assert solution.reached


def test_spread_one_gives_equal_shares_on_a_symmetric_look():
    """Every bone on the vertical line the yaw turns about: each turns exactly a third."""
    chain = neck()
    for yaw in (30.0, 60.0, -100.0, 170.0):
        solution = aim.solve_aim(chain, look(chain, yaw), "+Z", aim_spread=1.0)
        assert solution.reached
        np.testing.assert_allclose(turn_angles(chain, solution), math.radians(abs(yaw)) / 3, atol=1e-12)


def test_default_spread_gives_every_neck_bone_a_visible_share():
    """The default: every bone of a 3-bone neck at least 15% of the whole turn on a 60 degree
    look (sideways, up, down, diagonal), and the tip bone the most."""
    chain = neck()
    for yaw, pitch in ((60.0, 0.0), (-60.0, 0.0), (0.0, 60.0), (0.0, -60.0), (42.0, 42.0)):
        solution = aim.solve_aim(chain, look(chain, yaw, pitch), "+Z")
        assert solution.reached, (yaw, pitch)
        turns = turn_angles(chain, solution)
        shares = turns / turns.sum()
        assert np.all(shares >= 0.15), (yaw, pitch, shares)
        assert shares[-1] == shares.max()
    two = neck((0.08, 0.2))
    turns = turn_angles(two, aim.solve_aim(two, look(two, 60.0), "+Z"))
    assert np.all(turns / turns.sum() >= 0.15)


def test_share_formula():
    """w_j = spread ** (bones from the tip) * (1 - mean stiffness), normalised; locked bones and
    bones not movable get none."""
    np.testing.assert_allclose(aim.aim_shares(neck(), 0.7), np.array([0.49, 0.7, 1.0]) / 2.19)
    np.testing.assert_array_equal(aim.aim_shares(neck(), 0.0), [0.0, 0.0, 1.0])
    np.testing.assert_allclose(aim.aim_shares(neck(), 1.0), [1 / 3] * 3)
    stiff = solvers.make_limits(3, stiffness=[[0.5, 0.5, 0.5], [0.0, 0.0, 0.0], [0.9, 0.9, 0.9]])
    np.testing.assert_allclose(aim.aim_shares(neck(limits=stiff), 1.0), np.array([0.5, 1.0, 0.1]) / 1.6)
    locked = solvers.make_limits(3, lock=[[True, True, True], [False] * 3, [False] * 3])
    np.testing.assert_allclose(aim.aim_shares(neck(limits=locked), 1.0), [0.0, 0.5, 0.5])
    np.testing.assert_allclose(aim.aim_shares(neck(), 1.0, np.array([True, False, True])), [0.5, 0.0, 0.5])
    np.testing.assert_array_equal(aim.aim_shares(neck(), 1.0, np.zeros(3, dtype=bool)), [0.0] * 3)


def test_a_limited_head_leaves_the_rest_to_the_neck():
    """The head may twist 10 degrees: the neck bones take the rest of a 60 degree look."""
    span = np.radians([[90.0] * 3, [90.0] * 3, [90.0, 10.0, 90.0]])
    chain = neck(limits=solvers.make_limits(3, use_limit=[True, True, True], minimum=-span, maximum=span))
    solution = aim.solve_aim(chain, look(chain, 60.0), "+Z")
    assert solution.reached and solution.iterations > 1
    turns = np.degrees(turn_angles(chain, solution))
    assert math.isclose(turns[2], 10.0, abs_tol=1e-9)
    assert math.isclose(turns.sum(), 60.0, abs_tol=0.01)


def test_a_target_behind_a_tightly_limited_neck_is_reported_missed():
    """Every axis within +-20 degrees, the target straight behind: the yaw stops at 3 x 20
    degrees, 120 degrees are left, and the reason says the limits block."""
    span = np.radians(20.0)
    chain = neck(limits=solvers.make_limits(3, use_limit=[True, True, True], minimum=-span, maximum=span))
    target = look(chain, 180.0)
    solution = aim.solve_aim(chain, target, "+Z")
    assert not solution.reached and solution.reason == aim.BLOCKED
    assert math.isclose(math.degrees(solution.angle), 120.0, abs_tol=1e-6)
    assert math.isclose(solution.angle, measured_angle(chain, solution, target, "+Z"), abs_tol=1e-12)
    np.testing.assert_allclose(np.degrees(turn_angles(chain, solution)), 20.0, atol=1e-6)
    assert np.max(joint_limits.violation(chain.limits, solution.locals)) < 1e-9


def test_target_on_the_tip_head_turns_nothing():
    chain = neck()
    solution = aim.solve_aim(chain, chain.points[-2], "+Z")
    assert not solution.reached and math.isnan(solution.angle) and solution.reason == aim.AT_TIP_HEAD
    assert solution.iterations == 0
    np.testing.assert_array_equal(solution.points, chain.points)
    np.testing.assert_array_equal(solution.rotations, np.tile(IDENTITY, (3, 1)))


def test_a_target_the_free_bones_cannot_aim_at_is_reported():
    """Only the neck may turn and the target is nearer its head than the head bone's ray ever
    passes: the pose returned is the best found (no pass that ends farther off is kept), the
    angle is honest and the reason says the free bones get no closer."""
    chain = neck((0.3, 0.2))
    for target in ((0.0, -0.05, 1.55), (0.0, -0.1, 1.6), (0.05, 0.0, 1.5)):
        start = aim.solve_aim(chain, target, "+Z", movable=np.zeros(2, dtype=bool)).angle
        solution = aim.solve_aim(chain, target, "+Z", movable=np.array([True, False]))
        assert not solution.reached and solution.reason == aim.STALLED
        assert solution.angle <= start
        assert math.isclose(solution.angle, measured_angle(chain, solution, target, "+Z"), abs_tol=1e-12)
    near = aim.solve_aim(chain, (0.3, -0.2, 1.6), "+Z", movable=np.array([True, False]))
    assert near.reached and near.iterations > 1


def test_no_movable_bone_is_reported():
    solution = aim.solve_aim(neck(), look(neck(), 45.0), "+Z", movable=np.zeros(3, dtype=bool))
    assert not solution.reached and solution.reason == aim.NOT_FREE and solution.iterations == 0
    assert math.isclose(math.degrees(solution.angle), 45.0, abs_tol=1e-9)


def test_bones_not_movable_stay_bit_for_bit():
    chain = neck()
    solution = aim.solve_aim(chain, look(chain, 50.0, 20.0), "+Z", movable=np.array([False, True, True]))
    assert solution.reached
    np.testing.assert_array_equal(solution.rotations[0], IDENTITY)
    np.testing.assert_array_equal(solution.points[:2], chain.points[:2])
    assert turn_angles(chain, solution)[1] > 0.0


# --------------------------------------------------------------------------- many targets


def test_many_targets_equal_one_at_a_time():
    rng = np.random.default_rng(3)
    for chain in (neck(), _seeded_limited_chain(5), _seeded_limited_chain(11)):
        targets = chain.points[-2] + rng.normal(size=(12, 3))
        batch = aim.solve_aim_many(chain, targets, "-X", aim_spread=0.5)
        assert len(batch) == 12
        for k, target in enumerate(targets):
            one = aim.solve_aim(chain, target, "-X", aim_spread=0.5)
            np.testing.assert_array_equal(batch[k].points, one.points)
            np.testing.assert_array_equal(batch[k].rotations, one.rotations)
            assert (batch[k].angle, batch[k].iterations, batch[k].reason) == (one.angle, one.iterations, one.reason)


# --------------------------------------------------------------------------- in a tree


def test_free_bones_are_those_no_reaching_effector_hangs_from():
    names, skeleton, _ = tree_shapes.upper_body()
    ix = {name: i for i, name in enumerate(names)}
    aim_bones = [ix["chest"], ix["neck"], ix["head"]]
    hands = [ix["hand.L"], ix["hand.R"]]
    np.testing.assert_array_equal(aim.free_bones(skeleton.parents, aim_bones, hands), [False, True, True])
    np.testing.assert_array_equal(aim.free_bones(skeleton.parents, aim_bones, []), [True, True, True])
    np.testing.assert_array_equal(aim.free_bones(skeleton.parents, aim_bones, [ix["head"]]), [False] * 3)


def test_head_aims_while_both_hands_reach():
    """The reach solve first (both hands, spine included), then the aim on the bones no hand
    hangs from: the hands' results stay bit for bit, the chest keeps the reach solve's turn,
    and the head's +Z (forward, as the metarig's) points at the target."""
    names, skeleton, rest = tree_shapes.upper_body()
    ix = {name: i for i, name in enumerate(names)}
    hands = [ix["hand.L"], ix["hand.R"]]
    effectors = [
        solvers.Effector(ix["hand.L"], position=(0.5, -0.4, 1.2)),
        solvers.Effector(ix["hand.R"], position=(-0.45, -0.35, 1.6)),
    ]
    reached = solvers.solve_skeleton(skeleton, rest, effectors, method="jacobian")
    aim_bones = [ix["chest"], ix["neck"], ix["head"]]
    _, heads, _ = skeleton.forward(reached.local)
    target = heads[ix["head"]] + np.array([1.0, -2.0, 0.5])
    local, solution = aim.aim_after_reach(skeleton, reached.local, aim_bones, hands, target, "+Z")
    assert solution.reached
    frames, heads, ends = skeleton.forward(local)
    before = skeleton.forward(reached.local)
    for hand in hands:
        np.testing.assert_array_equal(ends[hand], before[2][hand])
    np.testing.assert_array_equal(local[ix["chest"]], reached.local[ix["chest"]])
    unchanged = [i for i in range(skeleton.n_bones) if i not in (ix["neck"], ix["head"])]
    np.testing.assert_array_equal(local[unchanged], reached.local[unchanged])
    axis = quat.rotate(frames[ix["head"]], np.array([0.0, 0.0, 1.0]))
    d = target - heads[ix["head"]]
    assert math.atan2(np.linalg.norm(np.cross(axis, d)), axis @ d) <= aim.DEFAULT_TOLERANCE
    turns = quat.angle(quat.multiply(local[[ix["neck"], ix["head"]]], quat.conjugate(rest[[ix["neck"], ix["head"]]])))
    assert np.all(turns > 0.1)


def test_aim_after_reach_refuses_a_broken_chain():
    names, skeleton, local = tree_shapes.upper_body()
    with pytest.raises(ValueError, match="serial chain"):
        aim.aim_after_reach(skeleton, local, [2, 5, 4], [], (0, -1, 1.6), "+Z")


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("axis", ["X", "+W", "NONE", "", 3, None])
def test_unknown_axis(axis):
    with pytest.raises(ValueError, match="aim_axis"):
        aim.solve_aim(neck(), (0, -1, 1.6), axis)


@pytest.mark.parametrize("target", [(math.nan, 0, 0), (0, math.inf, 0), (1, 2), "x"])
def test_bad_target(target):
    with pytest.raises(ValueError, match="aim target"):
        aim.solve_aim(neck(), target, "+Z")


def test_bad_targets_of_many():
    with pytest.raises(ValueError, match="aim target 1 is not finite"):
        aim.solve_aim_many(neck(), [(0, -1, 1.6), (0, math.nan, 1.6)], "+Z")
    with pytest.raises(ValueError, match="shape"):
        aim.solve_aim_many(neck(), [0, -1, 1.6], "+Z")


@pytest.mark.parametrize("spread", [-0.01, 1.01, math.nan, True, "half"])
def test_spread_outside_zero_one(spread):
    with pytest.raises(ValueError, match="aim_spread"):
        aim.solve_aim(neck(), (0, -1, 1.6), "+Z", aim_spread=spread)


def test_zero_length_bone():
    with pytest.raises(ValueError, match="zero length"):
        solvers.Chain([[0, 0, 0], [0, 0, 1], [0, 0, 1]], np.tile(UPRIGHT, (2, 1)))


def test_other_bad_settings():
    with pytest.raises(ValueError, match="bone frames"):
        aim.solve_aim(solvers.Chain([[0, 0, 0], [0, 0, 1]]), (0, -1, 1), "+Z")
    with pytest.raises(ValueError, match="tolerance"):
        aim.solve_aim(neck(), (0, -1, 1.6), "+Z", tolerance=0.0)
    with pytest.raises(ValueError, match="max_iterations"):
        aim.solve_aim(neck(), (0, -1, 1.6), "+Z", max_iterations=0)
    with pytest.raises(ValueError, match="movable"):
        aim.solve_aim(neck(), (0, -1, 1.6), "+Z", movable=[1, 1, 1])
