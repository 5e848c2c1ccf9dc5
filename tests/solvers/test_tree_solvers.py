"""Several effectors on one skeleton: the FABRIK and CCD tree kernels (solvers.tree)."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import tree_shapes
from hypothesis import given, settings
from hypothesis import strategies as st

import solvers
from solvers import limits as joint_limits
from solvers import quat, registry
from solvers import skeleton_floats as tree

_spec = importlib.util.spec_from_file_location("_goal_chains", Path(__file__).with_name("test_goals.py"))
goal_chains = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(goal_chains)

TREE_METHODS = ["fabrik", "ccd"]


@st.composite
def trees(draw, limited=False):
    """(skeleton, input local rotations, effector bones): 2..12 bones, each child's head at its
    parent's tail or beside it, 1..5 effectors on distinct bones."""
    n = draw(st.integers(2, 12))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    parents = [-1] + [int(rng.integers(0, i)) for i in range(1, n)]
    skeleton, local = tree_shapes.bones_on(rng, parents, limited)
    k = draw(st.integers(1, min(5, n)))
    bones = sorted(rng.choice(n, size=k, replace=False).tolist())
    return skeleton, local, bones, rng


def _check(skeleton, local, effectors, sol, tolerance):
    """Errors as measured on the returned pose; untouched bones as given; unit rotations."""
    assert sol.local.shape == local.shape and np.all(np.isfinite(sol.local))
    np.testing.assert_allclose(quat.norm(sol.local), 1.0, atol=1e-12)
    _, _, ends = skeleton.forward(sol.local)
    measured = [np.linalg.norm(ends[e.bone] - e.position) for e in effectors]
    np.testing.assert_allclose(sol.error, measured, atol=1e-15)
    assert sol.reached == bool(np.all(sol.error <= tolerance))
    moved = tree.moved_bones(skeleton, [e.bone for e in effectors])
    still = [i for i in range(skeleton.n_bones) if i not in moved]
    np.testing.assert_array_equal(sol.local[still], local[still])
    if skeleton.limits is not None:
        worst = joint_limits.violation(skeleton.limits.subset(moved), sol.local[moved])
        assert np.max(worst) <= 1e-9


@pytest.mark.parametrize("method", TREE_METHODS)
@settings(max_examples=25)
@given(data=st.data())
def test_random_trees_report_what_they_reach_within_their_limits(method, data):
    limited = data.draw(st.booleans())
    skeleton, local, bones, rng = data.draw(trees(limited=limited))
    targets, _ = tree_shapes.fk_targets(skeleton, local, bones, rng, spread=0.5)
    weights = rng.uniform(0.5, 2.0, size=len(bones)).tolist()
    effectors = [solvers.Effector(b, t, weight=w) for b, t, w in zip(bones, targets, weights, strict=True)]
    tolerance = 1e-4
    sol = solvers.solve_skeleton(skeleton, local, effectors, method=method, tolerance=tolerance, max_iterations=30)
    _check(skeleton, local, effectors, sol, tolerance)


def _tree_from(rng):
    n = int(rng.integers(2, 13))
    parents = [-1] + [int(rng.integers(0, i)) for i in range(1, n)]
    heads, tails = np.zeros((n, 3)), np.zeros((n, 3))
    for i, p in enumerate(parents):
        heads[i] = 0.0 if p == -1 else tails[p] + (rng.normal(size=3) * 0.1 if rng.random() < 0.3 else 0.0)
        d = rng.normal(size=3)
        tails[i] = heads[i] + rng.uniform(0.3, 1.0) * d / np.linalg.norm(d)
    skeleton, local = solvers.Skeleton.from_bones(parents, heads, tails)
    k = int(rng.integers(1, min(5, n) + 1))
    return skeleton, local, sorted(rng.choice(n, size=k, replace=False).tolist())


