"""What every tree method promises about ranking effectors (issue 22, classes 2, 3 and 9):

- pins hold: a pin is the highest priority level; whatever the targets do, every method keeps it
  within the tolerance (position, and its bone's frame as an arc of its branch), and a pin that
  cannot hold is named in the reason;
- weights: in a conflict the heavier effector ends closer;
- priorities: a higher-priority effector is never worse off than with equal priorities;
- two effectors on one bone: every method ends that bone at their weighted mean (Blender's tree IK).
"""

from dataclasses import replace

import numpy as np
import pytest
import tree_shapes
from hypothesis import given, settings
from hypothesis import strategies as st

import solvers
from solvers import quat, registry
from solvers.skeleton_floats import moved_bones

METHODS = [m.name for m in registry.METHOD_LIST if m.tree is not None]


def _tolerance(skeleton, bones) -> float:
    return solvers.DEFAULT_RELATIVE_TOLERANCE * float(np.sum(skeleton.lengths[moved_bones(skeleton, bones)]))


def _far(skeleton, local, bone, rng, low=0.2, high=4.0) -> np.ndarray:
    _, _, ends = skeleton.forward(local)
    d = rng.normal(size=3)
    return ends[bone] + rng.uniform(low, high) * d / np.linalg.norm(d)


def test_every_tree_method_is_covered():
    assert set(METHODS) == {"triangulation", "fabrik", "ccd", "jacobian"}


@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=25)
@given(seed=st.integers(0, 2**32 - 1), limited=st.booleans())
def test_pins_hold_whatever_the_targets_do(method, seed, limited):
    """Random trees (hinges and cones or none), some effectors pinned where the input pose has them,
    the others pulled 0.2-4 away in random directions (often beyond reach), any priorities: every
    pin ends within the tolerance, its bone's frame too, in every method."""
    rng = np.random.default_rng(seed)
    skeleton, local, bones = tree_shapes.random_tree(rng, limited=limited)
    pinned = int(rng.integers(1, len(bones)))
    effectors = [solvers.Effector(b, pin=True, priority=int(rng.integers(0, 3))) for b in bones[:pinned]]
    effectors += [
        solvers.Effector(b, _far(skeleton, local, b, rng), weight=float(rng.uniform(0.5, 5.0)), priority=int(p))
        for b, p in zip(bones[pinned:], rng.integers(0, 2, len(bones) - pinned), strict=True)
    ]
    tolerance = _tolerance(skeleton, bones)
    sol = solvers.solve_skeleton(skeleton, local, effectors, method=method)
    frames, _, ends = skeleton.forward(local)
    got, _, got_ends = skeleton.forward(sol.local)
    for e in effectors[:pinned]:
        assert np.linalg.norm(got_ends[e.bone] - ends[e.bone]) <= tolerance
        turn = quat.angle(quat.multiply(got[e.bone], quat.conjugate(frames[e.bone])))
        assert turn * np.sum(skeleton.lengths[skeleton.branch(e.bone)]) <= tolerance * (1.0 + 1e-9)
    assert np.all(sol.error[:pinned] <= tolerance) and sol.unheld == () and "cannot hold" not in sol.reason


@pytest.mark.parametrize("method", METHODS)
def test_a_pin_beyond_reach_is_named_and_measured(method):
    """A pin given a point its branch cannot reach (say a Live pin whose base moved away): the solve
    holds it as near as it can and says so; the error is measured, not claimed."""
    skeleton, local, names = tree_shapes.humanoid()
    foot, hand = names["shin.L"], names["forearm.R"]
    _, _, ends = skeleton.forward(local)
    away = ends[foot] + np.array([0.0, 0.0, -2.0])  # two metres below the planted foot
    effectors = [solvers.Effector(foot, away, pin=True), solvers.Effector(hand, ends[hand] + [0.1, 0.1, 0.0])]
    sol = solvers.solve_skeleton(skeleton, local, effectors, method=method)
    assert "a pin cannot hold: its end is" in sol.reason and sol.unheld == (0,)
    assert not sol.reached and sol.error[0] > 1.0
    _, _, got = skeleton.forward(sol.local)
    assert sol.error[0] == pytest.approx(np.linalg.norm(got[foot] - away))


@pytest.mark.parametrize("method", ["fabrik", "ccd", "jacobian"])
def test_a_pin_given_its_point_does_not_creep_over_many_solves(method):
    """Live solves again and again from the last result: a pin given the same point every time
    (the point the user pinned) stays within the tolerance of it, however many solves, where
    re-reading it from the last result would let it creep by each solve's slack."""
    skeleton, local, names = tree_shapes.humanoid()
    foot, hand = names["shin.L"], names["forearm.R"]
    frames, _, ends = skeleton.forward(local)
    pin = solvers.Effector(foot, ends[foot], orientation=frames[foot], rotation_weight=1.0, pin=True)
    rng = np.random.default_rng(4)
    current, tolerance = local, _tolerance(skeleton, [foot, hand])
    for _ in range(60):
        target = ends[hand] + rng.normal(size=3) * 0.5 + [0.0, 0.0, 1.0]  # often out of reach
        current = solvers.solve_skeleton(skeleton, current, [pin, solvers.Effector(hand, target)], method=method).local
        assert np.linalg.norm(skeleton.forward(current)[2][foot] - ends[foot]) <= tolerance


