"""solvers.common.tree_run across frames: every frame of a bake from the same input pose, at once.

The state is solvers.common.tree_run's (local rotations, world frames and heads per bone) with each
moved bone's entries as lanes (solvers.maths.lanes: one array entry per frame). Each frame
stops where `run` would stop it (within tolerance, the cap, stalled or settled); the frames
still iterating are gathered after every iteration, so a step works on those alone. Then the
local rotations (skeleton_floats.to_locals per frame) and the errors measured on them (skeleton.finish).
"""

from __future__ import annotations

import math

import numpy as np

from .. import limits as joint_limits
from .. import quat
from ..maths.lanes import conjugate, const, dist, lanes, multiply, normalize4, rotate, side, swing, take, where
from ..skeleton_floats import cached_rows, end_point, forward, rows
from .tree_run import SETTLE, STALL, level_costs, settled


def targets_of(plan, effectors, positions: np.ndarray) -> list[tuple]:
    """Per effector its target per frame: a pin's (fixed) as floats, the others' as lanes."""
    return [
        plan.targets[k] if e.pin else tuple(np.ascontiguousarray(positions[:, k, c]) for c in range(3))
        for k, e in enumerate(effectors)
    ]


# Below this many frames still iterating, each goes on alone on floats (one_step): a numpy call
# on a few lanes costs what the float code spends on dozens of frames.
TAIL = 20


def run_many(
    skeleton,
    local: np.ndarray,
    effectors,
    plan,
    targets: list[tuple],
    m: int,
    step,
    tolerance: float,
    max_iterations: int,
    free_twist: set[int],
    one_step=None,
):
    """(local rotations (m, n, 4), iterations (m,)) as `run` frame by frame: from `local`
    (one pose (n, 4), or a start per frame (m, n, 4)) clamped into the limits.
    `step(local, frames, heads, targets)` iterates on lanes;
    `one_step` (optional) is the float kernel's step (common.tree_run's, reading plan.targets), which
    takes over the last few frames (TAIL) from where the lanes left them."""
    moved = plan.moved
    local = np.array(local, dtype=float)
    if local.ndim == 3:  # a start per frame (m, n, 4): their own forward kinematics, as `run` does each
        return _run_from_starts(
            skeleton, local, effectors, plan, targets, m, step, tolerance, max_iterations, free_twist, one_step
        )
    if skeleton.limits is not None:
        local[moved] = joint_limits.clamp(skeleton.limits, np.array(moved), local[moved])
        free_twist = set()
    current = rows(local)
    frames0, heads0 = forward(skeleton, current)
    state_local, state_frames, state_heads = list(current), list(frames0), list(heads0)
    for i in moved:
        state_local[i] = lanes(current[i], m)
        state_frames[i] = lanes(frames0[i], m)
        state_heads[i] = lanes(heads0[i], m)
    return _iterate_lanes(
        skeleton, local, effectors, plan, targets, m, step, tolerance, max_iterations, free_twist, one_step,
        (state_local, state_frames, state_heads, frames0),
    )  # fmt: skip


def _run_from_starts(
    skeleton, local, effectors, plan, targets, m, step, tolerance, max_iterations, free_twist, one_step
):
    """run_many from a start per frame, `local` (m, n, 4) (each frame's bones other than the
    moved ones as one input pose's): lanes of each frame's own clamp and forward kinematics."""
    moved = plan.moved
    if skeleton.limits is not None:
        for f in range(m):
            local[f, moved] = joint_limits.clamp(skeleton.limits, np.array(moved), local[f, moved])
        free_twist = set()
    per = [rows(start) for start in local]
    kinematics = [forward(skeleton, r) for r in per]
    state_local, state_frames, state_heads = list(per[0]), list(kinematics[0][0]), list(kinematics[0][1])
    frames0 = list(kinematics[0][0])
    for i in moved:
        state_local[i] = tuple(np.array([r[i][c] for r in per]) for c in range(4))
        state_frames[i] = tuple(np.array([k[0][i][c] for k in kinematics]) for c in range(4))
        state_heads[i] = tuple(np.array([k[1][i][c] for k in kinematics]) for c in range(3))
        frames0[i] = state_frames[i]
    return _iterate_lanes(
        skeleton, local, effectors, plan, targets, m, step, tolerance, max_iterations, free_twist, one_step,
        (state_local, state_frames, state_heads, frames0),
    )  # fmt: skip


