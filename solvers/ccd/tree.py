"""Cyclic coordinate descent over a tree: several effectors solved together.

One iteration visits every moved bone from the tips toward the roots (children before their
parents) and turns it about its head by the rotation that best sends the end points of all
the effectors below it onto their positions: the weighted least-squares rotation of the
vectors head -> end onto head -> target (Wahba's problem, solvers.maths.floats.best_rotation; with
one effector it is chain CCD's minimal swing). An effector with an orientation adds its
bone's X and Z axes (at its length) as two more pairs, weighted by its rotation weight. The
pairs carry the ranked weights (solvers.common.tree_plan): a higher priority level, pins first,
dominates. As chain CCD with limits, the turn is scaled by 1 - the bone's mean stiffness and
its local rotation clamped into its limits.

Afterwards, as for FABRIK: unlimited bones whose twist no goal sees take the minimal swing
from their input rotation, and each pole spins its effector's own segment.
"""

from __future__ import annotations

import numpy as np

from .. import limits as joint_limits
from ..common.tree_plan import free_twist, make_plan
from ..common.tree_run import run
from ..maths.floats import best_rotation, conjugate, multiply, normalize4, rotate, scaled
from ..skeleton import end_point, forward, rows

AXES = ((1.0, 0.0, 0.0), (0.0, 0.0, 1.0))


def solve(skeleton, local: np.ndarray, effectors, tolerance: float, max_iterations: int, options: dict):
    """The registry's `tree` kernel for CCD (solvers.registry)."""
    plan = make_plan(skeleton, effectors)
    step = plan.steps.get("ccd")
    if step is None:
        step = plan.steps["ccd"] = make_step(skeleton, plan, effectors)
    free = plan.steps.get("free")
    if free is None:
        free = plan.steps["free"] = free_twist(skeleton, plan)
    return run(skeleton, local, effectors, plan, step, tolerance, max_iterations, "ccd", free)


def make_step(skeleton, plan, effectors):
    """step(local, frames, heads): one sweep, tips to roots, in place (lists of tuples)."""
    parents = skeleton.parents
    reference = rows(skeleton.reference)
    base = tuple(skeleton.base_frame.tolist())
    limits = skeleton.limits
    moved = plan.moved
    below = {i: [] for i in moved}  # effectors whose branch holds the bone
    for k, e in enumerate(effectors):
        for b in skeleton.branch(e.bone):
            below[b].append(k)
    subtree = {i: [i] for i in moved}  # the moved bones hanging from each, itself first
    for i in reversed(moved):
        p = parents[i]
        if p != -1:
            subtree[p] = [p] + sorted(set(subtree[p][1:]) | set(subtree[i]))
    clamped = set() if limits is None else {i for i in moved if limits.active[i]}
    keep = {i: 1.0 if limits is None else 1.0 - float(np.mean(limits.stiffness[i])) for i in moved}
    bones = [e.bone for e in effectors]
    # (plan.targets and plan.orientation are read at each step: a cached plan refreshes them)
    targets, weights, orientation = plan.targets, plan.weights, plan.orientation
    lengths = skeleton.lengths.tolist()

    def step(local: list, frames: list, heads: list) -> None:
        for j in reversed(moved):
            hx, hy, hz = heads[j]
            have, want, pair_weights = [], [], []
            for k in below[j]:
                b = bones[k]
                ex, ey, ez = end_point(skeleton, frames, heads, b)
                tx, ty, tz = targets[k]
                have.append((ex - hx, ey - hy, ez - hz))
                want.append((tx - hx, ty - hy, tz - hz))
                pair_weights.append(weights[k])
                if b in orientation:
                    goal, rotation_weight = orientation[b]
                    w, length = weights[k] * rotation_weight, lengths[b]
                    for axis in AXES:
                        ax, ay, az = rotate(frames[b], axis)
                        gx, gy, gz = rotate(goal, axis)
                        have.append((ex - hx + length * ax, ey - hy + length * ay, ez - hz + length * az))
                        want.append((tx - hx + length * gx, ty - hy + length * gy, tz - hz + length * gz))
                        pair_weights.append(w)
            turn = best_rotation(have, want, pair_weights)
            if keep[j] != 1.0:
                turn = scaled(turn, keep[j])
            p = parents[j]
            rest = multiply(base if p == -1 else frames[p], reference[j])
            new_local = normalize4(multiply(conjugate(rest), multiply(turn, frames[j])))
            if j in clamped:
                new_local = tuple(joint_limits.clamp(limits, j, np.array(new_local)).tolist())
            local[j] = new_local
            forward(skeleton, local, subtree[j], frames, heads)

    return step
