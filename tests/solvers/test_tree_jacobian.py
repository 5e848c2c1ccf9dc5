"""The Jacobian family on several effectors (solvers.tree.jacobian): reach on FK-made targets, limits,
strict priorities, the nullspace pull, pins, orientation goals, the least-squares compromise."""

import numpy as np
import pytest
import tree_shapes
from hypothesis import given, settings
from hypothesis import strategies as st

import solvers
from solvers import limits as joint_limits
from solvers import quat
from solvers.jacobian import tree as tree_jacobian
from solvers.jacobian import tree_steps

SETS = {
    2: ["forearm.L", "forearm.R"],
    3: ["forearm.L", "forearm.R", "head"],
    5: ["forearm.L", "forearm.R", "head", "shin.L", "shin.R"],
}
SKELETON, LOCAL, NAMES = tree_shapes.humanoid()


def effectors(count, seed, **kw):
    bones = [NAMES[n] for n in SETS[count]]
    targets, posed = tree_shapes.fk_targets(SKELETON, LOCAL, bones, np.random.default_rng(seed))
    return [solvers.Effector(b, t, **kw) for b, t in zip(bones, targets, strict=True)], posed


def measured(skeleton, sol, effs):
    _, _, ends = skeleton.forward(sol.local)
    return np.array([np.linalg.norm(ends[e.bone] - e.position) for e in effs])


def tolerance(skeleton, effs):
    moved = sorted({b for e in effs for b in skeleton.branch(e.bone)})
    return solvers.DEFAULT_RELATIVE_TOLERANCE * float(np.sum(skeleton.lengths[moved]))


@settings(max_examples=30)
@given(st.sampled_from([2, 3, 5]), st.sampled_from(["dls", "pseudoinverse"]), st.integers(0, 2**16))
def test_fk_targets_are_reached_and_errors_are_measured(count, variant, seed):
    effs, _ = effectors(count, seed)
    sol = solvers.solve_skeleton(SKELETON, LOCAL, effs, method="jacobian", variant=variant)
    assert sol.reached and sol.iterations <= solvers.REGISTRY["jacobian"].max_iterations
    np.testing.assert_allclose(sol.error, measured(SKELETON, sol, effs), rtol=0, atol=1e-12)
    assert np.allclose(quat.norm(sol.local), 1.0)
    untouched = [b for b in range(SKELETON.n_bones) if not any(b in SKELETON.branch(e.bone) for e in effs)]
    np.testing.assert_array_equal(sol.local[untouched], LOCAL[untouched])


def test_transpose_makes_progress_and_measures_its_error():
    effs, _ = effectors(3, 4)
    sol = solvers.solve_skeleton(SKELETON, LOCAL, effs, method="jacobian", variant="transpose")
    start = measured(SKELETON, solvers.SkeletonSolution(LOCAL, None, False, 0, ""), effs)
    assert np.sum(sol.error**2) < 0.05 * np.sum(start**2)
    np.testing.assert_allclose(sol.error, measured(SKELETON, sol, effs), atol=1e-12)


def limited_humanoid(rng):
    n = SKELETON.n_bones
    lock = rng.random((n, 3)) < 0.2
    half = np.radians(rng.uniform(10.0, 90.0, size=(n, 3)))
    limits = solvers.make_limits(
        n,
        lock=lock,
        use_limit=rng.random((n, 3)) < 0.7,
        minimum=-half,
        maximum=half,
        stiffness=np.where(rng.random((n, 3)) < 0.3, rng.uniform(0.0, 0.9, size=(n, 3)), 0.0),
    )
    return solvers.Skeleton(
        SKELETON.parents,
        SKELETON.offsets,
        SKELETON.links,
        SKELETON.lengths,
        SKELETON.reference,
        SKELETON.base_frame,
        limits,
    )


