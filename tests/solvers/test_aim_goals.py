"""Aiming effectors in the skeleton entry points (solvers.common.aim_goals): a lone aim and a head
aiming while both hands reach, in every method, through solve_skeleton, solve_skeleton_many,
solve_skeleton_next and solve_skeleton_sequence; reached = the ray within the distance tolerance;
the reach untouched by the aim; limits, the iteration cap; bad input."""

import math

import numpy as np
import pytest
import tree_shapes
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import solvers
from solvers import limits as joint_limits
from solvers import quat, registry
from solvers.common import aim, aim_goals

METHODS = [m.name for m in registry.METHOD_LIST]


def _upper_body():
    """(bone name -> index, skeleton, input local rotations) of tree_shapes.upper_body."""
    names, skeleton, local = tree_shapes.upper_body()
    return {name: i for i, name in enumerate(names)}, skeleton, local


def _neck(limits=None):
    """neck (2 bones) and head, vertical, as a skeleton of its own."""
    heads = [(0, 0, 1.5), (0, 0, 1.55), (0, 0, 1.6)]
    tails = [(0, 0, 1.55), (0, 0, 1.6), (0, 0, 1.8)]
    return solvers.Skeleton.from_bones((-1, 0, 1), heads, tails, limits)


HANDS = {"hand.L": (0.5, -0.4, 1.2), "hand.R": (-0.45, -0.35, 1.6)}
LOOK = np.array([1.0, -2.0, 0.9])  # from the head: to the side, forward and up


def _measured(skeleton, local, bone, axis, target) -> float:
    frames, heads, _ = skeleton.forward(local)
    a = quat.rotate(frames[bone], aim.axis_vector(axis))
    d = np.asarray(target) - heads[bone]
    return math.atan2(float(np.linalg.norm(np.cross(a, d))), float(a @ d))


@pytest.mark.parametrize("method", METHODS)
def test_head_aims_while_both_hands_reach_in_every_method(method):
    """Reach first, then the aim on the bones no hand hangs from: the hands' solution stays what
    the method gives without the aim (bit for bit), the head's axis is on the target within the
    angular tolerance, neck and head each turn, the angle and the miss distance are reported."""
    ix, skeleton, rest = _upper_body()
    hands = [solvers.Effector(ix[n], position=p) for n, p in HANDS.items()]
    target = skeleton.forward(rest)[1][ix["head"]] + LOOK
    head = solvers.Effector(ix["head"], position=target, aim_axis="+Z")
    alone = solvers.solve_skeleton(skeleton, rest, hands, method=method)
    both = solvers.solve_skeleton(skeleton, rest, [hands[0], head, hands[1]], method=method)
    np.testing.assert_array_equal(both.error[[0, 2]], alone.error)
    np.testing.assert_array_equal(np.delete(both.local, [ix["neck"], ix["head"]], 0), np.delete(alone.local, [3, 4], 0))
    assert np.isnan(both.angles[[0, 2]]).all()
    angle = _measured(skeleton, both.local, ix["head"], "+Z", target)
    assert both.angles[1] == pytest.approx(angle, abs=1e-12)
    tol = solvers.DEFAULT_RELATIVE_TOLERANCE * float(skeleton.lengths[skeleton.branch(ix["head"])].sum())
    assert both.error[1] <= tol and both.reached == alone.reached
    turns = quat.angle(quat.multiply(both.local[[3, 4]], quat.conjugate(alone.local[[3, 4]])))
    assert np.all(turns > math.radians(5))


@pytest.mark.parametrize("method", METHODS)
def test_a_lone_aim_is_the_shared_pass_in_every_method(method):
    skeleton, local = _neck()
    target = (0.8, -1.5, 2.0)
    sol = solvers.solve_skeleton(skeleton, local, [solvers.Effector(2, target, aim_axis="+Z")], method=method)
    chain = solvers.Chain(
        np.vstack((skeleton.forward(local)[1], skeleton.forward(local)[2][-1])), skeleton.forward(local)[0]
    )
    tol = aim_goals.aim_tolerance(solvers.DEFAULT_RELATIVE_TOLERANCE * 0.3, np.linalg.norm(target) + 0.1)
    alone = aim.solve_aim(chain, target, "+Z", tolerance=tol)
    assert sol.reached and sol.angles[0] <= tol
    np.testing.assert_allclose(sol.local, alone.locals, atol=1e-12)
    assert sol.iterations == alone.iterations and sol.method == method


