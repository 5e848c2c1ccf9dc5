"""FABRIK (Aristidou & Lasenby): backward pass from the target, forward pass
from the root, each joint placed on the line to its neighbour at the bone's
length. Unreachable targets are handled by `iterate.run` (chain straight).
With joint limits (the article's §4) each bone of the forward pass is aimed
at its backward-pass neighbour and its local rotation clamped into the
limits, so every iteration ends in an allowed pose."""

from __future__ import annotations

import numpy as np

from . import constrained, quat
from .chain import Chain


def make_step(chain: Chain):
    lengths = chain.lengths
    dirs = chain.directions
    root = chain.root
    n = chain.n_bones

    def place(anchor: np.ndarray, toward: np.ndarray, length: float, fallback: np.ndarray) -> np.ndarray:
        # The point at `length` from `anchor` on the line to `toward`; when the
        # two coincide the line is undefined, so use the bone's input direction.
        d = toward - anchor
        r = np.linalg.norm(d, axis=1, keepdims=True)
        d = np.where(r > 1e-300, d / np.where(r > 1e-300, r, 1.0), fallback)
        return anchor + length * d

    def backward(points: np.ndarray, targets: np.ndarray) -> np.ndarray:
        p = points.copy()
        p[:, n] = targets
        for i in range(n - 1, -1, -1):  # tip to root
            p[:, i] = place(p[:, i + 1], p[:, i], lengths[i], -dirs[i])
        p[:, 0] = root
        return p

    def step(points: np.ndarray, local: np.ndarray | None, targets: np.ndarray):
        p = backward(points, targets)
        if local is None:
            for i in range(n):  # forward: root to tip
                p[:, i + 1] = place(p[:, i], p[:, i + 1], lengths[i], dirs[i])
            return p, None
        local = local.copy()
        parent = np.broadcast_to(chain.base_frame, (p.shape[0], 4))
        for i in range(n):
            parent, local[:, i] = constrained.aim(chain, i, parent, local[:, i], p[:, i + 1] - p[:, i])
            p[:, i + 1] = p[:, i] + lengths[i] * quat.rotate(parent, chain.link_local[i])
        return p, local

    return step
