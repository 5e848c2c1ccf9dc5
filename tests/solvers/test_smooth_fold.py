"""Triangulation's smooth fold: same reach and exactness as the paper's fold,
and joint angles that move at a bounded rate where the paper's fold pops."""

from __future__ import annotations

import ik_strategies as ik
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import solvers
from solvers import quat


@settings(max_examples=150)
@given(case=ik.chain_and_reachable(), smooth=st.floats(0.0, 1.0))
def test_reaches_every_reachable_target_in_one_pass(case, smooth):
    chain, target = case
    ik.describe(chain, target)
    sol = solvers.solve(chain, target, method="triangulation", smooth_fold=smooth)
    ik.check_invariants(chain, sol, target)
    assert sol.iterations == 1
    assert sol.error <= 1e-9 * chain.total_length, sol.error


@settings(max_examples=60)
@given(case=ik.chain_and_any_target(), smooth=st.floats(0.0, 1.0))
def test_batch_equals_single_solves(case, smooth):
    chain, target = case
    batch = solvers.solve_batch(chain, np.array([target, target * 0.5]), method="triangulation", smooth_fold=smooth)
    for k, t in enumerate((target, target * 0.5)):
        single = solvers.solve(chain, t, method="triangulation", smooth_fold=smooth)
        # The registry's contract for `one` against `batch`: within 1e-9 of the chain length (a
        # 20-bone chain folded onto a target at its root differs by 1.7e-10 x its length).
        scale = 1e-9 * max(1.0, chain.total_length, float(np.abs(chain.points).max()))
        assert np.allclose(batch.points[k], single.points, rtol=0.0, atol=scale)


@settings(max_examples=60)
@given(case=ik.chain_and_unreachable())
def test_unreachable_stays_straight_toward_the_target(case):
    chain, target = case
    sol = solvers.solve(chain, target, method="triangulation", smooth_fold=1.0)
    ik.check_straight_toward(chain, sol.points, target)


def _radial_sweep(smooth: float) -> np.ndarray:
    """Largest joint turn per step (degrees) of a 5-bone straight chain while
    the target moves from 2.5 to 3.5 units from the root along a line that
    crosses the paper's fold distance b - a = 3 at the root."""
    chain = solvers.Chain([[0.0, float(y), 0.0] for y in range(6)], np.tile([1.0, 0.0, 0.0, 0.0], (5, 1)))
    direction = np.array([0.6, 0.0, 0.8])
    side = np.array([0.0, 0.05, 0.0])
    targets = np.array([side + d * direction for d in np.linspace(2.5, 3.5, 401)])
    seq = solvers.solve_sequence(chain, targets, method="triangulation", smooth_fold=smooth)
    assert seq.error.max() <= 1e-9 * chain.total_length
    frames = seq.frames
    parents = np.concatenate((np.broadcast_to([1.0, 0.0, 0.0, 0.0], frames[:, :1].shape), frames[:, :-1]), axis=1)
    local = quat.multiply(quat.conjugate(parents), frames)
    dots = np.abs(np.sum(local[1:] * local[:-1], axis=-1)).clip(0.0, 1.0)
    return np.degrees(2.0 * np.arccos(dots)).max(axis=1)


def test_smooth_fold_turns_at_a_bounded_rate_where_the_paper_pops():
    # The paper's fold: the root's angle moves as the square root of the
    # distance past b - a (measured: 19x the median step on this sweep).
    sharp = _radial_sweep(0.0)
    assert sharp.max() > 10.0 * np.median(sharp)
    for amount in (0.25, 0.5, 1.0):  # measured: 1.7x, 1.05x, 1.06x
        smooth = _radial_sweep(amount)
        assert smooth.max() < 2.5 * np.median(smooth), amount
        assert smooth.max() < 0.2 * sharp.max(), amount


@pytest.mark.parametrize("smooth", [0.0, 0.5, 1.0])
def test_default_is_the_paper(smooth):
    chain = solvers.Chain([[0.0, float(y), 0.0] for y in range(6)])
    target = [0.3, 2.0, 0.4]  # inside the fold distance: every variant folds the root here
    paper = solvers.solve(chain, target, method="triangulation")
    assert solvers.OPTIONS["triangulation"]["smooth_fold"] == 0.0
    variant = solvers.solve(chain, target, method="triangulation", smooth_fold=smooth)
    assert np.allclose(paper.points[1], variant.points[1], atol=1e-12)