@pytest.mark.parametrize("axis", list(aim.AIM_AXES))
@pytest.mark.parametrize("spread", [0.0, 1.0])
def test_each_axis_and_spread(axis, spread):
    skeleton, local = _neck()
    target = (0.6, -1.0, 1.9)
    e = solvers.Effector(2, target, aim_axis=axis, aim_spread=spread)
    sol = solvers.solve_skeleton(skeleton, local, [e], method="fabrik")
    assert sol.reached and _measured(skeleton, sol.local, 2, axis, target) <= 1e-6
    turned = quat.angle(quat.multiply(sol.local, quat.conjugate(local))) > 1e-9
    if spread == 0.0:
        assert turned.tolist() == [False, False, True]


def test_limits_block_the_aim_and_the_angle_is_reported():
    """Every bone limited to 10 degrees about each axis: a target behind is not reached, the angle
    left is reported (and the error is the ray's miss), the reason says the limits block it."""
    limits = solvers.make_limits(3, use_limit=[True] * 3, minimum=-0.17, maximum=0.17)
    skeleton, local = _neck(limits)
    target = (0.0, 2.0, 1.7)  # behind (the head's +Z faces -Y)
    sol = solvers.solve_skeleton(skeleton, local, [solvers.Effector(2, target, aim_axis="+Z")], method="ccd")
    assert not sol.reached and sol.angles[0] > math.radians(90)
    assert sol.error[0] == pytest.approx(np.linalg.norm(np.asarray(target) - skeleton.forward(sol.local)[1][2]))
    assert aim.BLOCKED in sol.reason
    inside = joint_limits.clamp(limits, np.arange(3), sol.local)
    assert np.all(quat.angle(quat.multiply(inside, quat.conjugate(sol.local))) < 1e-9)


def test_the_iteration_cap_is_honoured():
    limits = solvers.make_limits(3, use_limit=[True] * 3, minimum=-0.3, maximum=0.3)
    skeleton, local = _neck(limits)
    e = solvers.Effector(2, (1.0, -1.0, 1.6), aim_axis="+Z")
    sol = solvers.solve_skeleton(skeleton, local, [e], method="jacobian", max_iterations=1)
    assert sol.iterations <= 1


def test_many_and_the_sequence_equal_solve_skeleton_frame_by_frame():
    ix, skeleton, rest = _upper_body()
    hands = [solvers.Effector(ix[n], position=p) for n, p in HANDS.items()]
    head_at = skeleton.forward(rest)[1][ix["head"]]
    looks = head_at + np.array([[1.0, -2.0, 0.9], [0.5, -2.0, 0.5], [-1.0, -1.5, 0.2]])
    effectors = [*hands, solvers.Effector(ix["head"], position=looks[0], aim_axis="-Z")]
    positions = np.array([[HANDS["hand.L"], HANDS["hand.R"], p] for p in looks])
    many = solvers.solve_skeleton_many(skeleton, rest, effectors, positions, method="jacobian")
    for f in range(3):
        frame = [effectors[0], effectors[1], solvers.Effector(ix["head"], position=looks[f], aim_axis="-Z")]
        one = solvers.solve_skeleton(skeleton, rest, frame, method="jacobian")
        np.testing.assert_allclose(many.local[f], one.local, atol=1e-9)
        np.testing.assert_allclose(many.angles[f], one.angles, atol=1e-9, equal_nan=True)
    sequence = solvers.solve_skeleton_sequence(skeleton, rest, effectors, positions, method="fabrik")
    assert sequence.reached.all() and np.all(sequence.angles[:, 2] <= 1e-5)
    # A lone aim's frames: each is solve_skeleton's (every aim pass starts from the frame's input).
    skeleton, local = _neck()
    lone = [solvers.Effector(2, (0.5, -1.0, 1.7), aim_axis="+Z")]
    rows = np.array([[(0.5, -1.0, 1.7)], [(0.3, -1.0, 1.8)]])
    steps = solvers.solve_skeleton_sequence(skeleton, local, lone, rows, method="triangulation")
    previous = None
    for f in range(2):
        frame = [solvers.Effector(2, rows[f, 0], aim_axis="+Z")]
        np.testing.assert_array_equal(
            steps.local[f], solvers.solve_skeleton(skeleton, local, frame, method="triangulation").local
        )
        nxt = solvers.solve_skeleton_next(skeleton, local, frame, previous, method="triangulation")
        np.testing.assert_array_equal(steps.local[f], nxt.local)
        previous = nxt.local


