"""A one-effector skeleton is a chain: solve_skeleton, solve_skeleton_next and
solve_skeleton_sequence give solve's and solve_sequence's numbers to the bit (every method, with
poles, tip rotation, joint limits and a stretched chain), when the chain and the skeleton are read
from the same numbers (`read`: as rig/read.py and rig/tree.py read one pose): the pose given to the
skeleton entry points (`chain_pose`) and the rests the skeleton holds. (Given numbers a second time,
Chain normalises its quaternions again, which may move their last bit: a chain rebuilt from another
chain's normalised frames is not that chain to the bit, and neither is its skeleton's.)"""

from __future__ import annotations

import math

import ik_strategies as ik
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import solvers
from solvers import quat
from solvers.skeleton_sequence import SOME_POLES
from solvers.skeleton_solve import branch_locals, chain_pose
from solvers.stretch import stretch_points

METHODS = list(solvers.REGISTRY)


@st.composite
def chain_cases(draw, max_bones: int = 6):
    """(chain, first target, goals) with frames; sometimes limits (and a base frame), a pole, a tip
    orientation, or a chain stretched toward a target beyond its reach."""
    if draw(st.booleans()):
        chain = draw(ik.limited_chains(max_bones=max_bones))
    else:
        plain = draw(ik.chains(max_bones=max_bones))
        rolls = draw(st.lists(st.floats(-math.pi, math.pi), min_size=plain.n_bones, max_size=plain.n_bones))
        chain = solvers.Chain(plain.points, ik.frames_along(plain.directions, rolls))
    target = draw(ik.reachable_targets(chain))
    if draw(st.booleans()):  # IK stretch: the chain stretched toward a target beyond its reach
        target = chain.root + 1.6 * chain.total_length * ik.perpendicular(np.array([0.3, 1.0, 0.2]))
        weights = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=chain.n_bones, max_size=chain.n_bones))
        if any(weights):
            rows = [tuple(p) for p in chain.points.tolist()]
            frames = [quat.to_matrix(q).tolist() for q in chain.frames]
            _, _, _, points = stretch_points(rows, frames, weights, [True] * chain.n_bones, tuple(target))
            joints = {}
            if chain.limits is not None:
                joints = {"limits": chain.limits, "reference": chain.reference, "base_frame": chain.base_frame}
            chain = solvers.Chain(points, chain.frames, **joints)
    goals = {}
    if draw(st.booleans()):
        goals.update(pole=draw(ik.reachable_targets(chain)) * 2.0 + 0.1, pole_angle=draw(st.floats(-3.0, 3.0)))
    if draw(st.booleans()):
        axis = draw(ik.unit_vectors())
        goals.update(
            target_rotation=quat.from_axis_angle(axis, draw(st.floats(-math.pi, math.pi))),
            rotation_weight=draw(st.sampled_from([1.0, 0.5])),
        )
    return chain, target, goals


def read(drawn: solvers.Chain):
    """(chain, skeleton, local, pose) of one reading: the skeleton of `drawn`, and the chain a reader
    builds from the same numbers (its frames, and with limits the skeleton's rests)."""
    skeleton, local = solvers.Skeleton.from_chain(drawn)
    joints = {}
    if drawn.limits is not None:
        joints = {"limits": drawn.limits, "reference": skeleton.reference, "base_frame": skeleton.base_frame}
    chain = solvers.Chain(drawn.points, drawn.frames, **joints)
    return chain, skeleton, local, chain_pose(drawn)


def effector_of(chain: solvers.Chain, target, goals: dict) -> solvers.Effector:
    """The effector of these goals. It holds its orientation normalised, and normalising is not
    idempotent in the last bit: `held` gives the chain route the effector's own numbers."""
    return solvers.Effector(
        chain.n_bones - 1,
        position=np.asarray(target, dtype=float),
        pole=goals.get("pole"),
        pole_angle=goals.get("pole_angle", 0.0),
        orientation=goals.get("target_rotation"),
        rotation_weight=goals.get("rotation_weight", 1.0),
    )


def held(effector: solvers.Effector, goals: dict) -> dict:
    """`goals` with the tip orientation as `effector` holds it."""
    if effector.orientation is None:
        return goals
    return {**goals, "target_rotation": effector.orientation}


def outcome(call):
    """(result, None) or (None, the ValueError's message): both routes must refuse alike."""
    try:
        return call(), None
    except ValueError as exc:
        return None, str(exc)


