"""Figures reported beside a solve: the paper's rotation cost C (eq. 3)."""

from __future__ import annotations

import numpy as np

from .chain import Chain


def rotation_cost(chain: Chain, points: np.ndarray) -> np.ndarray:
    """Sum over bones of the angle, in degrees, between each bone and its
    parent; the first bone is measured against its input direction.
    `points` (..., n+1, 3) -> (...)."""
    dirs = np.diff(np.asarray(points, dtype=float), axis=-2)
    dirs /= np.linalg.norm(dirs, axis=-1, keepdims=True)
    parents = np.concatenate((np.broadcast_to(chain.directions[0], dirs[..., :1, :].shape), dirs[..., :-1, :]), axis=-2)
    cos = np.clip(np.sum(dirs * parents, axis=-1), -1.0, 1.0)
    return np.degrees(np.arccos(cos)).sum(axis=-1)