def _conflict(seed):
    """A tree whose effectors are leaves (none on another's branch), each target beyond its
    branch's reach from the root: a true conflict."""
    rng = np.random.default_rng(seed)
    skeleton, local, bones = tree_shapes.random_tree(rng, leaves=True, pose=0.0)
    _, heads, _ = skeleton.forward(local)
    effectors = []
    for b in bones:
        branch = skeleton.branch(b)
        span = float(np.sum(skeleton.lengths[branch]) + np.linalg.norm(skeleton.offsets[branch[1:]], axis=1).sum())
        d = rng.normal(size=3)
        effectors.append(solvers.Effector(b, heads[0] + (span + rng.uniform(0.2, 2.0)) * d / np.linalg.norm(d)))
    return skeleton, local, effectors, int(rng.integers(len(bones)))


@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=20)
@given(seed=st.integers(0, 2**32 - 1))
def test_the_heavier_effector_ends_closer_in_a_conflict(method, seed):
    """Effector k weighted 10, 1 and 0.1 against the others' 1: its error never grows with its weight
    (what the weighted least-squares compromise does; another's weight may help or hurt it)."""
    skeleton, local, effectors, k = _conflict(seed)
    slack = _tolerance(skeleton, [e.bone for e in effectors])

    def error_of_k(weight):
        ranked = [replace(e, weight=weight) if j == k else e for j, e in enumerate(effectors)]
        return solvers.solve_skeleton(skeleton, local, ranked, method=method).error[k]

    heavy, even, light = error_of_k(10.0), error_of_k(1.0), error_of_k(0.1)
    assert heavy <= even + slack and even <= light + slack


@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=20)
@given(seed=st.integers(0, 2**32 - 1))
def test_a_higher_priority_is_never_worse_off(method, seed):
    skeleton, local, effectors, k = _conflict(seed)
    slack = _tolerance(skeleton, [e.bone for e in effectors])
    even = solvers.solve_skeleton(skeleton, local, effectors, method=method)
    first = [e if j == k else replace(e, priority=1) for j, e in enumerate(effectors)]
    ranked = solvers.solve_skeleton(skeleton, local, first, method=method)
    assert ranked.error[k] <= even.error[k] + slack


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("weights", [(1.0, 1.0), (3.0, 1.0)])
def test_two_effectors_on_one_bone_end_at_their_weighted_mean(method, weights):
    skeleton, local, names = tree_shapes.humanoid()
    hand, other = names["forearm.L"], names["forearm.R"]
    _, _, ends = skeleton.forward(local)
    a, b = ends[hand] + [-0.1, 0.2, 0.1], ends[hand] + [-0.1, -0.2, -0.1]  # each reachable, not both
    effectors = [
        solvers.Effector(hand, a, weight=weights[0]),
        solvers.Effector(other, ends[other] + [0.0, 0.05, 0.0]),
        solvers.Effector(hand, b, weight=weights[1]),
    ]
    tolerance = 1e-5
    sol = solvers.solve_skeleton(skeleton, local, effectors, method=method, tolerance=tolerance, max_iterations=300)
    _, _, got = skeleton.forward(sol.local)
    mean = (weights[0] * a + weights[1] * b) / sum(weights)
    assert np.linalg.norm(got[hand] - mean) <= tolerance
    assert sol.error[1] <= tolerance  # the other hand reaches as well
    np.testing.assert_allclose(sol.error[[0, 2]], np.linalg.norm(got[hand] - [a, b], axis=1), atol=1e-12)
    assert not sol.reached  # neither goal of the shared bone is met


def test_many_frames_hold_pins_and_merge_shared_bones_as_one_frame_does():
    """solve_skeleton_many (FABRIK's lanes) gives each frame solve_skeleton's pose: pins held,
    two effectors on one bone merged."""
    skeleton, local, names = tree_shapes.humanoid()
    hand, foot = names["forearm.L"], names["shin.R"]
    _, _, ends = skeleton.forward(local)
    rng = np.random.default_rng(2)
    m = 30
    positions = np.zeros((m, 3, 3))
    positions[:, 0] = ends[hand] + rng.normal(size=(m, 3)) * 0.3
    positions[:, 1] = ends[hand] + rng.normal(size=(m, 3)) * 0.3
    effectors = [
        solvers.Effector(hand, positions[0, 0], weight=2.0),
        solvers.Effector(hand, positions[0, 1]),
        solvers.Effector(foot, pin=True),
    ]
    batch = solvers.solve_skeleton_many(skeleton, local, effectors, positions, method="fabrik")
    assert batch.reason == ""
    for f in range(m):
        frame = [replace(e, position=positions[f, j]) if not e.pin else e for j, e in enumerate(effectors)]
        one = solvers.solve_skeleton(skeleton, local, frame, method="fabrik")
        np.testing.assert_allclose(np.abs(np.sum(batch.local[f] * one.local, axis=1)), 1.0, atol=1e-9)
        np.testing.assert_allclose(batch.error[f], one.error, atol=1e-9)
    assert np.all(batch.error[:, 2] <= _tolerance(skeleton, [hand, foot]))
