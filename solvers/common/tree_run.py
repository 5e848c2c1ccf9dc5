"""The iteration loop shared by the tree kernels: start, iterate a step, stop, finish."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .. import limits as joint_limits
from ..skeleton import finish
from ..skeleton_floats import cached_rows, end_distances, forward, measured_locals, rows, to_locals
from .tree_plan import Plan
from .tree_poles import apply_poles

# An iteration moving no effector end more than this fraction of the moved bones' length has
# stalled (as iterate.STALL for chains), and one moving none a hundredth of the tolerance has
# settled on the compromise of conflicting goals.
STALL = 1e-12
# Settled too: at every priority level, the weighted sum of squared errors changing by less than
# this fraction of itself in an iteration, or every goal of the level met (conflicting goals
# approach their compromise slowly; reachable ones shrink it by a steady factor, far from 1; a
# lower level goes on improving in what a met higher one leaves free).
SETTLE = 1e-4


def level_costs(plan: Plan, errors: list[float]) -> list[float]:
    """Per priority level (plan.levels), the weighted sum of squared errors."""
    weights = plan.weights
    return [sum(weights[k] * errors[k] * errors[k] for k in group) for group in plan.levels]


def settled(plan: Plan, errors: list[float], costs: list[float], last: list[float], tolerance: float) -> bool:
    """Every level's cost steady (within SETTLE of itself) or its goals all met."""
    return all(
        abs(before - cost) <= SETTLE * cost or max(errors[k] for k in group) <= tolerance
        for group, cost, before in zip(plan.levels, costs, last, strict=True)
    )


def run(
    skeleton,
    local: np.ndarray,
    effectors,
    plan: Plan,
    step: Callable,
    tolerance: float,
    max_iterations: int,
    method: str,
    free_twist: set[int],
    stop_on_stall: bool = True,
):
    """Iterate `step(local, frames, heads)` (lists of tuples, in place) from `local` clamped into
    the limits until every effector is within `tolerance`, the cap, or it settles (or, unless
    `stop_on_stall` is off, stalls); then the local rotations (`free_twist` bones as minimal swings,
    see skeleton_floats.to_locals), poles, and the result measured (skeleton.finish's measure:
    skeleton_floats.measured_locals without poles).

    `stop_on_stall` off: a step moving the ends little does not end the solve, only a settled
    cost does (CCD's mixed sweeps, common.tree_mixing: a sweep crawling near a goal moves the ends
    less than the stall while still lowering the cost by a percent, and the mixing of the next
    sweeps takes the long step; stopping there left a bake's frames 2-3 tolerances short)."""
    limits = skeleton.limits
    start = np.array(local, dtype=float)
    if limits is not None:
        start[plan.moved] = joint_limits.clamp(limits, np.array(plan.moved), start[plan.moved])
    current = rows(start)
    inputs = current[:]  # (the steps replace `current`'s rows; these stay `start`'s)
    frames, heads = forward(skeleton, current)
    bones = [e.bone for e in effectors]
    reach, targets = cached_rows(skeleton, "reach"), plan.targets
    ends, errors = end_distances(frames, heads, bones, reach, targets)
    iterations = 0
    if max_iterations > 0 and max(errors) > tolerance:  # (no cost or stall to work out otherwise)
        costs = level_costs(plan, errors)
        stall = max(STALL * plan.length, 0.01 * tolerance) if stop_on_stall else -1.0
        while iterations < max_iterations and max(errors) > tolerance:
            step(current, frames, heads)
            iterations += 1
            new_ends, errors = end_distances(frames, heads, bones, reach, targets)
            moved = max(math.dist(a, b) for a, b in zip(ends, new_ends, strict=True))
            ends = new_ends
            costs, last = level_costs(plan, errors), costs
            if moved <= stall or settled(plan, errors, costs, last, tolerance):
                break
    swing_only = set() if limits is not None else free_twist
    if plan.segments:  # poles turn the result: measured after them
        solved = apply_poles(skeleton, to_locals(skeleton, start, frames, plan.moved, swing_only), effectors, plan)
        return finish(skeleton, solved, effectors, tolerance, iterations, method)
    # measured as the locals are found (skeleton.finish's measure, the same bits)
    solved, errors = measured_locals(
        skeleton, start, frames, plan.moved, swing_only, zip(bones, targets, strict=True), inputs
    )
    return finish(skeleton, solved, effectors, tolerance, iterations, method, error=np.array(errors))
