"""Cyclic coordinate descent (`ccd.chain_floats`) on (n+1, 3, w) blocks."""

from __future__ import annotations

import numpy as np

from ..maths import blocks as vec
from ..model.chain import Chain


def _unit(v: np.ndarray, sq: np.ndarray) -> np.ndarray:
    """v / |v| for a (3, w) block, in place; a zero vector gives NaN (`loop.run` hands it to the
    general step, which skips the turn as `ccd.chain_floats` does)."""
    np.multiply(v, v, out=sq)
    r = sq[0] + sq[1]
    r += sq[2]
    np.sqrt(r, out=r)
    v /= r
    return v


def make_step(chain: Chain):
    n = chain.n_bones
    fallbacks = [tuple(f) for f in chain.fallback_axes.tolist()]
    buf = vec.Buffers()

    def step(old: np.ndarray, new: np.ndarray, targets: np.ndarray) -> None:
        w = targets.shape[1]
        new[...] = old
        sq = buf("sq", (3, w))
        for j in range(n - 1, -1, -1):
            pivot = new[j]
            e = _unit(np.subtract(new[n], pivot, out=buf("e", (3, w))), sq)
            t = _unit(np.subtract(targets, pivot, out=buf("t", (3, w))), sq)
            qw, qx, qy, qz = vec.swing(e, t, fallbacks[j])
            k = n - j  # every point past the joint
            v = np.subtract(new[j + 1 :], pivot, out=buf("v", (n, 3, w))[:k])
            vx, vy, vz = v[:, 0], v[:, 1], v[:, 2]
            u = buf("u", (n, 3, w))[:k]
            ux, uy, uz = u[:, 0], u[:, 1], u[:, 2]
            c = buf("c", (n, w))[:k]
            np.multiply(qy, vz, out=ux)
            ux -= np.multiply(qz, vy, out=c)
            ux *= 2.0
            np.multiply(qz, vx, out=uy)
            uy -= np.multiply(qx, vz, out=c)
            uy *= 2.0
            np.multiply(qx, vy, out=uz)
            uz -= np.multiply(qy, vx, out=c)
            uz *= 2.0
            # p = pivot + (v + qw u + q x u), summed in that order
            cross = buf("cross", (n, 3, w))[:k]
            np.multiply(qy, uz, out=cross[:, 0])
            cross[:, 0] -= np.multiply(qz, uy, out=c)
            np.multiply(qz, ux, out=cross[:, 1])
            cross[:, 1] -= np.multiply(qx, uz, out=c)
            np.multiply(qx, uy, out=cross[:, 2])
            cross[:, 2] -= np.multiply(qy, ux, out=c)
            u *= qw
            v += u
            v += cross
            np.add(pivot, v, out=new[j + 1 :])

    return step
