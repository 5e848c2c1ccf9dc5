"""Many frames of one tree solve at once: a bake's frames, each from the same input pose.

`solve_skeleton_many` is `solve_skeleton` for m sets of targets (what Blender's IK does on each
baked frame: start from the same pose, solve). It validates as `solve_skeleton` does, then runs
the method's batch tree kernel (`registry.Method.tree_many`), which solves every frame at once
and must agree with `solve_skeleton` frame by frame (same iterations, rotations within 1e-9).
Where the method has none, or it declines (the reason it gives), the frames are solved one by
one with `solve_skeleton` and the result's `reason` says why.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .skeleton import (
    Effector,
    Skeleton,
    finish,
    merge_shared,
    ranked_weights,
    resolve_pins,
    shared_bones,
    solve_skeleton,
)


@dataclass(frozen=True)
class SkeletonBatch:
    """Every frame's solution: SkeletonSolution's fields with a leading frame axis."""

    local: np.ndarray  # (m, n, 4) every bone's local rotation per frame
    error: np.ndarray  # (m, k) each effector's distance from its position, measured on `local`
    reached: np.ndarray  # (m,) every effector within tolerance
    iterations: np.ndarray  # (m,)
    method: str
    # Why the frames were solved one by one, and a pin that could not hold ("" when neither).
    reason: str = ""


def solve_skeleton_many(
    skeleton: Skeleton,
    local: np.ndarray,
    effectors: list[Effector],
    positions: np.ndarray,
    *,
    method: str,
    tolerance: float | None = None,
    max_iterations: int | None = None,
    poles: np.ndarray | None = None,
    **options: object,
) -> SkeletonBatch:
    """Solve `effectors` at m frames, each from the local rotations `local` (n, 4).

    `positions` (m, k, 3): effector k's position at each frame (it replaces the effector's own;
    a pin's rows are ignored: it holds its own position, else where `local` puts it). `poles` (m, k, 3) or None:
    each effector's pole per frame (a NaN row: none; a pin's rows ignored, it keeps its own),
    else every frame takes the effectors' own.
    Orientations, weights, priorities and the rest are the effectors' own on every frame.
    `tolerance` and `max_iterations` as `solve_skeleton`'s (the default tolerance from the bones
    the effectors move), the same on every frame."""
    from . import registry
    from .api import method_settings
    from .tree import moved_bones

    local, positions, poles = frame_rows(skeleton, local, effectors, positions, poles)
    k = len(effectors)
    entry = registry.get(method)
    length = float(np.sum(skeleton.lengths[moved_bones(skeleton, [e.bone for e in effectors])]))
    iterations_cap = max_iterations
    if iterations_cap is None and entry.tree_max_iterations:
        iterations_cap = entry.tree_max_iterations
    _, tol, iters, checked = method_settings(method, tolerance, iterations_cap, options, length)
    if k == 1 and not effectors[0].pin:
        why = "one effector: a chain, solved by solvers.solve"
    elif entry.tree is None:
        several = ", ".join(m.name for m in registry.METHOD_LIST if m.tree is not None) or "none yet"
        raise ValueError(f"{method} solves one chain at a time; for several effectors choose: {several}")
    elif entry.tree_many is None:
        why = f"{method} has no batch tree kernel"
    else:
        resolved = [replace(e, pole=None) for e in resolve_pins(skeleton, local, effectors)]
        goals, goal_positions, goal_poles = _merged(resolved, positions, poles)
        solved = entry.tree_many(skeleton, local, goals, goal_positions, goal_poles, tol, iters, checked)
        if not isinstance(solved, str):
            return _held(skeleton, local, solved, (goals, goal_positions), resolved, positions, tol, method)
        why = f"{method}'s batch tree kernel: {solved}"
    return _frame_by_frame(
        skeleton, local, effectors, positions, poles, method, tolerance, max_iterations, options, why
    )


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
    positions = _rows(positions, k, "positions")
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
        poles = _rows(poles, k, "poles")
        if len(poles) != m:
            raise ValueError(f"poles must have one row per frame of positions ({m}), got {len(poles)}")
        finite = np.isfinite(poles)
        if np.any(finite.any(axis=-1) != finite.all(axis=-1)):
            raise ValueError("a pole row must be finite (a pole) or all NaN (no pole)")
        for j, e in enumerate(effectors):
            if e.pin:  # as its position: a pin keeps its own
                poles[:, j] = np.nan if e.pole is None else e.pole
    return local, positions, poles


def frame_effectors(effectors: list[Effector], positions: np.ndarray, poles: np.ndarray, f: int) -> list[Effector]:
    """Frame f's effectors: each (not a pin) at its position and pole of that frame (frame_rows)."""
    return [
        e
        if e.pin
        else replace(e, position=positions[f, j], pole=poles[f, j] if np.isfinite(poles[f, j, 0]) else None)
        for j, e in enumerate(effectors)
    ]


