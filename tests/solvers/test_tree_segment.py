"""A tree segment triangulated without a Chain (solvers.triangulation.tree_segment) gives the same
numbers, to the bit, as the Chain path it stands in for (Chain.from_float_rows, then
common.float_solve.solve with the shape-keeping pass), under every fold option."""

import math

import numpy as np
import pytest

import solvers
from solvers.common import float_solve
from solvers.maths.floats import multiply
from solvers.model.chain import Chain
from solvers.triangulation.chain import _keeping, shape_keeping_solver
from solvers.triangulation.tree_segment import segment_pass


def _segment(rng, n: int):
    """n bones as a pose's forward kinematics gives them: joint rows and bone frames (products of
    unit quaternions, so a rounding away from unit, as forward's are), with the bones along each
    frame's Y axis."""
    frame, point = (1.0, 0.0, 0.0, 0.0), tuple(rng.normal(size=3).tolist())
    joints, frames = [point], []
    for _ in range(n):
        turn = rng.normal(size=4)
        turn = tuple((turn / np.linalg.norm(turn)).tolist())
        frame = multiply(frame, turn)
        frames.append(frame)
        w, x, y, z = frame
        axis = (2.0 * (x * y - w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z + w * x))
        length = float(rng.uniform(0.1, 0.5))
        point = tuple(p + length * a for p, a in zip(point, axis, strict=True))
        joints.append(point)
    return joints, frames


@pytest.mark.parametrize(("fold_angle", "smooth_fold"), [(180.0, 0.0), (180.0, 1.0), (150.0, 0.0)])
@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_the_segment_pass_is_the_chain_paths_to_the_bit(fold_angle, smooth_fold, n):
    options = {"fold_angle": fold_angle, "smooth_fold": smooth_fold}
    solve = shape_keeping_solver(options)
    rng = np.random.default_rng(n)
    for _ in range(40):
        joints, frames = _segment(rng, n)
        reach = sum(math.dist(a, b) for a, b in zip(joints, joints[1:], strict=False))
        # targets near the tip (a bake's frame), anywhere within reach, and beyond it
        scale = float(rng.choice([1e-4, 0.3, 1.5])) * reach
        target = tuple((np.array(joints[-1]) + scale * rng.normal(size=3)).tolist())
        chain = Chain.from_float_rows(joints, frames)
        expected = float_solve.solve(chain, target, "triangulation", 1e-5, solve).rows()[1]
        turns, start = segment_pass(joints, frames, target, solve)
        assert [list(q) for q in turns] == [list(q) for q in expected]  # every float the same
        assert [list(q) for q in start] == chain.frames.tolist()


def test_a_link_without_length_is_refused_as_the_chain_path_refuses_it():
    """A segment whose child's head sits on its parent's head (a zero-length link between joints):
    the Chain path raised ValueError; the segment pass raises the same, not a silent poor solve."""
    rows = [(0.0, 1.0, 0.0), (0.0, 1.0, 0.0), (1.0, 1.0, 0.0)]
    frames = [(1.0, 0.0, 0.0, 0.0), (0.7071067811865476, 0.0, 0.0, -0.7071067811865476)]
    with pytest.raises(ValueError) as chain_error:
        Chain.from_float_rows(rows, frames)
    solve = shape_keeping_solver({"fold_angle": 180.0, "smooth_fold": 0.0})
    with pytest.raises(ValueError) as segment_error:
        segment_pass(rows, frames, (0.8, 1.3, 0.2), solve)
    assert str(segment_error.value) == str(chain_error.value)


def test_a_tree_with_such_a_segment_is_refused_by_triangulation():
    """solve_skeleton's tree triangulation on that skeleton refuses it (ValueError), as before the
    segment pass; the other methods solve it."""
    heads = np.array([[0, 0, 0], [0, 1, 0], [0, 1, 0], [0, 1, 0]], float)
    tails = np.array([[0, 1, 0], [0, 2, 0], [1, 1, 0], [-1, 1, 0]], float)
    skeleton, local = solvers.Skeleton.from_bones([-1, 0, 1, 0], heads, tails)
    goals = [solvers.Effector(2, np.array([0.8, 1.3, 0.2])), solvers.Effector(3, np.array([-0.9, 1.2, 0.1]))]
    with pytest.raises(ValueError, match="zero length"):
        solvers.solve_skeleton(skeleton, local, goals, method="triangulation")


def test_one_shape_keeping_solver_per_fold_setting_and_a_bounded_number_kept():
    """A bake's frames each ask for the solver: the same one serves a setting; the kept ones are
    bounded (the settings are the user's floats)."""
    first = shape_keeping_solver({"fold_angle": 170.0, "smooth_fold": 0.5})
    assert shape_keeping_solver({"fold_angle": 170.0, "smooth_fold": 0.5}) is first
    assert shape_keeping_solver({"fold_angle": 170.0, "smooth_fold": 0.25}) is not first
    for i in range(200):
        shape_keeping_solver({"fold_angle": 180.0, "smooth_fold": i / 200})
    assert _keeping.cache_info().currsize <= _keeping.cache_info().maxsize
