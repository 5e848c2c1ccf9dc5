"""FABRIK (Aristidou & Lasenby): backward pass from the target, forward pass
from the root, each joint placed on the line to its neighbour at the bone's
length. Unreachable targets are handled by `iterate.run` (chain straight).
With joint limits (the article's §4) each bone of the forward pass is aimed
at its backward-pass neighbour and its local rotation clamped into the
limits, so every iteration ends in an allowed pose; a bone whose child is a
hinge also twists (within its twist limit) so the child's plane holds the
child's own neighbour (solvers.twist), and the backward pass keeps each
hinge bone in its hinge plane as posed."""

from __future__ import annotations

import numpy as np

from . import constrained, quat, twist
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

    hinges = [None if chain.limits is None else twist.hinge(chain, i) for i in range(n)]
    any_hinge = any(h is not None for h in hinges)

    def limited_backward(points: np.ndarray, local: np.ndarray, targets: np.ndarray) -> np.ndarray:
        # A hinge bone stays in its hinge plane (the article's §4: each joint
        # re-placed inside its allowed region), the plane as posed now.
        frames = constrained.forward(chain, local)[0]
        p = points.copy()
        p[:, n] = targets
        for i in range(n - 1, 0, -1):
            d = p[:, i] - p[:, i + 1]
            if hinges[i] is not None:
                h = quat.rotate(quat.multiply(frames[:, i - 1], chain.reference[i]), hinges[i][0])
                d = d - np.sum(d * h, axis=1, keepdims=True) * h
            p[:, i] = place(p[:, i + 1], p[:, i + 1] + d, lengths[i], -dirs[i])
        p[:, 0] = root
        return p

    def step(points: np.ndarray, local: np.ndarray | None, targets: np.ndarray):
        if local is None:
            p = backward(points, targets)
            for i in range(n):  # forward: root to tip
                p[:, i + 1] = place(p[:, i], p[:, i + 1], lengths[i], dirs[i])
            return p, None
        p = limited_backward(points, local, targets) if any_hinge else backward(points, targets)
        local = local.copy()
        parent = np.broadcast_to(chain.base_frame, (p.shape[0], 4))
        for i in range(n):
            parent, local[:, i] = constrained.aim(chain, i, parent, local[:, i], p[:, i + 1] - p[:, i])
            if i + 1 < n:  # the child will aim at its backward-pass neighbour
                tail = p[:, i] + lengths[i] * quat.rotate(parent, chain.link_local[i])
                parent, local[:, i] = twist.align_child(chain, i, parent, local[:, i], p[:, i + 2] - tail)
            p[:, i + 1] = p[:, i] + lengths[i] * quat.rotate(parent, chain.link_local[i])
        return p, local

    return step