def _merged(effectors: list[Effector], positions: np.ndarray, poles: np.ndarray):
    """(effectors, positions, poles) with those on one bone merged as solve_skeleton merges them
    (skeleton.merge_shared: their weighted mean position on each frame, the lead's pole)."""
    goals = merge_shared(effectors)
    if goals is effectors:
        return effectors, positions, poles
    m = len(positions)
    goal_positions, goal_poles = np.empty((m, len(goals), 3)), np.empty((m, len(goals), 3))
    for j, (group, lead) in enumerate(shared_bones(effectors)):
        rows = np.array(
            [np.broadcast_to(effectors[k].position if effectors[k].pin else positions[:, k], (m, 3)) for k in group]
        )
        weights = np.array(ranked_weights([effectors[k] for k in group]))
        goal_positions[:, j] = np.tensordot(weights, rows, axes=1) / weights.sum()
        goal_poles[:, j] = poles[:, lead]
    return goals, goal_positions, goal_poles


def _held(skeleton, local, solved, merged, effectors, positions, tol, method) -> SkeletonBatch:
    """The batch kernel's frames (`solved`: its rotations, errors and iterations) with their pins
    held (tree.pins.hold, frame by frame where one is off) and every effector's error measured on
    them. `merged`: (the goals solved, their positions per frame)."""
    from .tree.pins import hold, off_frames
    from .tree.run_many import errors_many

    rotations, error, iterations = solved
    goals, goal_positions = merged
    off = np.flatnonzero(off_frames(skeleton, rotations, goals, tol))
    if goals is effectors and not off.size:  # the kernel's own errors are every effector's
        return SkeletonBatch(rotations, error, np.all(error <= tol, axis=1), iterations, method)
    rotations = np.array(rotations)
    reasons = set()
    for f in off:
        frame = [e if e.pin else replace(e, position=goal_positions[f, j]) for j, e in enumerate(goals)]
        solution = finish(skeleton, rotations[f], frame, tol, int(iterations[f]), method)
        kept = hold(skeleton, local, solution, frame, tol)
        rotations[f] = kept.local
        if kept.reason:
            reasons.add(kept.reason)
    pins = np.array([e.pin for e in effectors])
    fixed = np.array([e.position if e.pin else np.zeros(3) for e in effectors])
    error = errors_many(skeleton, rotations, effectors, np.where(pins[None, :, None], fixed[None], positions))
    return SkeletonBatch(rotations, error, np.all(error <= tol, axis=1), iterations, method, "; ".join(sorted(reasons)))


def _rows(value, k: int, what: str) -> np.ndarray:
    try:
        array = np.array(value, dtype=float)  # a copy: pins' rows are overwritten
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be numbers with shape (frames, {k}, 3)") from None
    if array.ndim != 3 or array.shape[1:] != (k, 3) or len(array) == 0:
        raise ValueError(f"{what} must have shape (frames >= 1, {k}, 3), got {array.shape}")
    return array


def _frame_by_frame(
    skeleton, local, effectors, positions, poles, method, tolerance, max_iterations, options, why: str
) -> SkeletonBatch:
    """Each frame through solve_skeleton (the batch kernel's reason kept)."""
    m, k = positions.shape[:2]
    rotations = np.empty((m,) + local.shape)
    error = np.empty((m, k))
    reached = np.empty(m, dtype=bool)
    iterations = np.empty(m, dtype=np.int64)
    name = method
    for f in range(m):
        frame = frame_effectors(effectors, positions, poles, f)
        sol = solve_skeleton(
            skeleton, local, frame, method=method, tolerance=tolerance, max_iterations=max_iterations, **options
        )
        rotations[f], error[f], reached[f], iterations[f], name = (
            sol.local,
            sol.error,
            sol.reached,
            sol.iterations,
            sol.method,
        )
    return SkeletonBatch(rotations, error, reached, iterations, name, why)
