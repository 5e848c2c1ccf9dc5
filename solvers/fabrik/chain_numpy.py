"""FABRIK (Aristidou & Lasenby): backward pass from the target, forward pass
from the root, each joint placed on the line to its neighbour at the bone's
length. Unreachable targets are handled by `iterate.run` (chain straight).
With joint limits (the article's §4) each bone of the forward pass is aimed
at its backward-pass neighbour (the turn scaled by 1 - its mean stiffness, as
in CCD) and its local rotation clamped into the limits, so every iteration
ends in an allowed pose; a bone whose child is a hinge also twists (within
its twist limit) so the child's plane holds the child's own neighbour
(solvers.common.twist), and the backward pass keeps each hinge bone in its hinge
plane as posed.

`placement="sphere"` (unlimited chains) is the article's conformal
geometric algebra (CGA) optimisation of the same passes: a joint between two
known neighbours (backward: its new child and its old parent; forward: its
new parent and its child) goes to the point nearest its current position on
the circle where the spheres about them (radii the two bone lengths) meet, so
it keeps both lengths at once. Where the spheres only touch or miss, it goes
to the point that circle shrinks to: on the line through the two neighbours,
at its bone's length from the new one (`quat.sphere_point`). Once one joint keeps
both lengths, the old joints beyond it already fit, so a pass that meets the
old chain anywhere ends reaching. Unreachable targets are answered straight,
as for "line". Chains with joint limits iterate as above whatever the
placement."""

from __future__ import annotations

import numpy as np

from .. import quat
from ..common import constrained, twist
from ..model.chain import Chain

PLACEMENTS = ("line", "sphere")


def check_placement(placement: object) -> str:
    if placement not in PLACEMENTS:
        raise ValueError(f"placement must be one of {', '.join(map(repr, PLACEMENTS))}, got {placement!r}")
    return placement


def make_step(chain: Chain, placement: str = "line"):
    lengths = chain.lengths
    dirs = chain.directions
    root = chain.root
    n = chain.n_bones
    spheres = check_placement(placement) == "sphere"
    scale = chain.total_length

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
    # Stiffness slows a joint, as in CCD: each forward-pass turn is scaled by 1 - mean stiffness.
    stiff = [1.0] * n if chain.limits is None else (1.0 - chain.limits.stiffness.mean(axis=1)).tolist()
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

    ties = chain.fallback_axes

    def between(a: np.ndarray, b: np.ndarray, i: int, j: int, current: np.ndarray, fallback: np.ndarray):
        # Joint at bone i's length from `a` and, as near as may be, at bone
        # j's from `b`; where a and b coincide, on the line to `current`.
        point, apart = quat.sphere_point(a, b, lengths[i], lengths[j], current, ties[i], scale)
        if np.all(apart):
            return point
        return np.where(apart[:, None], point, place(a, current, lengths[i], fallback))

    def sphere_step(points: np.ndarray, targets: np.ndarray) -> np.ndarray:
        p = points.copy()
        p[:, n] = targets
        for i in range(n - 1, 0, -1):  # backward: joint i between its new child and its old parent
            p[:, i] = between(p[:, i + 1], p[:, i - 1], i, i - 1, p[:, i], -dirs[i])
        p[:, 0] = root
        for i in range(n - 1):  # forward: joint i+1 between its new parent and its child
            p[:, i + 1] = between(p[:, i], p[:, i + 2], i, i + 1, p[:, i + 1], dirs[i])
        p[:, n] = place(p[:, n - 1], p[:, n], lengths[n - 1], dirs[n - 1])
        return p

    def step(points: np.ndarray, local: np.ndarray | None, targets: np.ndarray):
        if local is None and spheres:
            return sphere_step(points, targets), None
        if local is None:
            p = backward(points, targets)
            for i in range(n):  # forward: root to tip
                p[:, i + 1] = place(p[:, i], p[:, i + 1], lengths[i], dirs[i])
            return p, None
        p = limited_backward(points, local, targets) if any_hinge else backward(points, targets)
        local = local.copy()
        parent = np.broadcast_to(chain.base_frame, (p.shape[0], 4))
        for i in range(n):
            aimed = p[:, i + 1] - p[:, i]
            parent, local[:, i] = constrained.aim(chain, i, parent, local[:, i], aimed, stiff[i])
            if i + 1 < n:  # the child will aim at its backward-pass neighbour
                tail = p[:, i] + lengths[i] * quat.rotate(parent, chain.link_local[i])
                parent, local[:, i] = twist.align_child(chain, i, parent, local[:, i], p[:, i + 2] - tail)
            p[:, i + 1] = p[:, i] + lengths[i] * quat.rotate(parent, chain.link_local[i])
        return p, local

    return step