def _iterate_lanes(
    skeleton, local, effectors, plan, targets, m, step, tolerance, max_iterations, free_twist, one_step, state
):
    """run_many's loop from its lanes' state (locals, frames, heads; the start frames, per bone a
    float tuple or lanes)."""
    moved = plan.moved
    state_local, state_frames, state_heads, frames0 = state
    reach = cached_rows(skeleton, "reach")
    bones = [e.bone for e in effectors]
    weights = plan.weights

    def ends_of(frames, heads):
        out = []
        for b in bones:
            x, y, z = rotate(frames[b], const(reach[b], frames[b][0].size))
            hx, hy, hz = heads[b]
            out.append((hx + x, hy + y, hz + z))
        return out

    ends = ends_of(state_frames, state_heads)
    errors = [dist(a, t) * np.ones(m) for a, t in zip(ends, targets, strict=True)]
    cost = level_costs(plan, errors)  # per level, one entry per frame (common.tree_run's)
    stall = max(STALL * plan.length, 0.01 * tolerance)
    out_frames = np.empty((len(moved), 4, m))
    for j, i in enumerate(moved):
        out_frames[j] = np.array(frames0[i]).reshape(4, -1)
    iterations = np.zeros(m, dtype=np.int64)
    idx = np.flatnonzero(np.max(errors, axis=0) > tolerance)
    if idx.size < m:
        state_local, state_frames, state_heads, ends, targets, cost = take(
            (state_local, state_frames, state_heads, ends, targets, cost), idx
        )
    count = 0
    while idx.size and count < max_iterations:
        if one_step is not None and idx.size <= TAIL:
            for j, f in enumerate(idx):
                state = take((state_local, state_frames, state_heads, ends, targets, cost), j)
                solved, iterations[f] = _finish_one(
                    skeleton, plan, bones, weights, state, count, one_step, tolerance, max_iterations, stall
                )
                for q, i in enumerate(moved):
                    out_frames[q][:, f] = solved[i]
            break
        step(state_local, state_frames, state_heads, targets)
        count += 1
        iterations[idx] = count
        new_ends = ends_of(state_frames, state_heads)
        shift = np.max([dist(a, b) for a, b in zip(ends, new_ends, strict=True)], axis=0)
        ends = new_ends
        errors = [dist(a, t) for a, t in zip(ends, targets, strict=True)]
        cost, last = level_costs(plan, errors), cost
        steady = np.ones(idx.size, dtype=bool)
        for group, now, before in zip(plan.levels, cost, last, strict=True):
            met = np.max([errors[k] for k in group], axis=0) <= tolerance
            steady &= (np.abs(before - now) <= SETTLE * now) | met
        stop = (shift <= stall) | steady | (np.max(errors, axis=0) <= tolerance)
        if count >= max_iterations:
            stop[:] = True
        if stop.any():
            for j, i in enumerate(moved):
                out_frames[j][:, idx[stop]] = np.array([np.broadcast_to(c, stop.shape) for c in state_frames[i]])[
                    :, stop
                ]
            keep = np.flatnonzero(~stop)
            idx = idx[keep]
            state_local, state_frames, state_heads, ends, targets, cost = take(
                (state_local, state_frames, state_heads, ends, targets, cost), keep
            )
    solved_frames = [None] * skeleton.n_bones
    for j, i in enumerate(moved):
        solved_frames[i] = tuple(out_frames[j])
    return to_locals_many(skeleton, local, solved_frames, moved, free_twist, m), iterations


