"""The loop shared by the iterative solvers: a mask of unconverged targets."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..model.chain import Chain
from . import constrained

# Step(points (k, n+1, 3), locals (k, n, 4) or None, targets (k, 3))
#   -> (new points, new locals or None). Locals are carried for limited chains.
Step = Callable[[np.ndarray, np.ndarray | None, np.ndarray], tuple[np.ndarray, np.ndarray | None]]

# The tip moving less than this fraction of the chain length in one iteration
# means the method has stalled (FABRIK's epsilon); stop rather than spin.
STALL = 1e-12


def straight_toward(chain: Chain, targets: np.ndarray) -> np.ndarray:
    """The chain stretched from its root straight toward each target (m, n+1, 3)."""
    d = targets - chain.root
    norm = np.linalg.norm(d, axis=1, keepdims=True)
    d = np.where(norm > 0.0, d / np.where(norm > 0.0, norm, 1.0), chain.directions[0])
    offsets = np.concatenate(([0.0], np.cumsum(chain.lengths)))
    return chain.root + offsets[None, :, None] * d[:, None, :]


def run(
    chain: Chain,
    targets: np.ndarray,
    tolerance: float,
    max_iterations: int,
    step: Step,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Iterate `step` on every target until it is within `tolerance`, stalls
    or hits `max_iterations`. Targets at or beyond full reach are answered at
    once with the straight chain (FABRIK's unreachable branch, for all), and
    so are those within `tolerance` of it, which the straight chain reaches.

    A chain with joint limits iterates on local rotations too, starts from
    its input pose clamped into the limits, and answers far targets with
    every bone aimed at the target within its limits.
    Returns (points, iterations, locals or None)."""
    m = targets.shape[0]
    limited = chain.limits is not None
    iterations = np.zeros(m, dtype=np.int64)
    if limited:
        local = constrained.start_locals(chain, m)
        points = constrained.forward(chain, local)[1]
    else:
        local = None
        points = np.array(np.broadcast_to(chain.points, (m,) + chain.points.shape))
    # Within tolerance of full reach the straight chain already reaches.
    far = np.linalg.norm(targets - chain.root, axis=1) >= chain.total_length - tolerance
    if np.any(far):
        if limited:
            local[far], points[far] = constrained.reach_toward(chain, local[far], targets[far])
        else:
            points[far] = straight_toward(chain, targets[far])
        iterations[far] = 1
    error = np.linalg.norm(points[:, -1] - targets, axis=1)
    active = ~far & (error > tolerance)
    stall = STALL * chain.total_length
    for _ in range(max_iterations):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        old_tip = points[idx, -1].copy()
        new, new_local = step(points[idx], None if local is None else local[idx], targets[idx])
        points[idx] = new
        if limited:
            local[idx] = new_local
        iterations[idx] += 1
        err = np.linalg.norm(new[:, -1] - targets[idx], axis=1)
        moved = np.linalg.norm(new[:, -1] - old_tip, axis=1)
        active[idx] = (err > tolerance) & (moved > stall)
    return points, iterations, local
