"""FABRIK's line placement (`fabrik.chain_floats`) on (n+1, 3, w) blocks."""

from __future__ import annotations

import numpy as np

from ..maths.blocks import Buffers
from ..model.chain import Chain


def make_step(chain: Chain):
    n = chain.n_bones
    lengths = chain.lengths.tolist()
    buf = Buffers()

    def step(old: np.ndarray, new: np.ndarray, targets: np.ndarray) -> None:
        w = targets.shape[1]
        d, sq, r = buf("d", (3, w)), buf("sq", (3, w)), buf("r", (w,))

        def place(anchor: np.ndarray, toward: np.ndarray, length: float, out: np.ndarray) -> None:
            # anchor + length * (d / |d|), d = toward - anchor; |d| = 0 gives NaN (`loop.run`
            # hands those targets to the general step, whose fallback is the bone's direction).
            np.subtract(toward, anchor, out=d)
            np.multiply(d, d, out=sq)
            np.add(sq[0], sq[1], out=r)
            np.add(r, sq[2], out=r)
            np.sqrt(r, out=r)
            np.divide(d, r, out=d)
            np.multiply(d, length, out=d)
            np.add(anchor, d, out=out)

        anchor = targets  # tip to root: joint i on the line from its new child to its old self
        for i in range(n - 1, 0, -1):
            place(anchor, old[i], lengths[i], new[i])
            anchor = new[i]
        for i in range(n):  # root to tip (new[0] is the root); the tip's old self is the target
            place(new[i], new[i + 1] if i + 1 < n else targets, lengths[i], new[i + 1])

    return step
