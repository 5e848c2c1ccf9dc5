"""Triangulation's kernels for the method registry (see solvers.registry for the interface).

(Its one-target kernel is scalar.one_pass through solvers.kernels.one, shared with the other methods.)
- `batch`: the vectorised pass (batch.solve_many), or the limited passes (limited.solve_limited).
- `sequence`: the plain-float pass carried from step to step (sequence.solve_steps); not for
  chains with joint limits.
"""

from __future__ import annotations

import numpy as np

from ..chain import Chain
from ..result import BatchSolution, SequenceSolution
from .batch import solve_many
from .limited import solve_limited
from .sequence import solve_steps

LIMITS_REASON = "joint limits: the limited passes are vectorised (numpy) only"


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
