"""Figures reported beside a solve: the paper's rotation cost C (eq. 3)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .model.chain import Chain


def rotation_cost(chain: Chain, points: np.ndarray) -> np.ndarray:
    """Sum over bones of the angle, in degrees, between each bone and its
    parent; the first bone is measured against its input direction.
    `points` (..., n+1, 3) -> (...)."""
    dirs = np.diff(np.asarray(points, dtype=float), axis=-2)
    dirs /= np.linalg.norm(dirs, axis=-1, keepdims=True)
    parents = np.concatenate((np.broadcast_to(chain.directions[0], dirs[..., :1, :].shape), dirs[..., :-1, :]), axis=-2)
    cos = np.clip(np.sum(dirs * parents, axis=-1), -1.0, 1.0)
    return np.degrees(np.arccos(cos)).sum(axis=-1)


def rotation_cost_one(chain: Chain, points: Sequence) -> float:
    """`rotation_cost` of one solve's points (n+1 rows), in plain floats: for a
    single short chain numpy's per-call cost would dominate."""
    return rotation_cost_rows(chain.scalar_terms[2][0], points)


def rotation_cost_rows(first_direction: Sequence, points: Sequence) -> float:
    """`rotation_cost_one` given the first bone's input direction instead of the chain."""
    total = 0.0
    px, py, pz = first_direction
    for (x0, y0, z0), (x1, y1, z1) in zip(points, points[1:], strict=False):
        dx, dy, dz = x1 - x0, y1 - y0, z1 - z0
        norm = math.sqrt(dx * dx + dy * dy + dz * dz)
        dx, dy, dz = dx / norm, dy / norm, dz / norm
        total += math.degrees(math.acos(min(1.0, max(-1.0, dx * px + dy * py + dz * pz))))
        px, py, pz = dx, dy, dz
    return total
