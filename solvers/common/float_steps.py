"""`sequence._step_by_step` for the iterative float kernels: each step solves from the
previous step's solution, carried as float tuples (no Chain and no numpy per step)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..model.chain import Chain, fallback_axis, link_terms
from .float_solve import Solver, Terms


def _turned(rotations: list, frames: tuple, dirs: list) -> tuple[tuple, tuple]:
    """(the bones' new frames, their tie-breaker axes): floats.multiply of each rotation and
    frame, normalised as Chain normalises its frames, and chain.fallback_axis, inlined (they
    run once per bone per step)."""
    new, axes = [], []
    sqrt = math.sqrt
    for (aw, ax, ay, az), (bw, bx, by, bz), d in zip(rotations, frames, dirs, strict=True):
        w = aw * bw - ax * bx - ay * by - az * bz
        x = aw * bx + ax * bw + ay * bz - az * by
        y = aw * by - ax * bz + ay * bw + az * bx
        z = aw * bz + ax * by - ay * bx + az * bw
        n = sqrt(w * w + x * x + y * y + z * z)
        w, x, y, z = w / n, x / n, y / n, z / n
        new.append((w, x, y, z))
        # The frame's X axis, made perpendicular to the bone.
        ux, uy, uz = 1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y + w * z), 2.0 * (x * z - w * y)
        along = ux * d[0] + uy * d[1] + uz * d[2]
        ux, uy, uz = ux - along * d[0], uy - along * d[1], uz - along * d[2]
        un = sqrt(ux * ux + uy * uy + uz * uz)
        axes.append((ux / un, uy / un, uz / un) if un > 1e-6 else fallback_axis(d, (w, x, y, z)))
    return tuple(new), tuple(axes)


def solve_steps(
    chain: Chain,
    targets: np.ndarray,
    tols: np.ndarray,
    solver: Solver,
    cap: int,
    options: dict,
    progress: Callable[[int], None] | None,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """(points (m, n+1, 3), frames (m, n, 4) or None, iterations (m,)) for a chain and options
    `one.reason` accepts, through the method's float kernel `solver` (see common.make_kernels.floats); each
    step's chain is the previous solution, as `Chain` would read it."""
    rows, lengths, dirs, _, _, fallbacks = chain.scalar_terms
    total = chain.total_length
    frames = None if chain.frames is None else tuple(map(tuple, chain.frames.tolist()))
    all_points, all_frames, iterations = [], [], []
    for k, target in enumerate(map(tuple, targets.tolist())):
        solve = solver(float(tols[k]), cap, options)
        points, rotations, its = solve(Terms(rows, lengths, dirs, fallbacks, total, *[None] * 5), target)
        all_points.append(points)
        iterations.append(its)
        lengths, dirs, total = link_terms(points)
        rows = tuple(points)
        if frames is None:
            fallbacks = tuple(fallback_axis(d, None) for d in dirs)
        else:
            frames, fallbacks = _turned(rotations, frames, dirs)
            all_frames.append(frames)
        lengths, dirs = tuple(lengths), tuple(dirs)
        if progress is not None:
            progress(k)
    out_frames = None if frames is None else np.array(all_frames)
    return np.array(all_points), out_frames, np.array(iterations, dtype=int)