@settings(max_examples=25)
@given(st.sampled_from([2, 5]), st.sampled_from(["dls", "pseudoinverse", "transpose"]), st.integers(0, 2**16))
def test_limits_are_never_violated(count, variant, seed):
    rng = np.random.default_rng(seed)
    skeleton = limited_humanoid(rng)
    effs, _ = effectors(count, seed)
    sol = solvers.solve_skeleton(skeleton, LOCAL, effs, method="jacobian", variant=variant, max_iterations=60)
    assert np.all(joint_limits.violation(skeleton.limits, sol.local) <= 1e-9)
    assert np.all(np.isfinite(sol.local))
    np.testing.assert_allclose(sol.error, measured(skeleton, sol, effs), atol=1e-12)


@settings(max_examples=20)
@given(st.integers(0, 2**16))
def test_a_higher_priority_is_solved_exactly_when_a_lower_one_conflicts(seed):
    effs, _ = effectors(2, seed)
    far = solvers.Effector(NAMES["head"], [0.0, 3.0, 4.0], priority=1)  # out of reach, pulls the spine
    sol = solvers.solve_skeleton(SKELETON, LOCAL, [*effs, far], method="jacobian")
    tol = tolerance(SKELETON, [*effs, far])
    assert np.all(sol.error[:2] <= tol), sol.error
    flat = solvers.solve_skeleton(SKELETON, LOCAL, [*effs, solvers.Effector(far.bone, far.position)], method="jacobian")
    assert sol.error[2] >= flat.error[2] - 1e-9  # the lower level gave way, it did not win
    assert sol.iterations < solvers.REGISTRY["jacobian"].max_iterations  # stopped when progress stalled


def tree_of(effs):
    return tree_jacobian.Tree(SKELETON, effs)


@settings(max_examples=30)
@given(st.sampled_from([2, 3, 5]), st.sampled_from(["rest", "input"]), st.integers(0, 2**16))
def test_the_nullspace_pull_lowers_h_and_leaves_the_goals_to_first_order(count, attractor, seed):
    effs, posed = effectors(count, seed)
    tree = tree_of(effs)
    local = posed[tree.moved]
    rng = np.random.default_rng(seed)
    anchor = quat.from_rotation_vector(rng.normal(scale=0.4, size=(len(local), 3))) if attractor == "input" else None
    anchor = np.array([1.0, 0.0, 0.0, 0.0]) if anchor is None else anchor
    gradient = quat.to_rotation_vector(quat.multiply(quat.conjugate(anchor), local)).ravel()[tree.cols]
    frames, heads, ends = tree.forward(local)
    jac = tree.jacobian(frames, heads, ends) * tree.col_scale
    y = tree_steps.priority_step(jac, np.zeros(jac.shape[0]), tree.row_levels, "dls", 0.01, -0.5 * gradient)
    step = tree.col_scale * y
    assert np.linalg.norm(jac @ y) <= 1e-9 * max(np.linalg.norm(step), 1e-12)  # the goals do not move
    assert gradient @ step <= 0.0  # H falls along the step, first order
    if np.linalg.norm(step) > 1e-9:
        full = np.zeros(3 * tree.m)
        full[tree.cols] = 1e-3 * step
        moved = quat.multiply(local, quat.from_rotation_vector(full.reshape(-1, 3)))

        def h(q):
            return 0.5 * np.sum(quat.to_rotation_vector(quat.multiply(quat.conjugate(anchor), q)) ** 2)

        assert h(moved) < h(local)
        _, _, after = tree.forward(moved)
        assert np.max(np.linalg.norm(after - ends, axis=1)) <= 1e-3 * 1e-3 * np.linalg.norm(step) * 10.0


