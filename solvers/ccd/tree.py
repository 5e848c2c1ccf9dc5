"""Cyclic coordinate descent over a tree: several effectors solved together.

One iteration (a sweep) visits every moved bone from the tips toward the roots (children before
their parents) and turns it about its head by the rotation that best sends the end points of
all the effectors below it onto their positions: the weighted least-squares rotation of the
vectors head -> end onto head -> target (Wahba's problem, solvers.maths.floats.best_rotation; with
one effector it is chain CCD's minimal swing). An effector with an orientation adds its
bone's X and Z axes (at its length) as two more pairs, weighted by its rotation weight. The
pairs carry the ranked weights (solvers.common.tree_plan): a higher priority level, pins first,
dominates. As chain CCD with limits, the turn is scaled by 1 - the bone's mean stiffness and
its local rotation clamped into its limits.

Where several effectors share bones, plain sweeps converge linearly and slowly (five effectors
from the hips of Rigify's metarig: 10% of jointly reachable poses within 1e-4 after 100 sweeps,
65% after 800; the branches crawl too, near full extension). So the sweeps are mixed
(solvers.common.tree_mixing: Anderson acceleration of the sweep as a fixed-point map, a mixed
pose kept only when it beats the plain sweep's), and a tree may take up to 200 sweeps (the
registry's tree_max_iterations). One effector keeps chain CCD's plain sweeps. Of the other
Jacobian-free remedies, more sweeps alone cost linearly for a linear gain (400 sweeps for 98% on
five effectors), and inner passes per branch, or a shared bone aiming each branch's head into
the shell it reaches from (FABRIK's sub-base hold), did not help: the branches themselves crawl.

With several effectors each bone's turn is also scaled by 1 / (1 + SPREAD x its depth below the
tree's root): a sweep starts at the tips, and a tip turning the whole way leaves its parents
nothing to do, so plain sweeps solve with the distal joints (rotation cost, the summed turn from
the input pose, 1.5-2.0x Blender's tree IK in bench/bench_tree.py). Held back by depth, the
turn spreads over the chain as Blender's does (1.04-1.16x) in about as many sweeps, every
jointly reachable pose still reached. Near the goals (NEAR) the sweeps turn whole again.

Afterwards, as for FABRIK: unlimited bones whose twist no goal sees take the minimal swing
from their input rotation, and each pole spins its effector's own segment.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from .. import limits as joint_limits
from ..common.tree_mixing import goal_pairs, mixed
from ..common.tree_plan import free_twist, make_plan
from ..common.tree_run import run
from ..maths.floats import best_rotation, conjugate, multiply, normalize4, rotate, scaled
from ..skeleton import end_point, rows

# Several effectors: a bone at depth d below the tree's root takes 1 / (1 + SPREAD d) of its best
# turn per sweep (module doc). On the metarig's trees 0.6 gave 1.07-1.21x Blender's rotation
# cost, 0.8 1.04-1.16x, 1.2 1.00-1.11x with 20% more sweeps on five effectors.
SPREAD = 0.8
# ... while some effector is further than NEAR x the moved bones' length from its goal: the last
# small corrections (a bake's frames, started near their answer) take whole turns, as before,
# so the spread costs no sweeps there.
NEAR = 1e-3


def solve(skeleton, local: np.ndarray, effectors, tolerance: float, max_iterations: int, options: dict):
    """The registry's `tree` kernel for CCD (solvers.registry)."""
    plan = make_plan(skeleton, effectors)
    step = plan.steps.get("ccd")
    if step is None:
        step = plan.steps["ccd"] = make_step(skeleton, plan, effectors)
    free = plan.steps.get("free")
    if free is None:
        free = plan.steps["free"] = free_twist(skeleton, plan)
    step = partial(step, memory={})  # this solve's sweeps, for the mixing (common.tree_mixing)
    mixed_sweeps = len(effectors) > 1  # (they end when settled, not when a sweep crawls: tree_run)
    return run(skeleton, local, effectors, plan, step, tolerance, max_iterations, "ccd", free, not mixed_sweeps)


def make_step(skeleton, plan, effectors):
    """step(local, frames, heads, memory): one sweep, tips to roots, then (several effectors) the
    mixing of the last sweeps (`memory`: a new dict per solve), in place on lists of tuples."""
    parents = skeleton.parents
    reference, offsets = rows(skeleton.reference), rows(skeleton.offsets)
    base = tuple(skeleton.base_frame.tolist())
    limits = skeleton.limits
    moved = plan.moved
    below = {i: [] for i in moved}  # effectors whose branch holds the bone
    for k, e in enumerate(effectors):
        for b in skeleton.branch(e.bone):
            below[b].append(k)
    subtree = {i: [] for i in moved}  # the moved bones hanging from each (below it)
    for i in reversed(moved):
        p = parents[i]
        if p != -1:
            subtree[p] = sorted(set(subtree[p]) | set(subtree[i]) | {i})
    clamped = set() if limits is None else {i for i in moved if limits.active[i]}
    keep = {i: 1.0 if limits is None else 1.0 - float(np.mean(limits.stiffness[i])) for i in moved}
    bones = [e.bone for e in effectors]
    share = dict(keep)  # the share of its best turn a bone takes: 1 - stiffness, held back by depth
    spread = len(effectors) > 1
    if spread:
        depth: dict[int, int] = {}
        for i in moved:  # ascending: parents first
            depth[i] = 0 if parents[i] == -1 else depth[parents[i]] + 1
            share[i] = keep[i] / (1.0 + SPREAD * depth[i])
    # (plan.targets and plan.orientation are read at each step: a cached plan refreshes them)

    near = NEAR * plan.length

    def sweep(local: list, frames: list, heads: list) -> None:
        turns = share
        if spread:
            ends = (end_point(skeleton, frames, heads, b) for b in bones)
            if all(math.dist(e, t) <= near for e, t in zip(ends, plan.targets, strict=True)):
                turns = keep
        for j in reversed(moved):
            found = ([], [], [])
            for k in below[j]:
                goal_pairs(skeleton, plan, bones, k, heads[j], frames, heads, found)
            turn = best_rotation(*found)
            if turns[j] != 1.0:
                turn = scaled(turn, turns[j])
            p = parents[j]
            rest = multiply(base if p == -1 else frames[p], reference[j])
            new_local = normalize4(multiply(conjugate(rest), multiply(turn, frames[j])))
            if j in clamped:
                new_local = tuple(joint_limits.clamp(limits, j, np.array(new_local)).tolist())
            local[j] = new_local
            frame = multiply(rest, new_local)
            # The bones below turn with it: their frames by one product each (not their chains of
            # products again), their heads as forward kinematics places them. The frames are
            # products of rotations read in float32, off unit by ~1e-7: dividing by the old
            # frame's squared norm keeps forward kinematics' numbers, norms included.
            w, x, y, z = frames[j]
            inverse = 1.0 / (w * w + x * x + y * y + z * z)
            w, x, y, z = multiply(frame, conjugate(frames[j]))
            applied = (w * inverse, x * inverse, y * inverse, z * inverse)
            frames[j] = frame
            for i in subtree[j]:
                frames[i] = multiply(applied, frames[i])
                p = parents[i]
                hx, hy, hz = heads[p]
                x, y, z = rotate(frames[p], offsets[i])
                heads[i] = (hx + x, hy + y, hz + z)

    if len(effectors) == 1:  # a chain: chain CCD's own sweeps
        return lambda local, frames, heads, memory=None: sweep(local, frames, heads)
    return mixed(skeleton, plan, bones, sweep)
