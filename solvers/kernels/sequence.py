"""`sequence._step_by_step` for the iterative float kernels: each step solves from the
previous step's solution, carried as float tuples (no Chain and no numpy per step)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..chain import Chain, fallback_axis, link_terms
from .floats import multiply
from .one import Terms, plain_solver


def _unit(q: tuple) -> tuple:
    w, x, y, z = q
    n = math.sqrt(w * w + x * x + y * y + z * z)  # as Chain normalises its frames
    return (w / n, x / n, y / n, z / n)


def solve_steps(
    chain: Chain,
    targets: np.ndarray,
    tols: np.ndarray,
    method: str,
    cap: int,
    options: dict,
    progress: Callable[[int], None] | None,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """(points (m, n+1, 3), frames (m, n, 4) or None, iterations (m,)) for a chain and options
    `one.reason` accepts; each step's chain is the previous solution, as `Chain` would read it."""
    rows, lengths, dirs, _, _, fallbacks = chain.scalar_terms
    total = chain.total_length
    frames = None if chain.frames is None else tuple(map(tuple, chain.frames.tolist()))
    all_points, all_frames, iterations = [], [], []
    for k, target in enumerate(map(tuple, targets.tolist())):
        solve = plain_solver(method, float(tols[k]), cap, options)
        points, rotations, its = solve(Terms(rows, lengths, dirs, fallbacks, total, *[None] * 5), target)
        all_points.append(points)
        iterations.append(its)
        lengths, dirs, total = link_terms(points)
        rows = tuple(points)
        if frames is None:
            fallbacks = tuple(fallback_axis(d, None) for d in dirs)
        else:
            frames = tuple(_unit(multiply(r, f)) for r, f in zip(rotations, frames, strict=True))
            all_frames.append(frames)
            fallbacks = tuple(fallback_axis(d, q) for d, q in zip(dirs, frames, strict=True))
        lengths, dirs = tuple(lengths), tuple(dirs)
        if progress is not None:
            progress(k)
    out_frames = None if frames is None else np.array(all_frames)
    return np.array(all_points), out_frames, np.array(iterations, dtype=int)