@pytest.mark.parametrize(("method", "relative", "cap", "share"), [("fabrik", 1e-3, 100, 0.95), ("ccd", 1e-3, 300, 0.9)])
def test_random_trees_reach_targets_made_by_forward_kinematics(method, relative, cap, share):
    """Measured, not promised for every tree: a fixed set of 60 random trees with 1-5 effectors
    (targets from random FK poses); the share that reaches within `relative` x the moved length.
    (FABRIK can settle short where a one-bone branch and its sub-base pull against each other.)"""
    reached = []
    for seed in range(60):
        rng = np.random.default_rng(seed)
        skeleton, local, bones = _tree_from(rng)
        targets, _ = tree_shapes.fk_targets(skeleton, local, bones, rng, spread=0.5)
        effectors = [solvers.Effector(b, t) for b, t in zip(bones, targets, strict=True)]
        tolerance = relative * float(np.sum(skeleton.lengths[tree.moved_bones(skeleton, bones)]))
        sol = solvers.solve_skeleton(skeleton, local, effectors, method=method, tolerance=tolerance, max_iterations=cap)
        _check(skeleton, local, effectors, sol, tolerance)
        reached.append(sol.reached)
    assert np.mean(reached) >= share, np.flatnonzero(~np.array(reached))


@pytest.mark.parametrize("method", TREE_METHODS)
def test_humanoid_reaches_targets_made_by_forward_kinematics(method):
    skeleton, local, names = tree_shapes.humanoid()
    bones = [names[b] for b in ("forearm.L", "forearm.R", "head", "shin.L", "shin.R")]
    length = float(np.sum(skeleton.lengths))
    tolerance, cap = (1e-3 * length, 100) if method == "fabrik" else (1e-2 * length, 300)
    for seed in range(5):
        targets, _ = tree_shapes.fk_targets(skeleton, local, bones, np.random.default_rng(seed))
        effectors = [solvers.Effector(b, t) for b, t in zip(bones, targets, strict=True)]
        sol = solvers.solve_skeleton(skeleton, local, effectors, method=method, tolerance=tolerance, max_iterations=cap)
        assert sol.reached, (seed, sol.error)


@pytest.mark.parametrize("method", TREE_METHODS)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_one_effector_on_a_chain_solves_as_the_chain(method, seed):
    chain = goal_chains.bent_chain([1.0, 0.8, 0.5, 0.4], [0.4, 0.3, 0.2])
    skeleton, local = solvers.Skeleton.from_chain(chain)
    (target, _), *_ = goal_chains.pole_targets(chain, 1, seed=seed)
    effector = solvers.Effector(bone=3, position=target)
    chain_path = solvers.solve_skeleton(skeleton, local, [effector], method=method)
    entry = registry.get(method)
    tol = solvers.DEFAULT_RELATIVE_TOLERANCE * chain.total_length
    tree_path = entry.tree(skeleton, local, [effector], tol, entry.max_iterations, entry.defaults)
    assert tree_path.reached == chain_path.reached
    assert tree_path.iterations == chain_path.iterations
    np.testing.assert_allclose(np.abs(np.sum(tree_path.local * chain_path.local, axis=1)), 1.0, atol=1e-9)
    np.testing.assert_allclose(tree_path.error, chain_path.error, atol=1e-9 * chain.total_length)


@pytest.mark.parametrize("method", TREE_METHODS)
def test_pinned_feet_stay_while_the_arms_move(method):
    skeleton, local, names = tree_shapes.humanoid()
    arms = [names["forearm.L"], names["forearm.R"]]
    feet = [names["shin.L"], names["shin.R"]]
    frames, _, ends = skeleton.forward(local)
    # Arm targets the upper body can reach with the hips and legs as they are.
    upper = [names[b] for b in ("spine", "chest", "shoulder.L", "upper_arm.L", "forearm.L")]
    upper += [names[b] for b in ("shoulder.R", "upper_arm.R", "forearm.R")]
    rng = np.random.default_rng(7)
    posed = np.array(local)
    turns = quat.from_rotation_vector(rng.normal(size=(len(upper), 3)) * 0.25)
    posed[upper] = quat.multiply(posed[upper], turns)
    targets = skeleton.forward(posed)[2][arms]
    effectors = [solvers.Effector(b, t) for b, t in zip(arms, targets, strict=True)]
    effectors += [solvers.Effector(b, pin=True) for b in feet]
    tolerance = 1e-4
    sol = solvers.solve_skeleton(skeleton, local, effectors, method=method, tolerance=tolerance, max_iterations=300)
    new_frames, _, new_ends = skeleton.forward(sol.local)
    np.testing.assert_allclose(new_ends[feet], ends[feet], atol=tolerance)
    turned = quat.angle(quat.multiply(new_frames[feet], quat.conjugate(frames[feet])))
    assert np.all(turned < 1e-3), turned
    start = np.linalg.norm(targets - ends[arms], axis=1)
    assert np.all(sol.error[:2] < 0.2 * start), (sol.error, start)
    if method == "fabrik":
        assert sol.reached, sol.error


