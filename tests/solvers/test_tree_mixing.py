"""CCD's mixed sweeps on trees (solvers.common.tree_mixing, issue 20 item 5): several effectors
reach jointly reachable goals within a tight tolerance, where plain sweeps crawl."""

import numpy as np
import pytest
import tree_shapes
from hypothesis import given, settings
from hypothesis import strategies as st

import solvers
from solvers.common import tree_mixing

BODY = ("forearm.L", "forearm.R", "head", "shin.L", "shin.R")


@pytest.mark.parametrize("seed", range(6))
def test_ccd_reaches_five_effectors_tightly(seed):
    """Five effectors on the humanoid, targets by forward kinematics (jointly reachable): within
    1e-4 x the length in the default cap (200 sweeps). Plain sweeps were held to 1e-2 x the length
    in 300 (test_tree_solvers.test_humanoid_reaches_targets_made_by_forward_kinematics)."""
    skeleton, local, names = tree_shapes.humanoid()
    bones = [names[b] for b in BODY]
    tolerance = 1e-4 * float(np.sum(skeleton.lengths))
    targets, _ = tree_shapes.fk_targets(skeleton, local, bones, np.random.default_rng(seed))
    effectors = [solvers.Effector(b, t) for b, t in zip(bones, targets, strict=True)]
    sol = solvers.solve_skeleton(skeleton, local, effectors, method="ccd", tolerance=tolerance)
    assert sol.reached, (seed, sol.error, sol.iterations)


def test_mixing_is_no_worse_than_the_plain_sweeps():
    """The same solves with the mixing kept from acting (depth 0): the mixed ones end no farther
    from their goals and take fewer sweeps in all."""
    skeleton, local, names = tree_shapes.humanoid()
    bones = [names[b] for b in BODY]
    tolerance = 1e-4 * float(np.sum(skeleton.lengths))
    runs = {}
    for depth in (tree_mixing.DEPTH, 0):
        saved, tree_mixing.DEPTH = tree_mixing.DEPTH, depth
        try:
            out = []
            for seed in range(4):
                targets, _ = tree_shapes.fk_targets(skeleton, local, bones, np.random.default_rng(seed))
                effectors = [solvers.Effector(b, t) for b, t in zip(bones, targets, strict=True)]
                sol = solvers.solve_skeleton(skeleton, local, effectors, method="ccd", tolerance=tolerance)
                out.append((float(np.max(sol.error)), sol.iterations))
            runs[depth] = out
        finally:
            tree_mixing.DEPTH = saved
    mixed, plain = runs[tree_mixing.DEPTH], runs[0]
    assert all(m[0] <= max(p[0], tolerance) for m, p in zip(mixed, plain, strict=True)), (mixed, plain)
    assert sum(m[1] for m in mixed) < sum(p[1] for p in plain), (mixed, plain)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 9), st.integers(0, 2**16))
def test_solve_small_solves_a_positive_definite_system(n, seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n, n))
    a = a @ a.T + n * np.eye(n)
    b = rng.normal(size=n)
    x = tree_mixing.solve_small(a.tolist(), b.tolist())
    np.testing.assert_allclose(a @ x, b, atol=1e-8 * (1.0 + np.abs(b).max()))
