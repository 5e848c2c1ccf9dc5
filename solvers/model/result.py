"""Solve results, and the bone rotations derived from solved joint positions."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from .. import quat
from .chain import Chain


class Solution:
    """One solve. `rotations[i]` is the world-space rotation taking bone i from
    its input orientation to its solved one, so `solved_direction =
    rotate(rotations[i], input_direction)`. Position-only solvers use the
    minimal swing relative to the parent (see `swing_rotations`): no twist is
    invented in any bone's local rotation.

    Read-only by convention (`replace` makes a changed copy). The float kernels build it from
    their rows of floats (`from_rows`): `points` and `rotations` become arrays on first use, and
    `rows()` gives the floats without building them (what one solve's caller reads)."""

    __slots__ = ("_points", "_rotations", "_rows", "iterations", "error", "reached", "method", "reason")

    def __init__(
        self,
        points: np.ndarray,  # (n+1, 3)
        rotations: np.ndarray,  # (n, 4) unit quaternions (w, x, y, z)
        iterations: int,
        error: float,  # tip-to-target distance
        reached: bool,  # error <= tolerance
        method: str,
        reason: str = "",  # why the method's faster kernel did not serve ('' when it did or there is none)
    ) -> None:
        self._points, self._rotations, self._rows = points, rotations, None
        self.iterations, self.error, self.reached, self.method, self.reason = iterations, error, reached, method, reason

    @classmethod
    def from_rows(
        cls, points: list, rotations: list, iterations: int, error: float, reached: bool, method: str
    ) -> Solution:
        """A solution from n+1 point and n rotation rows of floats, arrays built on first use."""
        solution = cls(None, None, iterations, error, reached, method)
        solution._rows = (points, rotations)
        return solution

    @property
    def points(self) -> np.ndarray:
        """(n+1, 3) solved joint positions."""
        if self._points is None:
            rows = self._rows[0]
            self._points = np.fromiter(itertools.chain.from_iterable(rows), float, 3 * len(rows)).reshape(-1, 3)
        return self._points

    @property
    def rotations(self) -> np.ndarray:
        """(n, 4) world rotations of the bones (unit quaternions w, x, y, z)."""
        if self._rotations is None:
            rows = self._rows[1]
            self._rotations = np.fromiter(itertools.chain.from_iterable(rows), float, 4 * len(rows)).reshape(-1, 4)
        return self._rotations

    def rows(self) -> tuple[list, list]:
        """(points, rotations) as lists of rows of floats: the float kernel's own, else the arrays'."""
        if self._rows is None:
            self._rows = (self.points.tolist(), self.rotations.tolist())
        return self._rows

    def replace(self, **changes: object) -> Solution:
        """A copy with `changes` (field names as the constructor's)."""
        fields = {
            "points": self._points,
            "rotations": self._rotations,
            "iterations": self.iterations,
            "error": self.error,
            "reached": self.reached,
            "method": self.method,
            "reason": self.reason,
        }
        fields.update(changes)
        copy = Solution(**fields)
        if "points" not in changes and "rotations" not in changes:
            copy._rows = self._rows
        return copy

    def frames(self, chain: Chain) -> np.ndarray | None:
        """Solved world orientation of each bone, when `chain` has frames."""
        if chain.frames is None:
            return None
        return quat.multiply(self.rotations, chain.frames)

    def __repr__(self) -> str:
        return (
            f"Solution(n_bones={len(self.rows()[1])}, iterations={self.iterations}, error={self.error:g},"
            f" reached={self.reached}, method={self.method!r}, reason={self.reason!r})"
        )


@dataclass(frozen=True, slots=True)
class BatchSolution:
    """Many solves of one chain: the fields of `Solution` stacked over targets."""

    points: np.ndarray  # (m, n+1, 3)
    rotations: np.ndarray  # (m, n, 4)
    iterations: np.ndarray  # (m,)
    error: np.ndarray  # (m,)
    reached: np.ndarray  # (m,) bool
    method: str
    reason: str = ""  # as Solution.reason

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
            self.reason,
        )


@dataclass(frozen=True, slots=True)
class SequenceSolution:
    """Steps of `solve_sequence`; `frames[k]` are the bones' world orientations
    after step k (None when the chain has no frames), `tips[k]` the tip."""

    points: np.ndarray | None  # (m, n+1, 3); None when not kept
    tips: np.ndarray  # (m, 3) the last point of each step
    frames: np.ndarray | None  # (m, n, 4)
    error: np.ndarray  # (m,) tip-to-target distance
    iterations: np.ndarray  # (m,)
    reached: np.ndarray  # (m,) error <= tolerance
    method: str
    reason: str = ""  # as Solution.reason


def swing_rotations(chain: Chain, points: np.ndarray) -> np.ndarray:
    """World rotations (..., n, 4) taking the chain's bones to `points`, built
    root to tip so that each bone turns by the minimal swing *relative to its
    parent*: bone i first inherits its parent's rotation R_{i-1}, then swings
    from that inherited direction onto its solved one. A bone's local (parent-
    relative) rotation therefore never gains twist about its own axis, which
    is what Blender shows in the bone's rotation channels."""
    solved = quat.normalize(np.diff(points, axis=-2))
    shape = solved.shape[:-2]
    rots = np.empty(shape + (chain.n_bones, 4))
    inherited = np.zeros(shape + (4,))
    inherited[..., 0] = 1.0
    for i in range(chain.n_bones):
        cur = quat.rotate(inherited, np.broadcast_to(chain.directions[i], shape + (3,)))
        axis = quat.rotate(inherited, np.broadcast_to(chain.fallback_axes[i], shape + (3,)))
        inherited = quat.normalize(quat.multiply(quat.swing(cur, solved[..., i, :], axis), inherited))
        rots[..., i, :] = inherited
    return rots


def batch_result(
    chain: Chain,
    points: np.ndarray,
    targets: np.ndarray,
    iterations: np.ndarray,
    tolerance: float,
    method: str,
    rotations: np.ndarray | None = None,
) -> BatchSolution:
    """Package solved points (m, n+1, 3) with their rotations and errors."""
    error = np.linalg.norm(points[:, -1] - targets, axis=-1)
    return BatchSolution(
        points,
        swing_rotations(chain, points) if rotations is None else rotations,
        np.asarray(iterations, dtype=np.int64),
        error,
        error <= tolerance,
        method,
    )
