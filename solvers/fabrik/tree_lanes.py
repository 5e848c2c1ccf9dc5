"""FABRIK on a tree across frames: the registry's `tree_many` kernel for FABRIK.

solvers.fabrik.tree's iteration (the same passes, sub-bases, holds, sphere and line chain
passes, the same early stops per frame), written on lanes (solvers.maths.lanes): every frame of
a bake at once, each from the same input pose or from its own start (`local` (m, n, 4): the
least-squares steps solvers.skeleton_many takes frame by frame, as solve_skeleton takes them for
the one-frame kernel), each ending as
the one-frame kernel ends it (same iterations, same rotations). Where a frame takes another branch
than its neighbours (a segment beyond reach, a chain pass already within tolerance), np.where
keeps each frame's own.

It declines (a reason string) sphere placement (a chain option, refused on trees by the one-frame
kernel as well). Poles are
applied after the iterations, as the one-frame kernel applies them (solvers.common.tree_poles), frame
by frame on each frame's solved pose.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from .. import limits as joint_limits
from ..common import tree_run_lanes as run_many_module
from ..common.tree_plan import free_twist, make_plan
from ..common.tree_poles import apply_poles
from ..common.tree_run_lanes import errors_many, run_many, targets_of
from ..maths.lanes import (
    IDENTITY,
    X_AXIS,
    best_rotation,
    conjugate,
    const,
    dist,
    is_zero,
    multiply,
    normalize4,
    rotate,
    scaled,
    side,
    slerp,
    sphere_point,
    swing,
    take,
    unit,
    where,
)
from ..skeleton_floats import rows
from .tree import HOLD, INNER, SHELL_MARGIN
from .tree import make_step as make_float_step
from .tree_segments import chain_segments, settled_segments

# A segment's chain passes gather their state to the frames still passing once those are at
# most this share of the lanes (a gather costs about a pass's worth of numpy calls).
COMPACT = 0.5


def reason(skeleton, effectors, options: dict) -> str | None:
    """Why the batch kernel cannot solve these frames together, or None."""
    if options.get("placement", "line") != "line":
        return "the tree passes place joints on lines (placement 'line'); sphere placement is for chains"
    return None


def solve_many(skeleton, local, effectors, positions, poles, tolerance: float, max_iterations: int, options: dict):
    """(local (m, n, 4), error (m, k), iterations (m,)), or the reason it declines. `local`: the
    input pose (n, 4) or a start per frame (m, n, 4); `effectors`
    have their pins resolved; `positions` (m, k, 3) (pins' rows ignored); `poles` (m, k, 3) or
    None (NaN rows: no pole)."""
    why = reason(skeleton, effectors, options)
    if why is not None:
        return why
    m = len(positions)
    if m <= run_many_module.TAIL:
        # the lanes would hand every frame to the float kernel at once, after their setup
        return f"{m} frames, too few to share lanes (at most {run_many_module.TAIL}): each solved alone"
    plan = make_plan(skeleton, effectors)
    free = plan.steps.get("free")
    if free is None:
        free = plan.steps["free"] = free_twist(skeleton, plan)
    step = plan.steps.get(("fabrik_many", tolerance))
    if step is None:
        step = plan.steps[("fabrik_many", tolerance)] = make_step(skeleton, plan, tolerance)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        targets = targets_of(plan, effectors, positions)
        solved, iterations = run_many(
            skeleton,
            local,
            effectors,
            plan,
            targets,
            m,
            step,
            tolerance,
            max_iterations,
            free,
            one_step(skeleton, plan, tolerance),
        )
    with_pole = np.isfinite(poles[:, :, 0]) if poles is not None else np.zeros((m, len(effectors)), dtype=bool)
    for f in np.flatnonzero(with_pole.any(axis=1)):
        frame = [
            replace(e, position=e.position if e.pin else positions[f, k], pole=poles[f, k])
            if with_pole[f, k]
            else replace(e, pole=None)
            for k, e in enumerate(effectors)
        ]
        solved[f] = apply_poles(skeleton, solved[f], frame, make_plan(skeleton, frame))
    fixed = np.array([e.position for e in effectors])
    goal = np.where(np.array([e.pin for e in effectors])[None, :, None], fixed[None], positions)
    return solved, errors_many(skeleton, solved, effectors, goal), iterations


def one_step(skeleton, plan, tolerance: float):
    """The one-frame kernel's step (solvers.fabrik.tree), for the last frames still iterating."""
    step = plan.steps.get(("fabrik", tolerance))
    if step is None:
        step = plan.steps[("fabrik", tolerance)] = make_float_step(skeleton, plan, tolerance)
    return step


def make_step(skeleton, plan, tolerance: float):
    """step(local, frames, heads, targets): one iteration on lanes, in place."""
    parents = skeleton.parents
    reference, offsets = rows(skeleton.reference), rows(skeleton.offsets)
    base = tuple(skeleton.base_frame.tolist())
    limits = skeleton.limits
    clamped = set() if limits is None else {i for i in plan.moved if limits.active[i]}
    keep = {i: 1.0 for i in plan.moved}
    if limits is not None:
        for i in plan.moved:
            keep[i] = 1.0 - float(np.mean(limits.stiffness[i]))
    order = plan.moved
    reverse = [i for i in reversed(order) if parents[i] != -1]
    points, orientation = plan.points, plan.orientation
    segments = chain_segments(parents, plan) if any(len(points[i]) > 1 for i in order) else []
    tops = {seg[0]: seg for seg in segments}
    settled = settled_segments(segments, keep, clamped, orientation)
    schedule = [i for i in order if not any(i in seg[1:] for seg in segments)]
    spans = {seg[0]: [math.dist((0.0, 0.0, 0.0), points[i][0][0]) for i in seg] for seg in segments}
    reach_of = {seg[0]: sum(spans[seg[0]]) for seg in segments}
    shells = {}
    for seg in segments:
        if seg[-1] in orientation or any(i in clamped for i in seg):
            continue
        outer = sum(spans[seg[0]])
        inner = max(0.0, 2.0 * max(spans[seg[0]]) - outer)
        margin = min(SHELL_MARGIN * outer, 0.5 * (outer - inner))
        shells[seg[0]] = (inner + margin, outer - margin)
    pivots = {i: math.dist((0.0, 0.0, 0.0), offsets[i]) for i in reverse if i not in clamped | orientation.keys()}
    pivots = pivots if segments else {}
    pivots = {i: r for i, r in pivots.items() if r > 0.0}
    sizes = {i: [math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) for v, _, _, _ in points[i]] for i in order}
    ctx: dict = {}  # this step's targets and holding masks (sub-base top: frames held)
    # What a segment's passes read: its bones and its top's parent; its bones' and its goal's new heads.
    needs = {seg[0]: list(seg) + [p for p in (parents[seg[0]],) if p != -1] for seg in segments}
    keys = {seg[0]: list(seg) + [c for c in (points[seg[-1]][0][2],) if c != -1] for seg in segments}

    def goal(i: int, new_heads: dict) -> tuple:
        _, effector, child, _ = points[i][0]
        return ctx["targets"][effector] if child == -1 else new_heads[child]

    def far_end(i: int, frames: list, heads: list) -> tuple:
        x, y, z = rotate(frames[i], const(points[i][0][0], frames[i][0].size))
        hx, hy, hz = heads[i]
        return (hx + x, hy + y, hz + z)

    def estimate(i: int, new_heads: dict, frames: list, heads: list) -> None:
        hx, hy, hz = heads[i]
        holding, targets = ctx["holding"], ctx["targets"]
        sx = sy = sz = total = 0.0
        for j, (vec, effector, child, w) in enumerate(points[i]):
            tx, ty, tz = targets[effector] if child == -1 else new_heads[child]
            if child in holding:
                w = np.where(holding[child], w * HOLD, w)
            if child == -1 and i in orientation:
                wanted, weight = orientation[i]
                if weight >= 1.0:  # slerp by 1 (a pin's): the wanted frame itself
                    ox, oy, oz = rotate(wanted, vec)
                else:  # the bone turned about its end toward its old head, then toward the wanted frame
                    frame = frames[i]
                    have = rotate(frame, vec)
                    back = unit((-have[0], -have[1], -have[2]))
                    turn = swing(back, unit((hx - tx, hy - ty, hz - tz)), lambda f=frame, b=back: side(f, b))
                    ox, oy, oz = rotate(slerp(multiply(turn, frame), wanted, weight), vec)
                ex, ey, ez = tx - ox, ty - oy, tz - oz
            else:
                dx, dy, dz = hx - tx, hy - ty, hz - tz
                r = np.sqrt(dx * dx + dy * dy + dz * dz)
                d = sizes[i][j]
                if i in pivots:
                    p = parents[i]
                    tie = lambda: rotate(frames[i], X_AXIS)  # noqa: E731 (only where a frame needs it)
                    ex, ey, ez = sphere_point((tx, ty, tz), heads[p], d, pivots[i], heads[i], tie)
                else:
                    ex, ey, ez = tx + d * dx / r, ty + d * dy / r, tz + d * dz / r
                    on = ~(r > 1e-300)
                    if np.any(on):  # target on the head: keep the bone's direction
                        vx, vy, vz = rotate(frames[i], vec)
                        ex, ey, ez = where(on, (tx - vx, ty - vy, tz - vz), (ex, ey, ez))
            sx = sx + w * ex
            sy = sy + w * ey
            sz = sz + w * ez
            total = total + w
        new_heads[i] = (sx / total, sy / total, sz / total)

    def hold(seg: list, new_heads: dict, frames: list, heads: list) -> None:
        top = seg[0]
        here = heads[top]
        if top not in shells:
            keep = dist(far_end(seg[-1], frames, heads), goal(seg[-1], new_heads)) <= tolerance
            new_heads[top] = where(keep, here, new_heads[top])
            ctx["holding"][top] = keep
            return
        inner, outer = shells[top]
        tx, ty, tz = goal(seg[-1], new_heads)
        dx, dy, dz = here[0] - tx, here[1] - ty, here[2] - tz
        r = np.sqrt(dx * dx + dy * dy + dz * dz)
        keep = ((inner <= r) & (r <= outer)) | (r <= 0.0)
        radius = np.where(r > outer, outer, inner)
        new_heads[top] = where(keep, here, (tx + radius * dx / r, ty + radius * dy / r, tz + radius * dz / r))
        ctx["holding"][top] = keep

    def place(i: int, new_heads: dict, local: list, frames: list, heads: list, mask=None) -> None:
        p = parents[i]
        size = local[i][0].size
        if p == -1:
            parent, head = base, offsets[i]
            rest = multiply(parent, reference[i])
            inherited = multiply(const(rest, size), local[i])
        else:
            parent = frames[p]
            ox, oy, oz = rotate(parent, const(offsets[i], size))
            hx, hy, hz = heads[p]
            head = (hx + ox, hy + oy, hz + oz)
            rest = multiply(parent, const(reference[i], size))
            inherited = multiply(rest, local[i])
        hx, hy, hz = head
        targets = ctx["targets"]
        if len(points[i]) == 1:
            tx, ty, tz = goal(i, new_heads)
            ua, ub = unit(rotate(inherited, const(points[i][0][0], size))), unit((tx - hx, ty - hy, tz - hz))
            near_half = ua[0] * ub[0] + ua[1] * ub[1] + ua[2] * ub[2] < -0.5
            turn = swing(ua, ub, lambda: where(near_half, side(inherited, ua), X_AXIS))
            zero = is_zero(ub)
            if np.any(zero):
                turn = where(zero, IDENTITY, turn)
        else:
            have, want, weights = [], [], []
            holding = ctx["holding"]
            for vec, effector, child, w in points[i]:
                tx, ty, tz = targets[effector] if child == -1 else new_heads[child]
                have.append(rotate(inherited, const(vec, size)))
                want.append((tx - hx, ty - hy, tz - hz))
                weights.append(np.where(holding[child], w * HOLD, w) if child in holding else w)
            turn = best_rotation(have, want, weights)  # held branches at HOLD, as the float kernel's
        if keep[i] != 1.0:
            turn = scaled(turn, keep[i])
        frame = multiply(turn, inherited)
        if i in orientation:
            frame = slerp(frame, *orientation[i])
        new_local = normalize4(multiply(conjugate(rest) if p != -1 else const(conjugate(rest), size), frame))
        if i in clamped:
            q = joint_limits.clamp(limits, i, np.stack(np.broadcast_arrays(*new_local), axis=-1))
            new_local = (q[:, 0], q[:, 1], q[:, 2], q[:, 3])
            frame = multiply(rest if p != -1 else const(rest, size), new_local)
        local[i] = where(mask, new_local, local[i])
        frames[i] = where(mask, frame, frames[i])
        heads[i] = where(mask, head, heads[i])

    def spheres(seg: list, new_heads: dict, frames: list, heads: list) -> None:
        lengths = spans[seg[0]]
        n = len(seg)
        p = [heads[i] for i in seg]
        p.append(goal(seg[-1], new_heads))
        ties = [(lambda i=i: rotate(frames[i], X_AXIS)) for i in seg]
        for j in range(n - 1, 0, -1):
            p[j] = sphere_point(p[j + 1], p[j - 1], lengths[j], lengths[j - 1], p[j], ties[j])
        for j in range(n - 1):
            p[j + 1] = sphere_point(p[j], p[j + 2], lengths[j], lengths[j + 1], p[j + 1], ties[j])
        for j in range(1, n):
            new_heads[seg[j]] = p[j]

    def chain(seg: list, new_heads: dict, local: list, frames: list, heads: list) -> None:
        # new_heads of the segment's inner bones are written for every frame: only the frames
        # a pass places (its mask) read them.
        for i in seg:
            place(i, new_heads, local, frames, heads)
        if seg[0] in settled:
            return
        top = heads[seg[0]]
        gx, gy, gz = goal(seg[-1], new_heads)
        dx, dy, dz = gx - top[0], gy - top[1], gz - top[2]
        r = np.sqrt(dx * dx + dy * dy + dz * dz)
        beyond = (r >= reach_of[seg[0]] - tolerance) & (r > 0.0)
        if beyond.any():
            along = 0.0
            for j in range(1, len(seg)):
                along = along + spans[seg[0]][j - 1] / r
                new_heads[seg[j]] = (top[0] + along * dx, top[1] + along * dy, top[2] + along * dz)
            for i in seg:
                place(i, new_heads, local, frames, heads, beyond)
        passes(seg, new_heads, local, frames, heads, ~beyond, far_end(seg[-1], frames, heads))

    def passes(seg: list, new_heads: dict, local: list, frames: list, heads: list, active, end) -> None:
        """Up to INNER chain passes on the frames `active` until each stops as the float kernel
        stops it; once the frames still passing are few (COMPACT), the segment's state is
        gathered to them (and put back after), so a pass computes those alone."""
        inner = seg[1:][::-1]
        full = (local, frames, heads, new_heads, ctx["targets"], ctx["holding"])
        size, sel = active.size, None
        for _ in range(INNER):
            active &= dist(end, goal(seg[-1], new_heads)) > tolerance
            count = int(np.count_nonzero(active))
            if count == 0:
                break
            if count <= COMPACT * active.size:
                keep = np.flatnonzero(active)
                if sel is not None:
                    _put_back(seg, full, (local, frames, heads), sel, size)
                sel = keep if sel is None else sel[keep]
                local, frames, heads = (_gathered(lst, needs[seg[0]], sel) for lst in full[:3])
                new_heads = {key: take(full[3][key], sel) for key in keys[seg[0]] if key in full[3]}
                ctx["targets"], ctx["holding"] = take(full[4], sel), take(full[5], sel)
                end, active = take(end, keep), np.ones(count, dtype=bool)
            if seg[0] in shells:
                spheres(seg, new_heads, frames, heads)
            else:
                for i in inner:
                    estimate(i, new_heads, frames, heads)
            for i in seg:
                place(i, new_heads, local, frames, heads, active)
            last, end = end, where(active, far_end(seg[-1], frames, heads), end)
            active &= ~(dist(last, end) <= 0.01 * tolerance)
        if sel is not None:
            _put_back(seg, full, (local, frames, heads), sel, size)
            ctx["targets"], ctx["holding"] = full[4], full[5]

    def step(local: list, frames: list, heads: list, targets: list) -> None:
        ctx["targets"], ctx["holding"] = targets, {}
        new_heads: dict = {}
        for i in reverse:
            estimate(i, new_heads, frames, heads)
            if i in tops:
                hold(tops[i], new_heads, frames, heads)
        for i in schedule:
            if i in tops:
                chain(tops[i], new_heads, local, frames, heads)
            else:
                place(i, new_heads, local, frames, heads)

    return step


def _gathered(entries: list, bones: list[int], sel: np.ndarray) -> list:
    """A copy of the per-bone list with `bones`' entries at frames `sel` (the others as they are)."""
    out = list(entries)
    for i in bones:
        out[i] = take(entries[i], sel)
    return out


def _put_back(seg: list, full: tuple, sub: tuple, sel: np.ndarray, size: int) -> None:
    """The segment's bones' entries of `sub` (frames `sel`) written into the `full` lists."""
    for whole, part in zip(full[:3], sub, strict=True):
        for i in seg:
            merged = []
            for c, s in zip(whole[i], part[i], strict=True):
                a = np.array(np.broadcast_to(c, (size,)), dtype=float)
                a[sel] = s
                merged.append(a)
            whole[i] = tuple(merged)
