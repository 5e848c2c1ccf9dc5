"""Pins hold: after any method's tree solve, a pin still off is brought back, or named.

A pin is a planted foot: the highest priority level (solvers.skeleton.level), above every
target. Each method ranks it so its own way (the Jacobian solves the pins' level first and the
targets in its nullspace; FABRIK, CCD and triangulation weigh it LEVEL times a target), which
holds it nearly always but not by construction: limits can keep a branch from following its
trunk back, and a weighed compromise leaks a millionth of the others' pull. So `hold` checks
every pin, as the Jacobian's goals are checked (its end point within the tolerance, its bone's
frame within the tolerance as an arc of its branch), and brings back any that is not with the
tree Jacobian's Newton steps on the pins alone: first moving only the bones no other effector
hangs from (every other effector stays exactly where the method put it), then, where that
cannot, the pins' whole branches (the least joint motion, so the others move as little as the
pins allow); where limits keep the branches from following back even so, the group is solved
again by the Jacobian from the input pose, pins first (the input pose holds every pin read from
it). A pin that still cannot hold (its point out of reach: limits, or a point given from another
pose) is listed in the solution's `unheld` and said in its reason.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from .. import quat
from ..maths.floats import conjugate, multiply
from ..model.method import Method
from ..skeleton import finish, level
from ..skeleton_floats import end_point, forward, moved_bones, rows
from .tree_run_lanes import forward_many

UNHELD = "a pin cannot hold"  # how a reason says it (last, after the method's own reason)
# The projection aims this far inside the tolerance (Newton steps converge fast near it), in at
# most STEPS iterations per stage.
INSIDE = 1e-2
STEPS = 20


def orientation_arc(skeleton, frames: list[tuple], effector) -> float:
    """How far `effector`'s bone frame (of `frames`, skeleton_floats.forward's) is turned from its
    wanted orientation, as an arc of the bone's branch (the turn times the branch's length: a
    distance, compared with the tolerance as an end point's is)."""
    w, x, y, z = multiply(frames[effector.bone], conjugate(tuple(effector.orientation.tolist())))
    turn = 2.0 * math.atan2(math.sqrt(x * x + y * y + z * z), abs(w))
    return turn * float(np.sum(skeleton.lengths[skeleton.branch(effector.bone)]))


def held(skeleton, local: np.ndarray, effectors, tolerance: float) -> list[tuple[int, float]]:
    """(effector index, its end point's distance from its point) for each pin not held: the end
    beyond `tolerance`, or its bone's frame turned from the wanted one by more than `tolerance`
    as an arc of its branch. Empty when every pin holds."""
    pins = [k for k, e in enumerate(effectors) if e.pin]
    if not pins:
        return []
    # Plain floats (solvers.skeleton_floats): this runs after every solve with a pin.
    frames, heads = forward(skeleton, rows(local))
    out = []
    for k in pins:
        e = effectors[k]
        distance = math.dist(end_point(skeleton, frames, heads, e.bone), e.position.tolist())
        off = distance > tolerance
        if not off and e.orientation is not None:
            off = orientation_arc(skeleton, frames, e) > tolerance
        if off:
            out.append((k, distance))
    return out


def off_frames(skeleton, local: np.ndarray, effectors, tolerance: float) -> np.ndarray:
    """`held` for many frames at once (`local` (m, n, 4); the pins' points fixed): which frames
    have a pin not held, (m,) bools."""
    pins = [e for e in effectors if e.pin]
    out = np.zeros(len(local), dtype=bool)
    if not pins:
        return out
    frames, _, ends = forward_many(skeleton, np.asarray(local, dtype=float))
    for e in pins:
        out |= np.linalg.norm(ends[:, e.bone] - e.position, axis=-1) > tolerance
        if e.orientation is not None:
            turn = quat.angle(quat.multiply(frames[:, e.bone], quat.conjugate(e.orientation)))
            out |= turn * float(np.sum(skeleton.lengths[skeleton.branch(e.bone)])) > tolerance
    return out


