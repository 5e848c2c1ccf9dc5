"""solve_rows: the same solve as Chain + solve(method="triangulation"), to the bit, or None where they refuse."""

import math

import ik_strategies as ik
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import solvers
from solvers import quat


def _frames(chain, rolls) -> list[tuple]:
    """Unit frame quaternions with Y along each bone, rolled about it (as Blender's bones)."""
    out = []
    for d, roll in zip(chain.directions, rolls, strict=True):
        p = quat.any_perpendicular(d)
        x = math.cos(roll) * p + math.sin(roll) * np.cross(p, d)
        out.append(tuple(quat.from_matrix(np.column_stack((x, d, np.cross(x, d)))).tolist()))
    return out


def _check_same(rows, frames, target, **options) -> None:
    got = solvers.solve_rows(rows, frames, target, **options)
    tolerance = options.pop("tolerance", None)
    want = solvers.solve(solvers.Chain(rows, frames), target, method="triangulation", tolerance=tolerance, **options)
    assert got is not None
    assert np.array_equal(np.array(got.points), want.points)
    assert np.array_equal(np.array(got.rotations), want.rotations)
    assert got.error == want.error and got.reached == want.reached and got.iterations == want.iterations
    packed = got.solution()
    assert np.array_equal(packed.points, want.points) and np.array_equal(packed.rotations, want.rotations)
    chain = solvers.Chain(rows, frames)
    assert got.rotation_cost() == solvers.rotation_cost_one(chain, want.points.tolist())


OPTIONS = [{}, {"smooth_fold": 1.0}, {"smooth_fold": 0.4}, {"fold_angle": 90.0}, {"fold_angle": 135.0}]


@pytest.mark.parametrize("options", OPTIONS, ids=[str(o) for o in OPTIONS])
@given(data=st.data())
def test_matches_chain_and_solve_to_the_bit(options, data):
    chain, target = data.draw(ik.chain_and_any_target(max_bones=12))
    rolls = data.draw(st.lists(st.floats(-math.pi, math.pi), min_size=chain.n_bones, max_size=chain.n_bones))
    options = {k: float(v) for k, v in options.items()}
    _check_same(chain.points.tolist(), _frames(chain, rolls), [float(x) for x in target], **options)


def test_degenerate_targets_use_the_same_tie_breakers():
    # Targets on the chain's own line and on joints: the tie-breaker axes come from the frames.
    rows = [(0.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 2.0, 0.0), (0.0, 2.5, 0.0)]
    chain = solvers.Chain(rows)
    frames = _frames(chain, [0.3, -1.1, 2.0])
    for target in ([0.0, 0.5, 0.0], [0.0, -1.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 9.0, 0.0]):
        for options in ({}, {"smooth_fold": 1.0}, {"fold_angle": 90.0}, {"tolerance": 0.25}):
            _check_same(rows, frames, target, **options)


def test_refuses_what_chain_or_solve_refuses():
    rows = [(0.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 2.0, 0.0)]
    frames = [(1.0, 0.0, 0.0, 0.0)] * 2
    assert solvers.solve_rows(rows, frames, (1.0, 1.0, 0.0)) is not None
    bad = [
        (rows[:1], frames[:0], (1.0, 1.0, 0.0), {}),  # no bone
        (rows, frames[:1], (1.0, 1.0, 0.0), {}),  # a frame missing
        (rows, [(1.0, 0.0, 0.0, 0.0), (2.0, 0.0, 0.0, 0.0)], (1.0, 1.0, 0.0), {}),  # not unit
        (rows, [(1.0, 0.0, 0.0, 0.0), (math.nan, 0.0, 0.0, 0.0)], (1.0, 1.0, 0.0), {}),
        ([rows[0], rows[0], rows[2]], frames, (1.0, 1.0, 0.0), {}),  # zero-length bone
        ([rows[0], (0.0, math.inf, 0.0), rows[2]], frames, (1.0, 1.0, 0.0), {}),
        (rows, frames, (1.0, math.nan, 0.0), {}),
        (rows, frames, (1.0, 1.0), {}),
        ([rows[0], (0.0, 1.0), rows[2]], frames, (1.0, 1.0, 0.0), {}),
        (rows, frames, (1.0, 1.0, 0.0), {"tolerance": 0.0}),
        (rows, frames, (1.0, 1.0, 0.0), {"fold_angle": 45.0}),
        (rows, frames, (1.0, 1.0, 0.0), {"smooth_fold": 2.0}),
        (rows, frames, (1.0, 1.0, 0.0), {"fold_angle": 90.0, "smooth_fold": 1.0}),
    ]
    for r, f, t, options in bad:
        assert solvers.solve_rows(r, f, t, **options) is None, (r, f, t, options)