@pytest.mark.parametrize("count", [2, 5])
def test_a_solve_with_the_pull_still_reaches_and_rests_nearer_the_attractor(count):
    lower = 0
    for seed in range(6):
        effs, _ = effectors(count, seed)
        plain = solvers.solve_skeleton(SKELETON, LOCAL, effs, method="jacobian")
        pulled = solvers.solve_skeleton(SKELETON, LOCAL, effs, method="jacobian", nullspace_gain=0.3)
        assert pulled.reached and plain.reached
        lower += np.sum(quat.angle(pulled.local) ** 2) <= np.sum(quat.angle(plain.local) ** 2) + 1e-12
    assert lower >= 5


@settings(max_examples=20)
@given(st.integers(0, 2**16))
def test_pins_hold_their_bone(seed):
    effs, _ = effectors(2, seed, priority=1)
    pin = solvers.Effector(NAMES["shin.L"], pin=True)
    sol = solvers.solve_skeleton(SKELETON, LOCAL, [pin, *effs], method="jacobian")
    tol = tolerance(SKELETON, [pin, *effs])
    assert sol.error[0] <= tol
    frames, _, _ = SKELETON.forward(sol.local)
    start, _, _ = SKELETON.forward(LOCAL)
    turn = quat.angle(quat.multiply(frames[pin.bone], quat.conjugate(start[pin.bone])))
    assert turn * sum(SKELETON.lengths[SKELETON.branch(pin.bone)]) <= tol


@settings(max_examples=20)
@given(st.sampled_from([2, 3]), st.integers(0, 2**16))
def test_orientation_goals_from_an_fk_pose_are_reached(count, seed):
    effs, posed = effectors(count, seed)
    frames, _, _ = SKELETON.forward(posed)
    effs = [solvers.Effector(e.bone, e.position, orientation=frames[e.bone], rotation_weight=0.5) for e in effs]
    sol = solvers.solve_skeleton(SKELETON, LOCAL, effs, method="jacobian")
    assert sol.reached
    got, _, _ = SKELETON.forward(sol.local)
    for e in effs:
        span = sum(SKELETON.lengths[SKELETON.branch(e.bone)])
        turn = quat.angle(quat.multiply(got[e.bone], quat.conjugate(e.orientation)))
        assert turn * span <= tolerance(SKELETON, effs)


def conflicting(count, seed, weights=None):
    """Each target 0.2 beyond its branch's reach from the hips, toward where an FK pose put it."""
    effs, _ = effectors(count, seed)
    root = SKELETON.offsets[0]
    weights = weights or [1.0] * count
    out = []
    for e, w in zip(effs, weights, strict=True):
        span = sum(SKELETON.lengths[SKELETON.branch(e.bone)])
        out.append(solvers.Effector(e.bone, root + quat.normalize(e.position - root) * (span + 0.2), weight=w))
    return out


@settings(max_examples=8)
@given(st.sampled_from([2, 3, 5]), st.integers(0, 2**16), st.booleans())
def test_conflicting_targets_settle_at_the_weighted_compromise_and_stop_early(count, seed, weighted):
    weights = list(np.random.default_rng(seed).uniform(0.5, 3.0, count)) if weighted else None
    effs = conflicting(count, seed, weights)
    tree = tree_of(effs)
    costs = []
    for variant in ("dls", "pseudoinverse"):
        sol = solvers.solve_skeleton(SKELETON, LOCAL, effs, method="jacobian", variant=variant)
        assert not sol.reached and sol.iterations < solvers.REGISTRY["jacobian"].max_iterations
        frames, heads, ends = tree.forward(sol.local[tree.moved])
        _, _, error = tree.residual(frames, ends)
        jac = tree.jacobian(frames, heads, ends)
        # Near stationary: the weighted squared error hardly falls along any joint direction.
        assert np.linalg.norm(jac.T @ error) <= 0.05 * np.linalg.norm(jac) * np.linalg.norm(error)
        costs.append(float(error @ error))
    # Two routes (damped, undamped) to the same compromise.
    assert abs(costs[0] - costs[1]) <= 0.01 * max(costs)


