"""The loop shared by the iterative solvers: a mask of unconverged targets."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .chain import Chain

# Step(points (k, n+1, 3), targets (k, 3)) -> new points (k, n+1, 3).
Step = Callable[[np.ndarray, np.ndarray], np.ndarray]

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
    start: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Iterate `step` on every target until it is within `tolerance`, stalls
    or hits `max_iterations`. Targets at or beyond full reach are answered at
    once with the straight chain (FABRIK's unreachable branch, for all), and
    so are those within `tolerance` of it, which the straight chain reaches."""
    m = targets.shape[0]
    points = np.array(np.broadcast_to(chain.points if start is None else start, (m,) + chain.points.shape))
    iterations = np.zeros(m, dtype=np.int64)
    # Within tolerance of full reach the straight chain already reaches.
    far = np.linalg.norm(targets - chain.root, axis=1) >= chain.total_length - tolerance
    if np.any(far):
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
        new = step(points[idx], targets[idx])
        points[idx] = new
        iterations[idx] += 1
        err = np.linalg.norm(new[:, -1] - targets[idx], axis=1)
        moved = np.linalg.norm(new[:, -1] - old_tip, axis=1)
        active[idx] = (err > tolerance) & (moved > stall)
    return points, iterations