def _finish_one(skeleton, plan, bones, weights, state, count, one_step, tolerance, max_iterations, stall):
    """common.tree_run's loop for one frame from iteration `count` on (state: that frame's, as floats)."""
    state_local, state_frames, state_heads, ends, targets, cost = (_floats(s) for s in state)
    plan.targets[:] = targets
    errors = [math.dist(a, b) for a, b in zip(ends, targets, strict=True)]
    while count < max_iterations and max(errors) > tolerance:
        one_step(state_local, state_frames, state_heads)
        count += 1
        new_ends = [end_point(skeleton, state_frames, state_heads, b) for b in bones]
        moved = max(math.dist(a, b) for a, b in zip(ends, new_ends, strict=True))
        ends = new_ends
        errors = [math.dist(a, b) for a, b in zip(ends, targets, strict=True)]
        cost, last = level_costs(plan, errors), cost
        if moved <= stall or settled(plan, errors, cost, last, tolerance):
            break
    return state_frames, count


def _floats(value):
    """take()'s one frame as Python floats (lists of tuples, as the float kernels hold them)."""
    if isinstance(value, (np.ndarray, np.generic)):
        return float(value)
    if isinstance(value, tuple):
        return tuple(_floats(v) for v in value)
    if isinstance(value, list):
        return [_floats(v) for v in value]
    return value


def to_locals_many(skeleton, local: np.ndarray, frames: list, bones: list[int], swing_only: set[int], m: int):
    """solvers.skeleton_floats.to_locals per frame: (m, n, 4); `local` one input pose (n, 4) or one per
    frame (m, n, 4)."""
    n = skeleton.n_bones
    local = np.asarray(local, dtype=float)
    if local.ndim == 3:
        out = np.array(local)
        inputs = [tuple(np.ascontiguousarray(local[:, i, c]) for c in range(4)) for i in range(n)]
    else:
        out = np.repeat(local[None], m, axis=0)
        inputs = rows(local)
    parents, reference, links = skeleton.parents, cached_rows(skeleton, "reference"), cached_rows(skeleton, "links")
    base = tuple(skeleton.base_frame.tolist())
    solved = [None] * n
    wanted = set(bones)
    for i in range(n):
        p = parents[i]
        rest = multiply(base if p == -1 else solved[p], reference[i])
        if i not in wanted:
            solved[i] = multiply(rest, inputs[i])
            continue
        frame = frames[i]
        if i in swing_only:
            inherited = multiply(rest, inputs[i])
            have, want = rotate(inherited, links[i]), rotate(frame, links[i])
            frame = normalize4(multiply(swing(have, want, side(inherited, have)), inherited))
        solved[i] = frame
        q = normalize4(multiply(conjugate(rest), frame))
        out[:, i] = np.stack([np.broadcast_to(c, (m,)) for c in q], axis=-1)
    return out


def forward_many(skeleton, local: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Skeleton.forward per frame: (frames (m, n, 4), heads (m, n, 3), end points (m, n, 3)) of
    `local` (m, n, 4)."""
    m, n = local.shape[:2]
    frames = np.empty((m, n, 4))
    heads = np.empty((m, n, 3))
    for i, p in enumerate(skeleton.parents):
        parent = np.broadcast_to(skeleton.base_frame, (m, 4)) if p == -1 else frames[:, p]
        frames[:, i] = quat.multiply(quat.multiply(parent, skeleton.reference[i]), local[:, i])
        heads[:, i] = skeleton.offsets[i] if p == -1 else heads[:, p] + quat.rotate(frames[:, p], skeleton.offsets[i])
    return frames, heads, heads + skeleton.lengths[:, None] * quat.rotate(frames, skeleton.links)


def errors_many(skeleton, local: np.ndarray, effectors, positions: np.ndarray) -> np.ndarray:
    """(m, k): each effector's bone end (forward kinematics of `local` (m, n, 4)) from its position."""
    _, _, ends = forward_many(skeleton, local)
    return np.linalg.norm(ends[:, [e.bone for e in effectors]] - positions, axis=-1)


__all__ = ["run_many", "to_locals_many", "errors_many", "forward_many", "targets_of", "where"]