@pytest.mark.parametrize("seed", range(4))
def test_one_effector_on_a_chain_reaches_as_the_chain_solve(seed):
    rng = np.random.default_rng(seed)
    effs, _ = effectors(2, seed)
    for target in (effs[0].position, effs[0].position + rng.normal(size=3)):
        one = solvers.Effector(NAMES["forearm.L"], target)
        tol = tolerance(SKELETON, [one])
        tree = tree_jacobian.solve(SKELETON, LOCAL, [one], tol, 200, solvers.OPTIONS["jacobian"])
        chain = solvers.solve_skeleton(SKELETON, LOCAL, [one], method="jacobian")
        assert tree.reached == chain.reached
        assert tree.error[0] == pytest.approx(chain.error[0], abs=10 * tol)


@settings(max_examples=15)
@given(st.integers(0, 2**16), st.floats(-3.0, 3.0))
def test_a_pole_spins_its_effectors_own_segment_as_blenders_does_a_chain(seed, pole_angle):
    effs, _ = effectors(3, seed)
    rng = np.random.default_rng(seed)
    pole = effs[0].position + rng.normal(size=3)
    effs[0] = solvers.Effector(effs[0].bone, effs[0].position, pole=pole, pole_angle=pole_angle)
    sol = solvers.solve_skeleton(SKELETON, LOCAL, effs, method="jacobian")
    assert sol.reached
    frames, heads, _ = SKELETON.forward(sol.local)
    top = NAMES["shoulder.L"]  # forearm.L's own segment: shoulder, upper arm, forearm (the chest is shared)
    line = quat.normalize(effs[0].position - heads[top])

    def side(v):
        return quat.normalize(v - (v @ line) * line)

    up = quat.rotate(frames[top], np.array([np.cos(pole_angle), 0.0, np.sin(pole_angle)]))
    to_pole = pole - heads[top]
    if quat.norm(np.cross(line, to_pole)) > goal_fade() * quat.norm(to_pole):  # off the line: the pole decides
        assert side(up) @ side(to_pole) >= np.cos(1e-6)


def goal_fade():
    from solvers.common import goals

    return goals.POLE_FADE


def test_poles_that_cannot_spin_their_segment_are_refused_by_name():
    effs, _ = effectors(2, 0)
    elbow = solvers.Effector(NAMES["upper_arm.L"], [0.3, 0.0, 1.4], pole=[0.0, -1.0, 1.0])
    with pytest.raises(ValueError, match=f"pole on effector bone {elbow.bone}.*other effectors"):
        solvers.solve_skeleton(SKELETON, LOCAL, [*effs, elbow], method="jacobian")
    turned = solvers.Effector(effs[1].bone, effs[1].position, pole=[0.0, -1.0, 1.0], orientation=[1.0, 0, 0, 0])
    with pytest.raises(ValueError, match="orientation goal"):
        solvers.solve_skeleton(SKELETON, LOCAL, [effs[0], turned], method="jacobian")


def test_pull_options_are_checked():
    jac = solvers.REGISTRY["jacobian"]
    with pytest.raises(ValueError, match="nullspace_gain"):
        jac.options_for({"nullspace_gain": 1.5})
    with pytest.raises(ValueError, match="attractor"):
        jac.options_for({"attractor": "bind"})


@pytest.mark.parametrize("seed", range(3))
def test_position_columns_match_finite_differences(seed):
    effs, posed = effectors(5, seed)
    tree = tree_of(effs)
    local = posed[tree.moved]
    frames, heads, ends = tree.forward(local)
    jac = tree.jacobian(frames, heads, ends)
    eps = 1e-7
    for column in range(3 * tree.m):
        turn = np.zeros(3 * tree.m)
        turn[column] = eps
        _, _, moved = tree.forward(quat.multiply(local, quat.from_rotation_vector(turn.reshape(-1, 3))))
        np.testing.assert_allclose(jac[:, column], (moved - ends).ravel() / eps, atol=1e-5)
