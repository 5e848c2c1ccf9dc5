"""Solve results, and the bone rotations derived from solved joint positions."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import quat
from .chain import Chain


@dataclass(frozen=True, slots=True)
class Solution:
    """One solve. `rotations[i]` is the world-space rotation taking bone i from
    its input orientation to its solved one (the minimal swing: no invented
    twist), so `solved_direction = rotate(rotations[i], input_direction)`."""

    points: np.ndarray  # (n+1, 3)
    rotations: np.ndarray  # (n, 4) unit quaternions (w, x, y, z)
    iterations: int
    error: float  # tip-to-target distance
    reached: bool  # error <= tolerance
    method: str

    def frames(self, chain: Chain) -> np.ndarray | None:
        """Solved world orientation of each bone, when `chain` has frames."""
        if chain.frames is None:
            return None
        return quat.multiply(self.rotations, chain.frames)


@dataclass(frozen=True, slots=True)
class BatchSolution:
    """Many solves of one chain: the fields of `Solution` stacked over targets."""

    points: np.ndarray  # (m, n+1, 3)
    rotations: np.ndarray  # (m, n, 4)
    iterations: np.ndarray  # (m,)
    error: np.ndarray  # (m,)
    reached: np.ndarray  # (m,) bool
    method: str

    def __len__(self) -> int:
        return self.error.shape[0]

    def __getitem__(self, k: int) -> Solution:
        return Solution(
            self.points[k],
            self.rotations[k],
            int(self.iterations[k]),
            float(self.error[k]),
            bool(self.reached[k]),
            self.method,
        )


def swing_rotations(chain: Chain, points: np.ndarray) -> np.ndarray:
    """Minimal-swing rotations (..., n, 4) from `chain`'s bones to `points`."""
    solved = quat.normalize(np.diff(points, axis=-2))
    rest = np.broadcast_to(chain.directions, solved.shape)
    fallback = np.broadcast_to(chain.fallback_axes, solved.shape)
    return quat.swing(rest, solved, fallback)


def batch_result(
    chain: Chain, points: np.ndarray, targets: np.ndarray, iterations: np.ndarray, tolerance: float, method: str
) -> BatchSolution:
    """Package solved points (m, n+1, 3) with their rotations and errors."""
    error = np.linalg.norm(points[:, -1] - targets, axis=-1)
    return BatchSolution(
        points,
        swing_rotations(chain, points),
        np.asarray(iterations, dtype=np.int64),
        error,
        error <= tolerance,
        method,
    )
