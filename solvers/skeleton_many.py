"""Many frames of one tree solve at once: a bake's frames, each from the same input pose.

`solve_skeleton_many` is `solve_skeleton` for m sets of targets (what Blender's IK does on each
baked frame: start from the same pose, solve). It validates as `solve_skeleton` does, then runs
the method's batch tree kernel (`registry.Method.tree_many`), which solves every frame at once
and must agree with `solve_skeleton` frame by frame (same iterations, rotations within 1e-9).
Where the method has none, or it declines (the reason it gives), the frames are solved one by
one with `solve_skeleton` and the result's `reason` says why.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from . import registry
from .api import method_settings
from .common.aim_goals import after_reach_frames, aiming
from .common.frames import frame_effectors, frame_rows, solve_frames
from .common.pins import hold, off_frames
from .common.root_move import DEFAULT_STIFFNESS, MOVING_ROOT
from .common.soft_goals import soften_positions
from .common.tree_run_lanes import errors_many
from .skeleton import Effector, Skeleton, SkeletonBatch, finish, ranked_weights
from .skeleton_effectors import merge_shared, resolve_pins, shared_bones
from .skeleton_floats import moved_bones
from .skeleton_solve import solve_skeleton, stepped_start


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
    move_root: bool = False,
    root_stiffness: float = DEFAULT_STIFFNESS,
    **options: object,
) -> SkeletonBatch:
    """Solve `effectors` at m frames, each from the local rotations `local` (n, 4).

    `positions` (m, k, 3): effector k's position at each frame (it replaces the effector's own;
    a pin's rows are ignored: it holds its own position, else where `local` puts it). `poles` (m, k, 3) or None:
    each effector's pole per frame (a NaN row: none; a pin's rows ignored, it keeps its own),
    else every frame takes the effectors' own.
    Orientations, weights, priorities and the rest are the effectors' own on every frame.
    `tolerance` and `max_iterations` as `solve_skeleton`'s (the default tolerance from the bones
    the effectors move), the same on every frame. An effector's `softness` softens its positions
    on every frame (common.soft_goals), once, here. `move_root`, `root_stiffness`: as
    solve_skeleton's, frame by frame (the batch's `root_shift`: the root's move per frame)."""
    local, positions, poles = frame_rows(skeleton, local, effectors, positions, poles)
    if aiming(effectors):  # aims after the reach, frame by frame (common.aim_goals)
        method_settings(method, tolerance, max_iterations, options, 1.0)
        settings = {"tolerance": tolerance, "max_iterations": max_iterations}

        def reach(goals, rows, poles):
            return solve_skeleton_many(skeleton, local, goals, rows, method=method, poles=poles, **settings, **options)

        return after_reach_frames(skeleton, local, effectors, positions, poles, reach, **settings, method=method)
    positions, effectors = soften_positions(skeleton, effectors, positions)
    k = len(effectors)
    entry = registry.get(method)
    length = float(np.sum(skeleton.lengths[moved_bones(skeleton, [e.bone for e in effectors])]))
    iterations_cap = max_iterations
    if iterations_cap is None and entry.tree_max_iterations:
        iterations_cap = entry.tree_max_iterations
    _, tol, iters, checked = method_settings(method, tolerance, iterations_cap, options, length)
    if move_root:
        why = MOVING_ROOT
    elif k == 1 and not effectors[0].pin:
        why = "one effector: a chain, solved by solvers.solve"
    elif entry.tree_many is None:
        why = f"{method} has no batch tree kernel"
    else:
        resolved = [replace(e, pole=None) for e in resolve_pins(skeleton, local, effectors)]
        goals, goal_positions, goal_poles = _merged(resolved, positions, poles)
        start = local
        if entry.tree_start_steps:  # each frame's start, as solve_skeleton takes it (stepped_start)
            start = np.repeat(np.asarray(local, dtype=float)[None], len(positions), axis=0)
            for f, row in enumerate(goal_positions):
                frame = [e if e.pin else replace(e, position=row[k]) for k, e in enumerate(goals)]
                start[f] = stepped_start(skeleton, local, frame, tol, entry.tree_start_steps)
        solved = entry.tree_many(skeleton, start, goals, goal_positions, goal_poles, tol, iters, checked)
        if not isinstance(solved, str):
            return _held(skeleton, local, solved, (goals, goal_positions), resolved, positions, tol, method)
        why = f"{method}'s batch tree kernel: {solved}"

    def frame(f: int):
        return solve_skeleton(
            skeleton,
            local,
            frame_effectors(effectors, positions, poles, f),
            method=method,
            tolerance=tolerance,
            max_iterations=max_iterations,
            **({"move_root": True, "root_stiffness": root_stiffness} if move_root else {}),
            **options,
        )

    return solve_frames(local, positions, method, frame, why)


def _merged(effectors: list[Effector], positions: np.ndarray, poles: np.ndarray):
    """(effectors, positions, poles) with those on one bone merged as solve_skeleton merges them
    (skeleton_effectors.merge_shared: their weighted mean position on each frame, the lead's pole)."""
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
    held (common.pins.hold, frame by frame where one is off) and every effector's error measured on
    them. `merged`: (the goals solved, their positions per frame)."""
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
        kept = hold(skeleton, local, solution, frame, tol, registry.LEAST_SQUARES)
        rotations[f] = kept.local
        if kept.reason:
            reasons.add(kept.reason)
    pins = np.array([e.pin for e in effectors])
    fixed = np.array([e.position if e.pin else np.zeros(3) for e in effectors])
    error = errors_many(skeleton, rotations, effectors, np.where(pins[None, :, None], fixed[None], positions))
    return SkeletonBatch(rotations, error, np.all(error <= tol, axis=1), iterations, method, "; ".join(sorted(reasons)))