@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=chain_cases())
def test_one_effector_is_solve_to_the_bit(method, case):
    drawn, target, goals = case
    chain, skeleton, local, pose = read(drawn)
    effector = effector_of(chain, target, goals)
    want, want_error = outcome(lambda: solvers.solve(chain, target, method=method, **held(effector, goals)))
    got, got_error = outcome(lambda: solvers.solve_skeleton(skeleton, local, [effector], method=method, pose=pose))
    assert got_error == want_error
    if want is None:
        return
    bones = list(range(chain.n_bones))
    assert np.array_equal(got.local, branch_locals(skeleton, local, bones, want.frames(chain)))
    assert got.error.tolist() == [want.error]
    assert (got.reached, got.iterations, got.method, got.reason) == (
        want.reached,
        want.iterations,
        want.method,
        want.reason,
    )


@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=chain_cases(), steps=st.integers(1, 12), moving_poles=st.booleans(), data=st.data())
def test_one_effector_sequence_is_solve_sequence_to_the_bit(method, case, steps, moving_poles, data):
    chain, target, goals = case
    end = data.draw(ik.reachable_targets(chain))
    s = np.linspace(0.0, 1.0, steps)[:, None]
    targets = target + s * (end - target)
    poles = None
    if "pole" in goals and moving_poles:  # a pole per frame
        poles = goals["pole"] + s * np.array([0.0, 0.1, -0.2])
    chain, skeleton, local, pose = read(chain)
    seq_goals = dict(goals) if poles is None else {**goals, "pole": poles}
    effector = effector_of(chain, target, goals)
    seq_goals = held(effector, seq_goals)
    want, want_error = outcome(lambda: solvers.solve_sequence(chain, targets, method=method, **seq_goals))
    got, got_error = outcome(
        lambda: solvers.solve_skeleton_sequence(
            skeleton,
            local,
            [effector],
            targets[:, None],
            method=method,
            poles=None if poles is None else poles[:, None],
            pose=pose,
        )
    )
    assert got_error == want_error
    if want is None:
        return
    bones = list(range(chain.n_bones))
    assert np.array_equal(got.local, branch_locals(skeleton, local, bones, want.frames))
    assert np.array_equal(got.error[:, 0], want.error)
    assert np.array_equal(got.reached, want.reached) and np.array_equal(got.iterations, want.iterations)
    assert (got.method, got.reason) == (want.method, want.reason)


@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=chain_cases())
def test_one_effector_next_starts_as_a_chain(method, case):
    from solvers.skeleton_sequence import chain_restarts

    """Frame 0 (and, with a pole, every frame) from the input pose: solve's numbers; without a
    pole a later frame continues the last solution, unless it starts straight: then the frame is
    solved from its input pose too and keep_own chooses (a bake frame then equals a Solve from its
    input pose)."""
    drawn, target, goals = case
    chain, skeleton, local, pose = read(drawn)
    effector = effector_of(chain, target, goals)
    want, want_error = outcome(lambda: solvers.solve(chain, target, method=method, **held(effector, goals)))
    first, first_error = outcome(
        lambda: solvers.solve_skeleton_next(skeleton, local, [effector], method=method, pose=pose)
    )
    assert first_error == want_error
    if want is None:
        return
    bones = list(range(chain.n_bones))
    assert np.array_equal(first.local, branch_locals(skeleton, local, bones, want.frames(chain)))
    moved = quat.normalize(local + 0.05)  # some other previous solution
    pose = pose if "pole" in goals else None  # the pose of the start it takes
    again, again_error = outcome(
        lambda: solvers.solve_skeleton_next(skeleton, local, [effector], moved, method=method, pose=pose)
    )
    start = local if "pole" in goals else moved
    want, want_error = outcome(lambda: solvers.solve_skeleton(skeleton, start, [effector], method=method, pose=pose))
    assert again_error == want_error
    if want is None:
        return
    if "pole" in goals or not chain_restarts(skeleton, moved, effector, want, None):
        assert np.array_equal(again.local, want.local)
        return
    own = solvers.solve_skeleton(skeleton, local, [effector], method=method, pose=pose)
    assert any(np.array_equal(again.local, s.local) for s in (want, own))


def test_a_pole_on_some_frames_only_says_so():
    chain = solvers.Chain([[0, 0, 0], [0, 1, 0], [0, 2, 0], [0, 3, 0]], np.tile([1.0, 0, 0, 0], (3, 1)))
    skeleton, local = solvers.Skeleton.from_chain(chain)
    targets = np.array([[[1.0, 1.5, 0.0]], [[1.0, 1.6, 0.0]]])
    poles = np.array([[[0.0, 1.0, 2.0]], [[np.nan] * 3]])
    effector = solvers.Effector(2, position=targets[0, 0])
    got = solvers.solve_skeleton_sequence(skeleton, local, [effector], targets, method="fabrik", poles=poles)
    assert SOME_POLES in got.reason
    assert got.local.shape == (2, 3, 4)
