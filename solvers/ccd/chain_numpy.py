"""Cyclic coordinate descent: tip to root, each joint turns the rest of the
chain so the tip lies on the joint->target line (paper eq. 1-2). One sweep
over all joints is one iteration. With joint limits each turn is scaled by
the joint's stiffness and clamped into its limits before it is applied."""

from __future__ import annotations

import numpy as np

from .. import quat
from ..common import constrained
from ..model.chain import Chain


def make_step(chain: Chain):
    n = chain.n_bones
    fallbacks = chain.fallback_axes
    if chain.limits is not None:
        return _limited_step(chain)

    def step(points: np.ndarray, local: None, targets: np.ndarray):
        p = points.copy()
        for j in range(n - 1, -1, -1):
            pivot = p[:, j]
            e = quat.normalize(p[:, n] - pivot)
            t = quat.normalize(targets - pivot)
            # A tip or target on the pivot leaves the turn undefined: skip it.
            ok = np.any(e != 0.0, axis=1) & np.any(t != 0.0, axis=1)
            e = np.where(ok[:, None], e, t)
            q = quat.swing(e, np.where(ok[:, None], t, e), np.broadcast_to(fallbacks[j], e.shape))
            rel = p[:, j + 1 :] - pivot[:, None, :]
            p[:, j + 1 :] = pivot[:, None, :] + quat.rotate(q[:, None, :], rel)
        return p, None

    return step


def _limited_step(chain: Chain):
    n = chain.n_bones
    # Stiffness slows a joint: its turn is scaled by 1 - mean stiffness.
    scale = 1.0 - chain.limits.stiffness.mean(axis=1)

    def step(points: np.ndarray, local: np.ndarray, targets: np.ndarray):
        local = local.copy()
        frames, p = constrained.forward(chain, local)
        for j in range(n - 1, -1, -1):
            pivot = p[:, j]
            tip_dir = p[:, n] - pivot
            target_dir = targets - pivot
            ok = (np.linalg.norm(tip_dir, axis=1) > 0.0) & (np.linalg.norm(target_dir, axis=1) > 0.0)
            e = quat.normalize(np.where(ok[:, None], tip_dir, [0.0, 1.0, 0.0]))
            t = quat.normalize(np.where(ok[:, None], target_dir, e))
            turn = quat.swing(e, np.where(ok[:, None], t, e), quat.any_perpendicular(e))
            if scale[j] != 1.0:
                turn = quat.from_rotation_vector(scale[j] * quat.to_rotation_vector(turn))
            parent = frames[:, j - 1] if j > 0 else np.broadcast_to(chain.base_frame, (p.shape[0], 4))
            rest = quat.multiply(parent, chain.reference[j])
            new_local = quat.multiply(quat.conjugate(rest), quat.multiply(turn, frames[:, j]))
            local[:, j] = constrained.clamp_local(chain, j, new_local)
            frames, p = constrained.forward(chain, local)
        return p, local

    return step
