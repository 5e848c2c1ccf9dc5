"""The tree Jacobian's plain kernel (solvers.jacobian.tree_plain): it runs the general loop's iteration
(jacobian.tree_iterate.iterate) in fewer numpy calls, so on its case it gives the same poses; its errors are
those of the pose it returns; other cases go to the general loop."""

import numpy as np
import pytest
import tree_shapes
from hypothesis import given, settings
from hypothesis import strategies as st

import solvers
from solvers.jacobian import tree as tree_jacobian
from solvers.jacobian import tree_iterate, tree_plain
from solvers.skeleton_effectors import resolve_pins

NAMES_BY_COUNT = {
    2: ["forearm.L", "forearm.R"],
    3: ["forearm.L", "forearm.R", "head"],
    5: ["forearm.L", "forearm.R", "head", "shin.L", "shin.R"],
}
SKELETON, LOCAL, NAMES = tree_shapes.humanoid()


def effectors(count, seed, far=0.0):
    bones = [NAMES[n] for n in NAMES_BY_COUNT[count]]
    targets, _ = tree_shapes.fk_targets(SKELETON, LOCAL, bones, np.random.default_rng(seed))
    if far:  # beyond reach: the least-squares compromise (the trust region's refusals and the stall stop)
        targets = targets * (1.0 + far)
    return [solvers.Effector(b, t) for b, t in zip(bones, targets, strict=True)]


def solved(effs, plain: bool, monkeypatch, **options):
    with monkeypatch.context() as patch:
        if not plain:
            patch.setattr(tree_plain, "applies", lambda *args: False)
        return solvers.solve_skeleton(SKELETON, LOCAL, effs, method="jacobian", **options)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([2, 3, 5]), st.integers(0, 2**16), st.sampled_from([0.0, 0.5]))
def test_the_plain_kernel_gives_the_general_loops_pose(count, seed, far):
    effs = effectors(count, seed, far)
    with pytest.MonkeyPatch.context() as monkeypatch:
        fast, general = solved(effs, True, monkeypatch), solved(effs, False, monkeypatch)
    assert fast.iterations == general.iterations
    assert fast.reached == general.reached
    np.testing.assert_allclose(fast.local, general.local, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fast.error, general.error, rtol=0, atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([2, 3, 5]), st.integers(0, 2**16))
def test_the_plain_kernels_errors_are_those_of_the_pose_it_returns(count, seed):
    effs = effectors(count, seed)
    sol = solvers.solve_skeleton(SKELETON, LOCAL, effs, method="jacobian")
    _, _, ends = SKELETON.forward(sol.local)
    np.testing.assert_allclose(sol.error, [np.linalg.norm(ends[e.bone] - e.position) for e in effs], atol=1e-12)
    assert sol.reached
    np.testing.assert_allclose(np.linalg.norm(sol.local, axis=1), 1.0, atol=1e-12)


def test_other_cases_take_the_general_loop():
    effs = effectors(3, 7)
    tree = tree_jacobian.Tree(SKELETON, effs)
    assert tree_plain.applies(tree, "dls", 0.0, False)
    assert not tree_plain.applies(tree, "pseudoinverse", 0.0, False)
    assert not tree_plain.applies(tree, "dls", 0.5, False)  # a pull
    assert not tree_plain.applies(tree, "dls", 0.0, True)  # mass weighting
    pinned = [solvers.Effector(effs[0].bone, pin=True), *effs[1:]]  # two priority levels
    assert not tree_plain.applies(
        tree_jacobian.Tree(SKELETON, resolve_pins(SKELETON, LOCAL, pinned)), "dls", 0.0, False
    )


def test_the_error_damping_turns_the_joints_less_on_reachable_goals(monkeypatch):
    """Damping ~ the removable error (tree_settings.ERROR_DAMPING) approaches far goals in shorter,
    more nearly least-motion steps: the summed turn from the input pose drops (bench/bench_tree.py
    measures it against Blender's on the metarig)."""

    def turned(damping):
        monkeypatch.setattr(tree_plain, "ERROR_DAMPING", damping)
        monkeypatch.setattr(tree_iterate, "ERROR_DAMPING", damping)
        total = 0.0
        for seed in range(12):
            sol = solvers.solve_skeleton(SKELETON, LOCAL, effectors(5, seed), method="jacobian")
            assert sol.reached
            total += float(np.sum(solvers.quat.angle(solvers.quat.multiply(solvers.quat.conjugate(LOCAL), sol.local))))
        return total

    assert turned(0.5) < 0.95 * turned(0.0)