@pytest.mark.parametrize("method", TREE_METHODS)
def test_conflicting_targets_settle_on_a_weighted_compromise(method):
    skeleton, local, names = tree_shapes.humanoid()
    bones = [names[b] for b in ("forearm.L", "forearm.R", "head", "shin.L", "shin.R")]
    _, heads, _ = skeleton.forward(local)
    targets, _ = tree_shapes.fk_targets(skeleton, local, bones, np.random.default_rng(3))
    far = []
    for b, t in zip(bones, targets, strict=True):
        branch = skeleton.branch(b)
        d = (t - heads[branch[0]]) / np.linalg.norm(t - heads[branch[0]])
        far.append(heads[branch[0]] + d * (np.sum(skeleton.lengths[branch]) + 0.2))
    cap = registry.get(method).max_iterations
    effectors = [solvers.Effector(b, t) for b, t in zip(bones, far, strict=True)]
    plain = solvers.solve_skeleton(skeleton, local, effectors, method=method)
    assert not plain.reached and plain.iterations <= cap and np.all(np.isfinite(plain.error))
    heavy = [solvers.Effector(b, t, weight=20.0 if b == bones[0] else 1.0) for b, t in zip(bones, far, strict=True)]
    weighted = solvers.solve_skeleton(skeleton, local, heavy, method=method)
    assert weighted.iterations <= cap and np.all(np.isfinite(weighted.error))
    assert weighted.error[0] < plain.error[0]


def test_a_pole_turns_its_own_arm_and_keeps_the_reach():
    skeleton, local, names = tree_shapes.humanoid()
    arm, other = names["forearm.L"], names["forearm.R"]
    top = names["shoulder.L"]  # the arm's own segment hangs from the chest, a sub-base
    targets, _ = tree_shapes.fk_targets(skeleton, local, [arm, other], np.random.default_rng(5))
    for side in (1.0, -1.0):
        pole = np.array([0.4, side, 1.4])
        effectors = [solvers.Effector(arm, targets[0], pole=pole), solvers.Effector(other, targets[1])]
        sol = solvers.solve_skeleton(skeleton, local, effectors, method="fabrik", tolerance=1e-4)
        assert sol.reached, sol.error
        frames, heads, _ = skeleton.forward(sol.local)
        # Blender's convention: the segment's top bone's X axis toward the pole, across the
        # line from its head to the target.
        line = quat.normalize(targets[0] - heads[top])
        up = quat.rotate(frames[top], np.array([1.0, 0.0, 0.0]))
        to_pole = pole - heads[top]
        up, to_pole = up - np.dot(up, line) * line, to_pole - np.dot(to_pole, line) * line
        assert np.dot(up, to_pole) > 0.99 * np.linalg.norm(up) * np.linalg.norm(to_pole)


