"""Many frames of one tree: the frames' rows checked, each frame's effectors, and the loop that
solves frame after frame into one `SkeletonBatch` (solve_skeleton_many's frame by frame,
solve_skeleton_sequence's continued frames: one loop)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..skeleton import Effector, Skeleton, SkeletonBatch, SkeletonSolution


def frame_rows(skeleton: Skeleton, local, effectors: list[Effector], positions, poles) -> tuple:
    """(local (n, 4), positions (m, k, 3), poles (m, k, 3)) checked as solve_skeleton_many states
    them: a pin's rows hold its own pole (NaN: none), every frame's poles filled in."""
    local = np.asarray(local, dtype=float)
    n, k = skeleton.n_bones, len(effectors)
    if local.shape != (n, 4) or not np.all(np.isfinite(local)):
        raise ValueError(f"local rotations must be finite with shape ({n}, 4), got {local.shape}")
    if not effectors:
        raise ValueError("no effectors to solve")
    for effector in effectors:
        if not 0 <= effector.bone < n:
            raise ValueError(f"effector bone {effector.bone} is not a bone of the skeleton")
    positions = _frame_rows(positions, k, "positions")
    pins = np.array([e.pin for e in effectors])
    if not np.all(np.isfinite(positions[:, ~pins])):
        raise ValueError("positions must be finite (only a pin's rows may be left out)")
    m = len(positions)
    if poles is None:
        poles = np.full((m, k, 3), np.nan)
        for j, e in enumerate(effectors):
            if e.pole is not None:
                poles[:, j] = e.pole
    else:
        poles = _frame_rows(poles, k, "poles")
        if len(poles) != m:
            raise ValueError(f"poles must have one row per frame of positions ({m}), got {len(poles)}")
        finite = np.isfinite(poles)
        if np.any(finite.any(axis=-1) != finite.all(axis=-1)):
            raise ValueError("a pole row must be finite (a pole) or all NaN (no pole)")
        for j, e in enumerate(effectors):
            if e.pin:  # as its position: a pin keeps its own
                poles[:, j] = np.nan if e.pole is None else e.pole
    return local, positions, poles


def previous_rows(local: np.ndarray, previous) -> np.ndarray | None:
    """`previous` (the solution a sequence's first frame continues; None: none) checked as the
    input pose `local` is: finite, of its shape (a held kernel solves from it unchecked)."""
    if previous is None:
        return None
    previous = np.asarray(previous, dtype=float)
    if previous.shape != local.shape or not np.all(np.isfinite(previous)):
        raise ValueError(f"previous must be finite local rotations with shape {local.shape}, got {previous.shape}")
    return previous


def frame_effectors(effectors: list[Effector], positions: np.ndarray, poles: np.ndarray, f: int) -> list[Effector]:
    """Frame f's effectors: each (not a pin) at its position and pole of that frame (frame_rows)."""
    return [
        e if e.pin else _placed(e, positions[f, j], poles[f, j] if math.isfinite(poles[f, j, 0]) else None)
        for j, e in enumerate(effectors)
    ]


def _placed(effector: Effector, position: np.ndarray, pole: np.ndarray | None) -> Effector:
    """`effector` at `position` with `pole`, as `dataclasses.replace` makes it without its checks
    again: the effector was checked when made and the rows by `frame_rows` (finite float rows,
    what the checks would keep as they are); re-running every check each frame cost a bake more
    than its least-squares steps."""
    out = object.__new__(type(effector))
    out.__dict__.update(effector.__dict__, position=position, pole=pole)
    return out


def solve_frames(
    local: np.ndarray, positions: np.ndarray, method: str, solve: Callable[[int], SkeletonSolution], reason: str = ""
) -> SkeletonBatch:
    """`solve(f)` for every frame f of `positions` (m, k, 3), in order, gathered into one batch
    (its method: the last frame's; its reason: `reason`, else the frames' own, each once)."""
    m, k = positions.shape[:2]
    rotations = np.empty((m,) + local.shape)
    error = np.empty((m, k))
    reached = np.empty(m, dtype=bool)
    iterations = np.empty(m, dtype=np.int64)
    name, reasons = method, []
    shifts = None
    for f in range(m):
        sol = solve(f)
        if sol.root_shift is not None:  # a movable root: its move per frame
            shifts = np.zeros((m, 3)) if shifts is None else shifts
            shifts[f] = sol.root_shift
        rotations[f], error[f], reached[f], iterations[f], name = (
            sol.local,
            sol.error,
            sol.reached,
            sol.iterations,
            sol.method,
        )
        if sol.reason and sol.reason not in reasons:
            reasons.append(sol.reason)
    return SkeletonBatch(rotations, error, reached, iterations, name, reason or "; ".join(reasons), root_shift=shifts)


def _frame_rows(value, k: int, what: str) -> np.ndarray:
    try:
        array = np.array(value, dtype=float)  # a copy: pins' rows are overwritten
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be numbers with shape (frames, {k}, 3)") from None
    if array.ndim != 3 or array.shape[1:] != (k, 3) or len(array) == 0:
        raise ValueError(f"{what} must have shape (frames >= 1, {k}, 3), got {array.shape}")
    return array
