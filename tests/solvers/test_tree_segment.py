"""A tree segment triangulated without a Chain (solvers.triangulation.tree_segment) gives the same
numbers, to the bit, as the Chain path it stands in for (Chain.from_float_rows, then
common.float_solve.solve with the shape-keeping pass), under every fold option."""

import math

import numpy as np
import pytest

from solvers.common import float_solve
from solvers.maths.floats import multiply
from solvers.model.chain import Chain
from solvers.triangulation.chain import shape_keeping_solver
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
