"""Many targets through the block kernels, or the reason they cannot serve them."""

from __future__ import annotations

import numpy as np

from ..model.chain import Chain
from ..model.result import BatchSolution
from . import block_loop as loop
from . import float_solve as one

KERNEL = "block kernel"
CHUNK = 32768  # targets per block run: bounds the work arrays (20 bones: ~16 MB each)


def reason(chain: Chain, options: dict, declines: one.Declines | None) -> str | None:
    """Why the block kernel cannot serve this chain and these options (None: it can); the same
    cases as the float kernels (`common.float_solve.reason`, `declines` the method's own, from its
    registry entry), which the block kernels mirror."""
    return one.reason(chain, options, declines, KERNEL)


def solve(chain: Chain, targets: np.ndarray, method: str, tolerance: float, cap: int, make_steps) -> BatchSolution:
    """`solve_batch(chain, targets, method=...)` without goals, for what `reason` accepts;
    `make_steps()` gives (block step, general step), from the method's registry entry (fresh
    ones per chunk: a block step keeps work arrays sized to its targets)."""
    m, n = targets.shape[0], chain.n_bones
    if m > CHUNK:  # independent targets: solve them in chunks and stack
        parts = [solve(chain, targets[k : k + CHUNK], method, tolerance, cap, make_steps) for k in range(0, m, CHUNK)]
        return BatchSolution(
            *(np.concatenate([getattr(p, f) for p in parts]) for f in ("points", "rotations", "iterations")),
            np.concatenate([p.error for p in parts]),
            np.concatenate([p.reached for p in parts]),
            method,
        )
    step, general = make_steps()
    with np.errstate(all="ignore"):  # NaN marks an undefined step; `loop.run` redoes it
        points, iterations = loop.run(chain, targets, tolerance, cap, step, general)
        rotations = loop.swing_rotations(chain, points)
    error = loop.distance(points[n], targets.T)
    return BatchSolution(
        np.ascontiguousarray(points.transpose(2, 0, 1)) if m else np.zeros((0, n + 1, 3)),
        rotations,
        iterations,
        error,
        error <= tolerance,
        method,
    )
