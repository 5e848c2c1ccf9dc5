"""Soft IK wired through the core's entry points (issue 20 item 2): `softness` on solvers.solve,
solve_batch, solve_sequence and on a tree's Effector (solve_skeleton, solve_skeleton_many,
solve_skeleton_sequence). Softness 0 is today's solve to the bit, for every method; softness > 0
puts the tip at Nicholas' soft distance from the chain's (branch's) root."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ik_strategies import chain_points, unit_vectors

import solvers
from solvers import stretch
from solvers.common import soft
from solvers.common.soft_goals import branch_reach

METHODS = sorted(solvers.METHODS)
shares = st.floats(0.01, 0.3)
SLOW = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def framed_chains(draw, min_bones: int = 2, max_bones: int = 5) -> solvers.Chain:
    """Chains of similar bones (so every distance near full reach is reachable), with frames."""
    n = draw(st.integers(min_bones, max_bones))
    lengths = draw(st.lists(st.floats(0.5, 1.5), min_size=n, max_size=n))
    root = draw(st.tuples(*[st.floats(-5.0, 5.0)] * 3))
    bends = draw(st.lists(st.floats(0.2, 1.2), min_size=n - 1, max_size=n - 1))
    azimuths = draw(st.lists(st.floats(0.0, 2.0 * math.pi), min_size=n - 1, max_size=n - 1))
    points = chain_points(root, lengths, draw(unit_vectors()), bends, azimuths)
    return solvers.Chain(points, _frames(points))


def _frames(points: np.ndarray) -> np.ndarray:
    """Bone frames with Y along each bone (the minimal turn from +Y)."""
    out = []
    for a, b in zip(points[:-1], points[1:], strict=True):
        d = (b - a) / np.linalg.norm(b - a)
        out.append(solvers.quat.swing(np.array([0.0, 1.0, 0.0]), d, np.array([1.0, 0.0, 0.0])))
    return np.array(out)


@st.composite
def targets_near_reach(draw, chain: solvers.Chain, m: int = 1) -> np.ndarray:
    """m targets at 0.6..1.6 of the chain's reach (through the soft zone and beyond)."""
    rows = [chain.root + chain.total_length * draw(st.floats(0.6, 1.6)) * draw(unit_vectors()) for _ in range(m)]
    return np.array(rows)


def _same(a, b) -> None:
    for field in ("points", "rotations", "error", "reached", "iterations"):
        x, y = np.asarray(getattr(a, field)), np.asarray(getattr(b, field))
        assert x.tobytes() == y.tobytes(), field


@pytest.mark.parametrize("method", METHODS)
@SLOW
@given(st.data())
def test_softness_zero_is_todays_solve_to_the_bit(method, data):
    chain = data.draw(framed_chains())
    t = data.draw(targets_near_reach(chain, 3))
    pole = chain.root + data.draw(unit_vectors()) * 2.0 if data.draw(st.booleans()) else None
    _same(
        solvers.solve(chain, t[0], method=method, softness=0.0, pole=pole),
        solvers.solve(chain, t[0], method=method, pole=pole),
    )
    _same(solvers.solve_batch(chain, t, method=method, softness=0), solvers.solve_batch(chain, t, method=method))
    a = solvers.solve_sequence(chain, t, method=method, softness=0.0)
    b = solvers.solve_sequence(chain, t, method=method)
    assert a.points.tobytes() == b.points.tobytes() and a.frames.tobytes() == b.frames.tobytes()
    skeleton, local = solvers.Skeleton.from_chain(chain)
    one = [solvers.Effector(chain.n_bones - 1, t[0], softness=0.0)]
    plain = [solvers.Effector(chain.n_bones - 1, t[0])]
    x = solvers.solve_skeleton(skeleton, local, one, method=method)
    y = solvers.solve_skeleton(skeleton, local, plain, method=method)
    assert x.local.tobytes() == y.local.tobytes() and x.error.tobytes() == y.error.tobytes()


def _tip_distance(chain, points) -> float:
    return float(np.linalg.norm(np.asarray(points)[-1] - chain.root))


