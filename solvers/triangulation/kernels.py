"""Triangulation's kernels for the method registry (see solvers.registry for the interface).

- `float_solver`: the one-target float solve (scalar.one_pass), run by solvers.kernels.one;
  `shape_keeping_solver` the same pass keeping the start's shape where it can (a tree's segments).
- `batch`: the vectorised pass (batch.solve_many), or the limited passes (limited.solve_limited).
- `sequence`: the plain-float pass carried from step to step (sequence.solve_steps); not for
  chains with joint limits.
"""

from __future__ import annotations

import numpy as np

from ..chain import Chain
from ..result import BatchSolution, SequenceSolution
from .batch import solve_many
from .checks import BAND
from .limited import solve_limited
from .scalar import fold_blend, fold_terms, one_pass, start_shape
from .sequence import solve_steps

LIMITS_REASON = "joint limits: the limited passes are vectorised (numpy) only"


def float_solver(tolerance: float, cap: int, options: dict):
    """The float solve (terms, target) -> (points, rotations, 1): one pass (no tolerance or cap
    to apply: the pass is exact where the target is reachable)."""
    fold_angle, smooth = options["fold_angle"], options["smooth_fold"]
    fold = fold_terms(fold_angle)

    def solve(t, target: tuple):
        blend = fold_blend(t.lengths, t.reach, t.inner, smooth) if smooth else None
        guard = t.guard if fold_angle != 180.0 else None  # only a narrower fold reads it
        out, rots, _ = one_pass(
            t.rows[0], t.lengths, t.dirs, t.reach, guard, t.fallbacks, target, BAND * t.total, fold_angle, fold, blend
        )
        return out, rots, 1

    return solve


def shape_keeping_solver(options: dict):
    """float_solver's pass with each rest of the chain taking the extent that turns the joints least
    from the start's shape (scalar.one_pass's `keep`): a tree's segments (solvers.triangulation.tree)."""
    fold_angle, smooth = options["fold_angle"], options["smooth_fold"]
    fold = fold_terms(fold_angle)

    def solve(t, target: tuple):
        blend = fold_blend(t.lengths, t.reach, t.inner, smooth) if smooth else None
        guard = t.guard if fold_angle != 180.0 else None
        rows, n = t.rows, len(t.lengths)  # (rows: the joints, then the tip)
        keep = tuple(
            start_shape(rows[i], t.dirs[i], rows[i + 1], rows[-1], t.inner[i], t.lengths[i + 1], t.reach[i + 1])
            if i + 1 < n
            else None
            for i in range(n)
        )
        out, rots, _ = one_pass(
            t.rows[0], t.lengths, t.dirs, t.reach, guard, t.fallbacks, target, BAND * t.total, fold_angle, fold, blend,
            keep=keep,
        )  # fmt: skip
        return out, rots, 1

    return solve


def batch(chain: Chain, targets: np.ndarray, tolerance: float, max_iterations: int, options: dict) -> BatchSolution:
    if chain.limits is not None:  # limits fold by the collapsed reach (§3.1.3)
        return solve_limited(chain, targets, tolerance, options["fold_angle"], options["smooth_fold"])
    return solve_many(chain, targets, tolerance, options["fold_angle"], options["smooth_fold"])


def sequence(
    chain: Chain, targets: np.ndarray, tols: np.ndarray, max_iterations: int, options: dict, progress, keep_points: bool
) -> SequenceSolution | str:
    if chain.limits is not None:
        return LIMITS_REASON
    return solve_steps(chain, targets, tols, options["fold_angle"], options["smooth_fold"], progress, keep_points)