def test_a_pin_holds_and_its_bones_are_not_aimed():
    """A pinned hand: the chest it hangs from is no aim bone's to turn; the pin holds."""
    ix, skeleton, rest = _upper_body()
    pin = solvers.Effector(ix["hand.L"], pin=True)
    head = solvers.Effector(ix["head"], position=skeleton.forward(rest)[1][ix["head"]] + LOOK, aim_axis="+Z")
    sol = solvers.solve_skeleton(skeleton, rest, [pin, head], method="triangulation")
    assert sol.error[0] <= 1e-9 and sol.reached
    np.testing.assert_array_equal(sol.local[: ix["chest"] + 1], rest[: ix["chest"] + 1])


@pytest.mark.parametrize(
    "keywords, message",
    [
        ({"pin": True}, "takes no pin"),
        ({"pole": (0, -1, 0)}, "takes no pole"),
        ({"orientation": (1, 0, 0, 0)}, "takes no orientation"),
        ({"softness": 0.1}, "takes no softness"),
        ({"aim_axis": "+W"}, "aim_axis must be one of"),
        ({"aim_spread": 1.5}, "aim_spread must be within 0..1"),
        ({"aim_axis": 3}, "aim_axis must be a string"),
    ],
)
def test_bad_aim_effectors(keywords, message):
    args = {"aim_axis": "+Z", **keywords}
    with pytest.raises(ValueError, match=message):
        solvers.Effector(2, (0.0, -1.0, 1.6), **args)


def test_no_aim_is_a_reaching_effector():
    assert solvers.Effector(2, (0, 0, 1), aim_axis="NONE").aim_axis == ""
    assert solvers.Effector(2, (0, 0, 1), aim_axis="+z").aim_axis == "+Z"


def test_a_target_on_the_tip_bones_head_is_refused():
    skeleton, local = _neck()
    head = skeleton.forward(local)[1][2]
    with pytest.raises(ValueError, match="at its tip bone's head"):
        solvers.solve_skeleton(skeleton, local, [solvers.Effector(2, head, aim_axis="+Z")], method="ccd")
    with pytest.raises(ValueError, match="at its tip bone's head"):
        solvers.solve_skeleton_sequence(
            skeleton, local, [solvers.Effector(2, head, aim_axis="+Z")], np.array([[head]]), method="ccd"
        )


def test_bad_method_and_pole_rows_are_refused_with_only_aims():
    skeleton, local = _neck()
    e = [solvers.Effector(2, (0, -1, 1.6), aim_axis="+Z")]
    with pytest.raises(ValueError):
        solvers.solve_skeleton(skeleton, local, e, method="nope")
    with pytest.raises(ValueError, match="takes no pole"):
        solvers.solve_skeleton_many(
            skeleton, local, e, np.array([[(0, -1, 1.6)]]), poles=np.array([[(0, -1, 0)]]), method="ccd"
        )


def test_aim_tolerance_and_miss():
    assert aim_goals.aim_tolerance(0.01, 1.0) == pytest.approx(math.asin(0.01))
    assert aim_goals.aim_miss(math.asin(0.01), 1.0) == pytest.approx(0.01)
    assert aim_goals.aim_miss(2.0, 1.5) == 1.5


def test_the_headless_names_are_the_cores():
    """cli.py and the shot list check aim axes without numpy (headless/aim_axis_names.py)."""
    from headless import aim_axis_names
    from solvers.model import aim_axis

    assert aim_axis_names.AIM_AXIS_NAMES == (aim_axis.NO_AIM, *aim_axis.AIM_AXES)
    assert aim_axis_names.DEFAULT_AIM_SPREAD == aim_axis.DEFAULT_SPREAD


