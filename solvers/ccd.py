"""Cyclic coordinate descent: tip to root, each joint turns the rest of the
chain so the tip lies on the joint->target line (paper eq. 1-2). One sweep
over all joints is one iteration."""

from __future__ import annotations

import numpy as np

from . import quat
from .chain import Chain


def make_step(chain: Chain):
    n = chain.n_bones
    fallbacks = chain.fallback_axes

    def step(points: np.ndarray, targets: np.ndarray) -> np.ndarray:
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
        return p

    return step
