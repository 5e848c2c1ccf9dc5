"""Unlimited triangulation through a sequence of targets, each step from the last, on plain floats.

The solved directions go from step to step as plain floats (no Chain per step),
the tie-breaker axes are brought up to date only in the rare steps that need one,
and the bones' frames are built afterwards in one vectorised scan per chunk.
"""

from __future__ import annotations

import gc
import math
from contextlib import contextmanager
from itertools import chain as iterchain

import numpy as np

from .. import quat
from ..maths.floats import perpendicular
from ..model.chain import Chain
from ..model.result import SequenceSolution
from .chain_floats import fold_blend, fold_terms, one_pass
from .checks import BAND

CHUNK = 4096  # steps between conversions of the pass's tuples to arrays


class _Fallbacks:
    """Each bone's tie-breaker axis (its frame's X axis, perpendicular to the
    bone) at the current step, as `Chain` would compute it from the previous
    solution. Needed only in degenerate steps, so the frames are brought up to
    date lazily from the recorded rotations."""

    def __init__(self, chain: Chain) -> None:
        _, _, self.dirs, _, _, self.initial = chain.scalar_terms
        self.frames = None if chain.frames is None else chain.frames.tolist()
        self.known = [0] * chain.n_bones  # steps of `history` already applied to self.frames[i]
        self.history: list[list[tuple]] = []
        self.started = False

    def record(self, rotations: list[tuple], dirs: list[tuple]) -> None:
        self.history.append(rotations)
        self.dirs, self.started = dirs, True

    def rebase(self, frames: np.ndarray | None) -> None:
        """Every bone's frame is now `frames` (n, 4): forget the recorded steps (bounded memory)."""
        if frames is not None:
            self.frames = frames.tolist()
        self.known = [0] * len(self.known)
        self.history = []

    def __getitem__(self, i: int) -> tuple:
        if not self.started:
            return self.initial[i]
        d = self.dirs[i]
        if self.frames is None:
            return perpendicular(d)
        w, x, y, z = self.frames[i]
        for rots in self.history[self.known[i] :]:
            rw, rx, ry, rz = rots[i]
            w, x, y, z = (
                rw * w - rx * x - ry * y - rz * z,
                rw * x + rx * w + ry * z - rz * y,
                rw * y - rx * z + ry * w + rz * x,
                rw * z + rx * y - ry * x + rz * w,
            )
        norm = math.sqrt(w * w + x * x + y * y + z * z)
        w, x, y, z = w / norm, x / norm, y / norm, z / norm
        self.frames[i], self.known[i] = (w, x, y, z), len(self.history)
        ax, ay, az = 1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y + w * z), 2.0 * (x * z - w * y)
        along = ax * d[0] + ay * d[1] + az * d[2]
        ax, ay, az = ax - along * d[0], ay - along * d[1], az - along * d[2]
        an = math.sqrt(ax * ax + ay * ay + az * az)
        return (ax / an, ay / an, az / an) if an > 1e-6 else perpendicular(d)


@contextmanager
def _paused_gc():
    """The pass makes many float tuples and no reference cycles: the cyclic
    collector's repeated sweeps over them would be pure overhead (~10%)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _floats(rows: list[tuple], width: int) -> np.ndarray:
    """A flat float array from many small tuples (about twice as fast as np.array on the list)."""
    return np.fromiter(iterchain.from_iterable(rows), float, width * len(rows))


def solve_steps(
    chain: Chain, targets, tols, fold_angle: float, smooth_fold: float, progress, keep_points: bool
) -> SequenceSolution:
    """Unlimited triangulation through `targets` (m, 3), each step from the last (options checked)."""
    fold = fold_terms(fold_angle)
    pts, lengths, dirs, reach, inner, _ = chain.scalar_terms
    blend = fold_blend(lengths, reach, inner, smooth_fold)
    guard, band, n = chain.fold_guard, BAND * chain.total_length, chain.n_bones
    fallbacks = _Fallbacks(chain)
    m = len(targets)
    points = np.empty((m, n + 1, 3)) if keep_points else None
    tips = np.empty((m, 3))
    frames = None if chain.frames is None else np.empty((m, n, 4))
    current = chain.frames
    # In chunks, so the per-step tuples never pile up over a long sequence.
    for start in range(0, m, CHUNK):
        stop = min(start + CHUNK, m)
        flat_points, flat_rots = [], []
        with _paused_gc():
            for k, target in enumerate(map(tuple, targets[start:stop].tolist()), start):
                out, rots, dirs = one_pass(
                    pts[0], lengths, dirs, reach, guard, fallbacks, target, band, fold_angle, fold, blend, True
                )
                fallbacks.record(rots, dirs)
                if keep_points:
                    flat_points += out
                else:
                    flat_points.append(out[-1])
                flat_rots += rots
                if progress is not None:
                    progress(k)
        if keep_points:
            points[start:stop] = _floats(flat_points, 3).reshape(stop - start, n + 1, 3)
            tips[start:stop] = points[start:stop, -1]
        else:
            tips[start:stop] = _floats(flat_points, 3).reshape(stop - start, 3)
        if frames is not None:
            steps = quat.cumulative(_floats(flat_rots, 4).reshape(stop - start, n, 4))
            chunk = quat.multiply(steps, current[None])
            chunk /= np.linalg.norm(chunk, axis=-1, keepdims=True)
            frames[start:stop] = chunk
            current = chunk[-1]
        fallbacks.rebase(current)
    error = np.linalg.norm(tips - targets, axis=1)
    return SequenceSolution(points, tips, frames, error, np.ones(m, dtype=int), error <= tols, "triangulation")
