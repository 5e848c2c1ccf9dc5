"""solvers.tree's shared helpers: float forward kinematics, local rotations back from frames, Wahba."""

import numpy as np
import tree_shapes
from hypothesis import given
from hypothesis import strategies as st

from solvers import quat
from solvers import skeleton_floats as tree
from solvers.maths import floats


@given(st.integers(0, 2**32 - 1))
def test_forward_and_to_locals_invert_each_other(seed):
    skeleton, local, names = tree_shapes.humanoid()
    posed = tree_shapes.fk_targets(skeleton, local, [0], np.random.default_rng(seed), spread=2.5)[1]
    frames, heads = tree.forward(skeleton, tree.rows(posed))
    want_frames, want_heads, want_ends = skeleton.forward(posed)
    np.testing.assert_allclose(frames, want_frames, atol=1e-15)
    np.testing.assert_allclose(heads, want_heads, atol=1e-15)
    ends = [tree.end_point(skeleton, frames, heads, i) for i in range(skeleton.n_bones)]
    np.testing.assert_allclose(ends, want_ends, atol=1e-15)
    every = list(range(skeleton.n_bones))
    back = tree.to_locals(skeleton, local, frames, every)
    np.testing.assert_allclose(np.abs(np.sum(back * posed, axis=1)), 1.0, atol=1e-12)
    # Only directions kept: every bone points where it did; no twist beyond the minimal swing.
    leaves = [i for i in every if i not in skeleton.parents]
    swung = tree.to_locals(skeleton, local, frames, every, swing_only=set(leaves))
    f2, h2, e2 = skeleton.forward(swung)
    np.testing.assert_allclose(e2 - h2, want_ends - want_heads, atol=1e-12)
    some = tree.to_locals(skeleton, posed, frames, [])
    np.testing.assert_array_equal(some, posed)


def test_moved_bones_are_the_effectors_branches():
    skeleton, _, names = tree_shapes.humanoid()
    moved = tree.moved_bones(skeleton, [names["forearm.L"], names["head"]])
    assert moved == sorted({0, 1, 2, 3, 4, names["shoulder.L"], names["upper_arm.L"], names["forearm.L"]})


@given(st.integers(1, 6), st.integers(0, 2**32 - 1), st.booleans())
def test_best_rotation_solves_wahba(k, seed, noisy):
    rng = np.random.default_rng(seed)
    q = quat.normalize(rng.normal(size=4))
    a = rng.normal(size=(k, 3))
    w = rng.uniform(0.1, 2.0, size=k)
    b = quat.rotate(q, a) + (0.3 * rng.normal(size=(k, 3)) if noisy else 0.0)
    r = np.array(floats.best_rotation(tree.rows(a), tree.rows(b), w.tolist()))

    def cost(rot):
        return float(np.sum(w * np.sum((quat.rotate(rot, a) - b) ** 2, axis=1)))

    if k >= 3 and not noisy:
        assert abs(abs(np.dot(r, q)) - 1.0) < 1e-7
    # No rotation near it does better (it is the least-squares optimum).
    for _ in range(20):
        nearby = quat.multiply(quat.from_rotation_vector(0.05 * rng.normal(size=3)), r)
        assert cost(r) <= cost(nearby) + 1e-9 * (1.0 + cost(r))


def test_best_rotation_on_one_line_is_the_minimal_swing():
    a = [(0.0, 0.0, 1.0), (0.0, 0.0, 2.5)]
    b = [(0.0, 0.3, 0.0), (0.0, 1.0, 0.0)]
    r = floats.best_rotation(a, b, [1.0, 2.0])
    want = quat.swing(np.array([0.0, 0.0, 1.0]), np.array([0.0, 1.0, 0.0]), np.array([1.0, 0.0, 0.0]))
    np.testing.assert_allclose(r, want, atol=1e-7)