def test_an_orientation_goal_turns_its_bone():
    skeleton, local, names = tree_shapes.humanoid()
    bones = [names["forearm.L"], names["forearm.R"]]
    targets, posed = tree_shapes.fk_targets(skeleton, local, bones, np.random.default_rng(4))
    frames = skeleton.forward(posed)[0]
    plain = [solvers.Effector(b, t) for b, t in zip(bones, targets, strict=True)]
    free = solvers.solve_skeleton(skeleton, local, plain, method="fabrik")
    held = [solvers.Effector(b, t, orientation=frames[b]) for b, t in zip(bones, targets, strict=True)]
    for method in TREE_METHODS:
        sol = solvers.solve_skeleton(skeleton, local, held, method=method, tolerance=1e-3, max_iterations=200)
        got = skeleton.forward(sol.local)[0]
        angle = quat.angle(quat.multiply(got[bones], quat.conjugate(frames[bones])))
        was = quat.angle(quat.multiply(skeleton.forward(free.local)[0][bones], quat.conjugate(frames[bones])))
        assert np.all(angle <= was + 1e-9), (method, angle, was)
        if method == "fabrik":
            assert np.all(angle < 0.05), angle


def test_sphere_placement_is_refused_by_name_on_trees():
    skeleton, local, bones = tree_shapes.y_tree()
    _, _, ends = skeleton.forward(local)
    effectors = [solvers.Effector(b, ends[b]) for b in bones]
    with pytest.raises(ValueError, match="sphere"):
        solvers.solve_skeleton(skeleton, local, effectors, method="fabrik", placement="sphere")


@pytest.mark.parametrize("method", TREE_METHODS)
def test_a_cached_plan_solves_as_a_fresh_one(method):
    """Plans are cached by skeleton and effector structure; targets and orientations are each call's."""
    from solvers.common import tree_plan as plan

    skeleton, local, names = tree_shapes.humanoid()
    bones = [names["forearm.L"], names["head"]]
    rng = np.random.default_rng(11)
    poses = [tree_shapes.fk_targets(skeleton, local, bones, rng) for _ in range(2)]
    frames = [skeleton.forward(posed)[0] for _, posed in poses]

    def effectors(k):
        targets = poses[k][0]
        held = solvers.Effector(bones[0], targets[0], orientation=frames[k][bones[0]])
        return [held, solvers.Effector(bones[1], targets[1])]

    solvers.solve_skeleton(skeleton, local, effectors(0), method=method)
    cached = solvers.solve_skeleton(skeleton, local, effectors(1), method=method)
    plan._CACHE.plans.clear()
    fresh = solvers.solve_skeleton(skeleton, local, effectors(1), method=method)
    np.testing.assert_array_equal(cached.local, fresh.local)
    assert cached.iterations == fresh.iterations


def test_ccd_spreads_its_turns_over_the_tree(monkeypatch):
    """CCD's sweeps on several effectors hold each bone's turn back by its depth (ccd.tree.SPREAD):
    the same jointly reachable targets are reached with less summed turning than plain sweeps,
    whose tips turn the whole way first (bench/bench_tree.py: 1.5-2.0x Blender's rotation cost
    plain, 1.04-1.16x spread)."""
    from solvers.ccd import tree as ccd_tree
    from solvers.common import tree_plan

    skeleton, local, names = tree_shapes.humanoid()
    bones = [names[b] for b in ("forearm.L", "forearm.R", "head", "shin.L", "shin.R")]
    tolerance = 1e-5 * float(np.sum(skeleton.lengths))

    def costs() -> tuple[float, bool]:  # summed turn (radians) over 8 target sets, all reached
        total, reached = 0.0, True
        for seed in range(8):
            targets, _ = tree_shapes.fk_targets(skeleton, local, bones, np.random.default_rng(seed))
            effectors = [solvers.Effector(b, t) for b, t in zip(bones, targets, strict=True)]
            sol = solvers.solve_skeleton(skeleton, local, effectors, method="ccd", tolerance=tolerance)
            reached &= bool(sol.reached)
            total += float(np.sum(quat.angle(quat.multiply(quat.conjugate(local), sol.local))))
        return total, reached

    spread, spread_reached = costs()
    monkeypatch.setattr(ccd_tree, "SPREAD", 0.0)
    tree_plan._CACHE.__dict__.clear()  # the plans keep their kernels' steps
    plain, plain_reached = costs()
    assert spread_reached  # (plain sweeps miss one of these at the default cap)
    assert spread < 0.9 * plain, (spread, plain, plain_reached)  # 24.1 vs 29.0 radians