def hold(skeleton, start: np.ndarray, solution, effectors, tolerance: float, steps: Method):
    """`solution` (a SkeletonSolution of `effectors`, pins resolved, solved from the local
    rotations `start`) with every pin held where Newton steps can hold it; the reason names a pin
    that still cannot. `steps`: the least-squares method (`Method.least_squares`, the registry's
    `LEAST_SQUARES`) whose tree kernel takes the Newton steps; its kernel also takes `frozen`,
    the bones it must not move."""
    off = held(skeleton, solution.local, effectors, tolerance)
    if not off:
        return solution
    pins, shared, mine = _pin_bones(skeleton, effectors)
    options = dict(steps.defaults, nullspace_gain=0.0)
    local, how = solution.local, ""
    # Stage 1 keeps every bone another effector hangs from; stage 2 frees the pins' branches
    # (one stage where no other effector shares a bone, none where every pin's bone is shared).
    stages = [shared, frozenset()] if shared else [frozenset()]
    for frozen in stages:
        if mine <= frozen:
            continue
        # (the Jacobian keeps only steps that bring the pins nearer: never worse than it started)
        local = steps.tree(skeleton, local, pins, INSIDE * tolerance, STEPS, options, frozen).local
        off = held(skeleton, local, effectors, tolerance)
        if not off:
            break
    if off and solution.method != steps.name and any(not e.pin for e in effectors):
        # Stuck (limits keep the pins' branches from following back): the whole solve again by
        # the tree Jacobian from the input pose, pins as its first priority level, the targets
        # in what they leave free (what the Jacobian did already). The input pose holds every
        # pin read from it, and the Jacobian keeps no step that loses one.
        again = steps.tree(skeleton, start, effectors, tolerance, steps.max_iterations, options)
        if not isinstance(again, str) and _better(skeleton, again.local, local, effectors, tolerance, level):
            how = f"{solution.method} could not keep its pins; solved by the {steps.name}, pins first"
            local = again.local
            off = held(skeleton, local, effectors, tolerance)
    what = ""
    if off:
        worst = max(d for _, d in off)
        which = "its end is" if len(off) == 1 else f"{len(off)} pins, the farthest"
        what = f"{UNHELD}: {which} {worst:.3g} from its point"
    reason = "; ".join(r for r in (solution.reason, how, what) if r)
    out = finish(skeleton, local, effectors, tolerance, solution.iterations, solution.method, reason)
    return replace(out, unheld=tuple(k for k, _ in off))


def placed(skeleton, local: np.ndarray, effectors, tolerance: float, steps: Method) -> np.ndarray:
    """`local` with any pin that does not hold brought back by `hold`'s first stage (Newton steps of
    `steps`, the least-squares method, moving only the bones no other effector hangs from), for a
    start pose whose pins moved away (common.root_move's shifted root: the legs under moved hips).
    A method then starts with its pins held and turns for its targets only; `local` itself when
    every pin holds or no bone is the pins' alone."""
    if not held(skeleton, local, effectors, tolerance):
        return local
    pins, shared, mine = _pin_bones(skeleton, effectors)
    if mine <= shared:
        return local
    options = dict(steps.defaults, nullspace_gain=0.0)
    return steps.tree(skeleton, local, pins, INSIDE * tolerance, STEPS, options, shared).local


def _pin_bones(skeleton, effectors) -> tuple[list, frozenset, set]:
    """(the pins, the bones another effector hangs from: `hold`'s first stage keeps them, the bones
    the pins hang from)."""
    pins = [e for e in effectors if e.pin]
    others = [e.bone for e in effectors if not e.pin]
    shared = frozenset(moved_bones(skeleton, others)) if others else frozenset()
    return pins, shared, set(moved_bones(skeleton, [e.bone for e in pins]))


def without_unheld(reason: str) -> str:
    """A solution's reason without what `hold` adds about pins that cannot hold (a caller that
    says so per pin, as app.group_solve does per chain)."""
    return "; ".join(part for part in reason.split("; ") if part and not part.startswith(UNHELD))


def _better(skeleton, a: np.ndarray, b: np.ndarray, effectors, tolerance: float, level) -> bool:
    """Pose `a` beats `b` level by level (pins first): each level's weighted squared error,
    a level met within the tolerance counting 0; the first level that differs decides."""
    _, _, ends_a = skeleton.forward(a)
    _, _, ends_b = skeleton.forward(b)
    for rank in sorted({level(e) for e in effectors}):
        costs = []
        for ends in (ends_a, ends_b):
            errors = [
                (e.weight, float(np.linalg.norm(ends[e.bone] - e.position))) for e in effectors if level(e) == rank
            ]
            costs.append(0.0 if max(d for _, d in errors) <= tolerance else sum(w * d * d for w, d in errors))
        if costs[0] != costs[1]:
            return costs[0] < costs[1]
    return False