@pytest.mark.parametrize("method", METHODS)
@SLOW
@given(st.data())
def test_softness_puts_the_tip_at_the_soft_distance(method, data):
    chain = data.draw(framed_chains())
    share = data.draw(shares)
    t = data.draw(targets_near_reach(chain, 3))
    reach = chain.total_length
    want = [soft.soft_distance(float(np.linalg.norm(x - chain.root)), reach, share) for x in t]
    tol = 1e-5 * reach
    sol = solvers.solve(chain, t[0], method=method, softness=share)
    soft_target = soft.soften_target(chain.root, t[0], reach, share)
    assert sol.error == pytest.approx(float(np.linalg.norm(np.asarray(sol.points[-1]) - soft_target)), abs=1e-12)
    if sol.reached:  # then the tip is at the soft distance, on the root-target line
        assert abs(_tip_distance(chain, sol.points) - want[0]) <= tol * 1.0001
    else:  # only the iterative methods may stop short; never beyond the soft target's distance + tol
        assert method != "triangulation"
    batch = solvers.solve_batch(chain, t, method=method, softness=share)
    for k in range(3):
        if batch.reached[k]:
            assert abs(_tip_distance(chain, batch.points[k]) - want[k]) <= tol * 1.0001
    seq = solvers.solve_sequence(chain, t, method=method, softness=share)
    for k in range(3):
        if seq.reached[k]:
            assert abs(_tip_distance(chain, seq.points[k]) - want[k]) <= tol * 1.0001
    skeleton, local = solvers.Skeleton.from_chain(chain)
    assert branch_reach(skeleton, chain.n_bones - 1) == pytest.approx(reach, rel=1e-12)
    tree = solvers.solve_skeleton(
        skeleton, local, [solvers.Effector(chain.n_bones - 1, t[0], softness=share)], method=method
    )
    if tree.reached:
        end = skeleton.forward(tree.local)[2][-1]
        assert abs(float(np.linalg.norm(end - chain.root)) - want[0]) <= tol * 1.0001
    # A lone chain's bake: one effector's frames go to solve_sequence, softened once on the way.
    effector = solvers.Effector(chain.n_bones - 1, t[0], softness=share)
    frames = solvers.solve_skeleton_sequence(skeleton, local, [effector], t[:, None], method=method)
    for k in range(3):
        if frames.reached[k]:
            end = skeleton.forward(frames.local[k])[2][-1]
            assert abs(float(np.linalg.norm(end - chain.root)) - want[k]) <= tol * 1.0001


def test_triangulation_reaches_every_soft_target_exactly():
    """The exact method: the tip at the formula's distance for a sweep through full reach."""
    chain = solvers.Chain([[0, 0, 0], [0, 0.5, 0.1], [0, 1.0, 0.0]])
    reach, share = chain.total_length, 0.05
    u = np.array([0.0, 0.6, 0.8])
    t = chain.root + np.outer(np.linspace(0.8, 1.3, 101) * reach, u)
    sol = solvers.solve_batch(chain, t, method="triangulation", softness=share)
    assert np.all(sol.reached)
    got = np.linalg.norm(sol.points[:, -1] - chain.root, axis=1)
    want = soft.soft_distances(np.linalg.norm(t - chain.root, axis=1), reach, share)
    assert np.max(np.abs(got - want)) < 1e-12 * 100


def _tree():
    """A Y: a spine of two bones and two arms of two bones each."""
    parents = (-1, 0, 1, 2, 1, 4)
    heads = [[0, 0, 0], [0, 0, 1], [0.2, 0, 2], [0.9, 0, 2], [-0.2, 0, 2], [-0.9, 0, 2]]
    tails = [[0, 0, 1], [0, 0, 2], [0.9, 0, 2], [1.6, 0, 2], [-0.9, 0, 2], [-1.6, 0, 2]]
    return solvers.Skeleton.from_bones(parents, heads, tails)


@pytest.mark.parametrize("method", METHODS)
def test_tree_effectors_soften_from_the_group_root(method):
    skeleton, local = _tree()
    reach = branch_reach(skeleton, 3)
    assert reach == pytest.approx(1.0 + math.hypot(0.2, 1.0) + 0.7 + 0.7)
    far = [np.array([2.5, 0.0, 2.5]), np.array([-0.8, 0.5, 1.6])]
    share = 0.1
    soft_effectors = [solvers.Effector(3, far[0], softness=share), solvers.Effector(5, far[1], softness=share)]
    plain = [
        solvers.Effector(3, soft.soften_target(np.zeros(3), far[0], reach, share)),
        solvers.Effector(5, soft.soften_target(np.zeros(3), far[1], branch_reach(skeleton, 5), share)),
    ]
    a = solvers.solve_skeleton(skeleton, local, soft_effectors, method=method)
    b = solvers.solve_skeleton(skeleton, local, plain, method=method)
    assert a.local.tobytes() == b.local.tobytes()
    zero = [solvers.Effector(e.bone, e.position, softness=0.0) for e in plain]
    assert solvers.solve_skeleton(skeleton, local, zero, method=method).local.tobytes() == b.local.tobytes()
    positions = np.array([far, [far[0] * 0.9, far[1]]])
    many = solvers.solve_skeleton_many(skeleton, local, soft_effectors, positions, method=method)
    assert np.allclose(many.local[0], a.local, atol=1e-9) or not many.reached[0] == a.reached
    seq = solvers.solve_skeleton_sequence(skeleton, local, soft_effectors, positions, method=method)
    for f in range(2):  # the soft positions were solved (each effector's error is from its soft goal)
        ends = skeleton.forward(seq.local[f])[2]
        goals = [soft.soften_target(np.zeros(3), positions[f, j], branch_reach(skeleton, e.bone), share)
                 for j, e in enumerate(soft_effectors)]  # fmt: skip
        errors = [np.linalg.norm(ends[e.bone] - g) for e, g in zip(soft_effectors, goals, strict=True)]
        assert np.allclose(errors, seq.error[f], atol=1e-12)


