"""solve_sequence: one chain through targets in order, each solved from the previous solution.

The bake's core. Frame k starts from frame k-1's pose, so iterative methods
warm-start and the motion follows the previous pose. Unlimited triangulation
has a fast path: the solved directions go from step to step as plain floats
(no Chain per step), the tie-breaker axes are brought up to date only in the
rare steps that need one, and the bones' frames are built afterwards in one
vectorised scan. Other methods rebuild the chain from each solution.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, replace
from itertools import chain as iterchain

import numpy as np

from . import kernels, quat
from .api import _settings, solve
from .chain import Chain, _perpendicular
from .triangulation import BAND, check_fold_angle, check_smooth_fold
from .triangulation_scalar import fold_blend, fold_terms, one_pass

CHUNK = 4096  # steps between conversions of the triangulation pass's tuples to arrays


@dataclass(frozen=True, slots=True)
class SequenceSolution:
    """Steps of `solve_sequence`; `frames[k]` are the bones' world orientations
    after step k (None when the chain has no frames), `tips[k]` the tip."""

    points: np.ndarray | None  # (m, n+1, 3); None when not kept
    tips: np.ndarray  # (m, 3) the last point of each step
    frames: np.ndarray | None  # (m, n, 4)
    error: np.ndarray  # (m,) tip-to-target distance
    iterations: np.ndarray  # (m,)
    reached: np.ndarray  # (m,) error <= tolerance
    method: str


def _targets(targets: object) -> np.ndarray:
    try:
        t = np.array(targets, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"targets must be an (m, 3) array of numbers: {exc}") from exc
    if t.ndim != 2 or t.shape[1] != 3 or t.shape[0] < 1:
        raise ValueError(f"targets must have shape (m, 3) with m >= 1, got {t.shape}")
    finite = np.all(np.isfinite(t), axis=1)
    if not np.all(finite):
        bad = int(np.flatnonzero(~finite)[0])
        raise ValueError(f"target {bad} is not finite: {t[bad].tolist()}")
    return t


def _tolerances(chain: Chain, tolerance: object, m: int) -> tuple[float | None, np.ndarray]:
    """(scalar for validation or None, per-step tolerances (m,))."""
    if tolerance is None or np.ndim(tolerance) == 0:
        return tolerance, None
    tol = np.array(tolerance, dtype=float)
    if tol.shape != (m,) or not np.all(np.isfinite(tol)) or np.any(tol <= 0.0):
        raise ValueError(f"tolerance must be a positive distance or {m} of them, got shape {tol.shape}")
    return float(tol[0]), tol


def solve_sequence(
    chain: Chain,
    targets: object,
    *,
    method: str,
    tolerance: object = None,
    max_iterations: int | None = None,
    progress: Callable[[int], None] | None = None,
    keep_points: bool = True,
    **method_options: object,
) -> SequenceSolution:
    """Solve (m, 3) targets one after another, step k from step k-1's solution.

    `tolerance`: a distance, or one per target; defaults and method options as
    `solve`. `progress(k)` is called after step k, for about every hundredth
    step and the last (steps are cheap: a call per step would show). Joint limits, reference
    pose and base frame of `chain` carry through every step. `keep_points`
    False keeps only the tips (a bake needs the frames and the tips)."""
    t = _targets(targets)
    scalar_tol, per_step = _tolerances(chain, tolerance, len(t))
    tol, iters, options = _settings(chain, method, scalar_tol, max_iterations, method_options)
    tols = np.full(len(t), tol) if per_step is None else per_step
    report = _sparse(progress, len(t))
    if method == "triangulation" and chain.limits is None:
        steps = _triangulation(chain, t, tols, options["fold_angle"], options["smooth_fold"], report, keep_points)
    else:
        steps = _step_by_step(chain, t, tols, method, iters, options, report)
    return steps if keep_points or steps.points is None else replace(steps, points=None)


def _sparse(progress: Callable[[int], None] | None, m: int) -> Callable[[int], None] | None:
    """`progress` called for every stride-th step and the last one."""
    if progress is None:
        return None
    stride = max(1, m // 100)
    return lambda k: progress(k) if (k + 1) % stride == 0 or k == m - 1 else None


def _step_by_step(chain, targets, tols, method, iters, options, progress) -> SequenceSolution:
    if kernels.one.reason(chain, method, options) is None:  # FABRIK, CCD, DLS on float tuples
        steps = kernels.sequence.solve_steps(chain, targets, tols, method, iters, options, progress)
        points, frames, iterations = steps
        error = np.linalg.norm(points[:, -1] - targets, axis=1)
        return SequenceSolution(points, points[:, -1].copy(), frames, error, iterations, error <= tols, method)
    m, n = len(targets), chain.n_bones
    points = np.empty((m, n + 1, 3))
    frames = None if chain.frames is None else np.empty((m, n, 4))
    error, iterations = np.empty(m), np.empty(m, dtype=int)
    # The joint model's rest pose is the first chain's: every step keeps it.
    keep = {} if chain.frames is None else {"reference": chain.reference, "base_frame": chain.base_frame}
    current = chain
    for k, target in enumerate(targets):
        sol = solve(current, target, method=method, tolerance=float(tols[k]), max_iterations=iters, **options)
        points[k], error[k], iterations[k] = sol.points, sol.error, sol.iterations
        solved = None
        if frames is not None:
            solved = sol.frames(current)
            frames[k] = solved
        current = Chain(sol.points, solved, limits=chain.limits, **keep)
        if progress is not None:
            progress(k)
    return SequenceSolution(points, points[:, -1].copy(), frames, error, iterations, error <= tols, method)


class _Fallbacks:
    """Each bone's tie-breaker axis (its frame's X axis, perpendicular to the
    bone) at the current step, as `Chain` would compute it from the previous
    solution. Needed only in degenerate steps, so the frames are brought up to
    date lazily from the recorded rotations."""

    def __init__(self, chain: Chain) -> None:
        _, _, self.dirs, _, _, self.initial = chain._scalar
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
            return _perpendicular(d)
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
        return (ax / an, ay / an, az / an) if an > 1e-6 else _perpendicular(d)


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


def _triangulation(chain, targets, tols, fold_angle, smooth_fold, progress, keep_points) -> SequenceSolution:
    if fold_angle != 180.0:
        check_fold_angle(fold_angle)
    fold = fold_terms(fold_angle)
    pts, lengths, dirs, reach, inner, _ = chain._scalar
    blend = fold_blend(lengths, reach, inner, check_smooth_fold(smooth_fold, fold_angle))
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