@settings(max_examples=40, deadline=None)
@given(
    method=st.sampled_from(METHODS),
    axis=st.sampled_from(list(aim.AIM_AXES)),
    spread=st.floats(0.0, 1.0),
    hand=st.tuples(st.floats(0.2, 0.7), st.floats(-0.5, 0.1), st.floats(1.0, 1.7)),
    look=st.tuples(st.floats(-2.0, 2.0), st.floats(-2.0, 2.0), st.floats(-1.0, 2.0)),
)
def test_an_aim_never_moves_a_reach_and_reports_its_angle_honestly(method, axis, spread, hand, look):
    """Property: beside a reaching hand, the aim leaves the hand's solution bit for bit as the
    method gives it alone; the reported angle and miss are those of the returned pose; reached
    iff the miss is within the tolerance."""
    ix, skeleton, rest = _upper_body()
    reach = solvers.Effector(ix["hand.L"], position=hand)
    target = skeleton.forward(rest)[1][ix["head"]] + np.array(look)
    assume(np.linalg.norm(look) > 0.05)
    head = solvers.Effector(ix["head"], position=target, aim_axis=axis, aim_spread=spread)
    alone = solvers.solve_skeleton(skeleton, rest, [reach], method=method)
    both = solvers.solve_skeleton(skeleton, rest, [reach, head], method=method)
    assert both.error[0] == alone.error[0]
    _, _, ends = skeleton.forward(both.local)
    np.testing.assert_array_equal(ends[ix["hand.L"]], skeleton.forward(alone.local)[2][ix["hand.L"]])
    angle = _measured(skeleton, both.local, ix["head"], axis, target)
    assert both.angles[1] == pytest.approx(angle, abs=1e-12)
    dist = float(np.linalg.norm(target - skeleton.forward(both.local)[1][ix["head"]]))
    assert both.error[1] == pytest.approx(aim_goals.aim_miss(angle, dist), abs=1e-12)
    tol = solvers.DEFAULT_RELATIVE_TOLERANCE * float(skeleton.lengths[skeleton.branch(ix["head"])].sum())
    assert both.reached == (alone.reached and both.error[1] <= tol)
    assert both.error[1] <= tol  # free neck and head: the aim always lands


def test_the_sequence_with_an_aim_takes_per_frame_tolerances_and_continues_in_chunks():
    """solve_skeleton_sequence with an aim beside reaching hands: a tolerance per frame is each
    frame's (the aim pass's and the reach's), and two chunks, the second continuing the first's
    last solution (`previous`), are one call (the bake's carried route, app.bake.bake_unit)."""
    ix, skeleton, rest = _upper_body()
    hands = [solvers.Effector(ix[n], position=p) for n, p in HANDS.items()]
    head_at = skeleton.forward(rest)[1][ix["head"]]
    looks = head_at + np.array([[1.0, -2.0, 0.9], [0.5, -2.0, 0.5], [-1.0, -1.5, 0.2], [0.2, -2.0, 0.4]])
    effectors = [*hands, solvers.Effector(ix["head"], position=looks[0], aim_axis="-Z")]
    positions = np.array([[HANDS["hand.L"], HANDS["hand.R"], p] for p in looks])
    tolerances = np.array([1e-2, 1e-3, 1e-4, 1e-3])
    whole = solvers.solve_skeleton_sequence(skeleton, rest, effectors, positions, method="ccd", tolerance=tolerances)
    for f in range(4):
        assert np.all(whole.error[f] <= tolerances[f] * 1.000001), (f, whole.error[f])
    first = solvers.solve_skeleton_sequence(
        skeleton, rest, effectors, positions[:2], method="ccd", tolerance=tolerances[:2]
    )
    second = solvers.solve_skeleton_sequence(
        skeleton, rest, effectors, positions[2:], method="ccd", tolerance=tolerances[2:], previous=first.local[-1]
    )
    np.testing.assert_array_equal(np.concatenate([first.local, second.local]), whole.local)
    np.testing.assert_array_equal(np.concatenate([first.angles, second.angles]), whole.angles)
    with pytest.raises(ValueError, match="one per frame"):
        solvers.solve_skeleton_sequence(skeleton, rest, effectors, positions, method="ccd", tolerance=tolerances[:2])