@pytest.mark.parametrize("bad", [-0.1, 1.0, 1.5, float("nan"), float("inf"), "a", True, None])
def test_bad_softness_is_refused(bad):
    chain = solvers.Chain([[0, 0, 0], [0, 1, 0], [0, 2, 0]])
    with pytest.raises(ValueError, match="softness"):
        solvers.solve(chain, [1, 1, 0], method="fabrik", softness=bad)
    with pytest.raises(ValueError, match="softness"):
        solvers.solve_batch(chain, [[1, 1, 0]], method="fabrik", softness=bad)
    with pytest.raises(ValueError, match="softness"):
        solvers.solve_sequence(chain, [[1, 1, 0]], method="fabrik", softness=bad)
    with pytest.raises(ValueError, match="softness"):
        solvers.Effector(1, [1, 1, 0], softness=bad)


def test_stretch_plans_the_soft_stretch():
    """A stretchable chain plans Nicholas' soft stretch (stretch.stretch_points): from D_s
    on it lengthens by d / soft(d), so the target is solved as it is (and reached)."""
    points = [(0.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 2.0, 0.0)]
    frames = [[[1, 0, 0], [0, 1, 0], [0, 0, 1]]] * 2
    share = 0.1
    for d in (1.5, 1.85, 1.95, 2.0, 2.5, 4.0):
        _, world, _, new = stretch.stretch_points(points, frames, [1.0, 1.0], [False, False], (0, d, 0), share)
        got = math.fsum(math.dist(a, b) for a, b in zip(new[:-1], new[1:], strict=True))
        assert got == pytest.approx(soft.soft_stretch(d, 2.0, share), rel=1e-12)
        _, plain, _, _ = stretch.stretch_points(points, frames, [1.0, 1.0], [False, False], (0, d, 0))
        assert (max(world) > 1.0) == (d > 1.8) and (max(plain) > 1.0) == (d > 2.0)


def test_tree_stretch_clears_softness_where_it_stretched():
    from solvers.skeleton_stretch import stretch_skeleton

    skeleton, local = _tree()
    share = 0.1
    effectors = [
        solvers.Effector(3, [3.5, 0.0, 2.0], softness=share),
        solvers.Effector(5, [-1.0, 0.3, 1.8], softness=share),
    ]
    out = stretch_skeleton(skeleton, local, effectors, [0, 0, 1.0, 1.0, 0, 0], [False] * 6)
    assert out.effectors[0].softness == 0.0 and out.effectors[1].softness == share
    alone = stretch_skeleton(skeleton, local, effectors[:1], [0, 0, 1.0, 1.0, 0, 0], [False] * 6)
    exact = stretch_skeleton(
        skeleton, local, [effectors[0].__class__(3, [3.5, 0.0, 2.0])], [0, 0, 1.0, 1.0, 0, 0], [False] * 6
    )
    # Stretched: the target itself is solved (alone: the other arm pulls the spine away), and reached
    # at least as closely as with today's stretch (FABRIK and CCD creep toward a nearly straight
    # branch: 6.5e-3 and 6.2e-2 off today, 1.4e-3 and 5.1e-2 soft; the others reach it).
    for method in METHODS:
        sol = solvers.solve_skeleton(alone.skeleton, local, list(alone.effectors), method=method)
        today = solvers.solve_skeleton(exact.skeleton, local, list(exact.effectors), method=method)
        assert sol.error[0] <= max(today.error[0], 1e-4), method
        if method in ("jacobian", "triangulation"):
            assert sol.error[0] < 1e-4, method
    plain = stretch_skeleton(
        skeleton, local, [solvers.Effector(3, [3.5, 0.0, 2.0])], [0, 0, 1.0, 1.0, 0, 0], [False] * 6
    )
    # Beyond reach the soft stretch is a little more than today's (D/soft(d) - 1 = e^-x/9 here,
    # x = (d - D_s)/s = 2.8) and approaches it far beyond.
    assert 1.0 < out.world[2] / plain.world[2] < 1.0 + 0.02
