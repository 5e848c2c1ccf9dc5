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
jointly reachable pose still reached.

Near the goals (every effector within NEAR x the moved bones' length of its target: a bake's
frames, started from a least-squares prediction, and a solve's last corrections) several
effectors' step is tree_near's instead: one sweep turning each bone whole, then those turns
rescaled together by least squares on what each did to the goals (measured during the sweep),
kept only where that beats the sweep's own pose.
Plain and mixed sweeps crawl there (a bake's frame took 2.7-8 sweeps; now about one).

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
from ..maths.floats import IDENTITY, best_rotation, perpendicular, profile_rotation, scaled, swing
from ..skeleton_floats import cached_rows, rows
from .tree_near import make_near_step, turned_local

# Several effectors: a bone at depth d below the tree's root takes 1 / (1 + SPREAD d) of its best
# turn per sweep (module doc). On the metarig's trees 0.6 gave 1.07-1.21x Blender's rotation
# cost, 0.8 1.04-1.16x, 1.2 1.00-1.11x with 20% more sweeps on five effectors.
SPREAD = 0.8
# ... while some effector is further than NEAR x the moved bones' length from its goal; within it
# (the last small corrections, a bake's frames started near their answer) the near step serves
# (tree_near: whole turns, rescaled together). Larger NEAR (3e-3, 1e-2) took the near step from
# further off and left 2-8% of five-effector poses from the rest pose unreached.
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
    step = partial(step, memory={})  # this solve's sweeps and near steps (tree_mixing, tree_near)
    mixed_sweeps = len(effectors) > 1  # (they end when settled, not when a sweep crawls: tree_run)
    return run(skeleton, local, effectors, plan, step, tolerance, max_iterations, "ccd", free, not mixed_sweeps)


def make_step(skeleton, plan, effectors):
    """step(local, frames, heads, memory): in place on lists of tuples, one sweep (make_sweep); with
    several effectors, near the goals (NEAR) tree_near's step, else a sweep and the mixing of the
    last sweeps (`memory`: a new dict per solve, holding both's state)."""
    sweep = make_sweep(skeleton, plan, effectors)
    if len(effectors) == 1:  # a chain: chain CCD's own sweeps
        return lambda local, frames, heads, memory=None: sweep(local, frames, heads)
    far = mixed(skeleton, plan, [e.bone for e in effectors], sweep)
    near = make_near_step(skeleton, plan, effectors, bone_visits(skeleton, plan, effectors), _one_pair)
    distance = NEAR * plan.length

    def step(local: list, frames: list, heads: list, memory: dict) -> None:
        if near(local, frames, heads, distance, memory.setdefault("near", [])):
            memory["far"] = {}  # (the mixing's sweeps restart, should the goals be left again)
            return
        memory["near"].clear()
        far(local, frames, heads, memory.setdefault("far", {}))

    return step


def bone_visits(skeleton, plan, effectors) -> list:
    """Per bone visited in a sweep, tips to roots (children before their parents): (bone, its
    parent's index or -1, its reference, its effectors as (index, bone, reach), clamped, the moved
    bones below it as (bone, parent, offset))."""
    parents = skeleton.parents
    reference, offsets = rows(skeleton.reference), rows(skeleton.offsets)
    reach = cached_rows(skeleton, "reach")
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
    bones = [e.bone for e in effectors]
    return [
        (
            j,
            parents[j],
            reference[j],
            [(k, bones[k], reach[bones[k]]) for k in below[j]],
            j in clamped,
            [(i, parents[i], offsets[i]) for i in subtree[j]],
        )
        for j in reversed(moved)
    ]


def make_sweep(skeleton, plan, effectors):
    """sweep(local, frames, heads): one sweep, tips to roots, in place on lists of tuples, each
    bone taking its share of its best turn (module doc; near the goals tree_near's step serves).

    Written out on plain floats, term by term the arithmetic of goal_pairs, best_rotation's one-pair
    swing and floats.multiply/rotate (the same numbers to the bit; several pairs' sums go to
    floats.profile_rotation): a bone visit is a few 3-vector operations, where the helpers' calls
    and tuples cost more than the sums (module doc, "Speed")."""
    parents = skeleton.parents
    base = tuple(skeleton.base_frame.tolist())
    limits = skeleton.limits
    moved = plan.moved
    keep = {i: 1.0 if limits is None else 1.0 - float(np.mean(limits.stiffness[i])) for i in moved}
    bones = [e.bone for e in effectors]
    turns = dict(keep)  # the share of its best turn a bone takes: 1 - stiffness, held back by depth
    if len(effectors) > 1:
        depth: dict[int, int] = {}
        for i in moved:  # ascending: parents first
            depth[i] = 0 if parents[i] == -1 else depth[parents[i]] + 1
            turns[i] = keep[i] / (1.0 + SPREAD * depth[i])
    # (plan.targets and plan.orientation are read at each step: a cached plan refreshes them)
    visits = bone_visits(skeleton, plan, effectors)
    weights = plan.weights
    # per bone, the lightest and heaviest of its pairs' weights (best_rotation's pull toward no rotation)
    lightest = {
        j: (min(weights[k] for k, _, _ in effs), max(weights[k] for k, _, _ in effs)) for j, _, _, effs, _, _ in visits
    }

    def sweep(local: list, frames: list, heads: list) -> None:
        targets, orientation = plan.targets, plan.orientation
        for j, p, (rw, rx, ry, rz), effs, clamps, hanging in visits:
            ox, oy, oz = heads[j]
            if len(effs) == 1 and effs[0][1] not in orientation:
                k, b, (vx, vy, vz) = effs[0]
                qw, qx, qy, qz = frames[b]
                hx, hy, hz = heads[b]
                ux, uy, uz = 2.0 * (qy * vz - qz * vy), 2.0 * (qz * vx - qx * vz), 2.0 * (qx * vy - qy * vx)
                ax = hx + (vx + qw * ux + (qy * uz - qz * uy)) - ox
                ay = hy + (vy + qw * uy + (qz * ux - qx * uz)) - oy
                az = hz + (vz + qw * uz + (qx * uy - qy * ux)) - oz
                tx, ty, tz = targets[k]
                turn = _one_pair((ax, ay, az), (tx - ox, ty - oy, tz - oz))
            elif orientation and any(b in orientation for _, b, _ in effs):
                found = ([], [], [])
                for k, _, _ in effs:
                    goal_pairs(skeleton, plan, bones, k, (ox, oy, oz), frames, heads, found)
                turn = best_rotation(*found)
            else:  # several pairs: best_rotation's sums written out, in its order
                sxx = sxy = sxz = syx = syy = syz = szx = szy = szz = 0.0
                size = 0.0
                for k, b, (vx, vy, vz) in effs:
                    qw, qx, qy, qz = frames[b]
                    hx, hy, hz = heads[b]
                    ux, uy, uz = 2.0 * (qy * vz - qz * vy), 2.0 * (qz * vx - qx * vz), 2.0 * (qx * vy - qy * vx)
                    ax = hx + (vx + qw * ux + (qy * uz - qz * uy)) - ox
                    ay = hy + (vy + qw * uy + (qz * ux - qx * uz)) - oy
                    az = hz + (vz + qw * uz + (qx * uy - qy * ux)) - oz
                    tx, ty, tz = targets[k]
                    bx, by, bz = tx - ox, ty - oy, tz - oz
                    wk = weights[k]
                    sxx += wk * ax * bx
                    sxy += wk * ax * by
                    sxz += wk * ax * bz
                    syx += wk * ay * bx
                    syy += wk * ay * by
                    syz += wk * ay * bz
                    szx += wk * az * bx
                    szy += wk * az * by
                    szz += wk * az * bz
                    size += wk * math.sqrt((ax * ax + ay * ay + az * az) * (bx * bx + by * by + bz * bz))
                turn = profile_rotation((sxx, sxy, sxz, syx, syy, syz, szx, szy, szz), size, *lightest[j])
            if turns[j] != 1.0:
                turn = scaled(turn, turns[j])
            # rest = parent frame x reference; new local = normalize4(rest^-1 (turn frame))
            aw, ax, ay, az = base if p == -1 else frames[p]
            sw = aw * rw - ax * rx - ay * ry - az * rz
            sx = aw * rx + ax * rw + ay * rz - az * ry
            sy = aw * ry - ax * rz + ay * rw + az * rx
            sz = aw * rz + ax * ry - ay * rx + az * rw
            fw, fx, fy, fz = frames[j]
            new_local = turned_local(turn, frames[j], sw, sx, sy, sz)
            if clamps:
                new_local = tuple(joint_limits.clamp(limits, j, np.array(new_local)).tolist())
            local[j] = new_local
            bw, bx, by, bz = new_local
            frame = (
                sw * bw - sx * bx - sy * by - sz * bz,
                sw * bx + sx * bw + sy * bz - sz * by,
                sw * by - sx * bz + sy * bw + sz * bx,
                sw * bz + sx * by - sy * bx + sz * bw,
            )
            frames[j] = frame
            if not hanging:
                continue
            # The bones below turn with it: their frames by one product each (not their chains of
            # products again), their heads as forward kinematics places them. The frames are
            # products of rotations read in float32, off unit by ~1e-7: dividing by the old
            # frame's squared norm keeps forward kinematics' numbers, norms included.
            inverse = 1.0 / (fw * fw + fx * fx + fy * fy + fz * fz)
            aw, ax, ay, az = frame
            bx, by, bz = -fx, -fy, -fz
            cw = (aw * fw - ax * bx - ay * by - az * bz) * inverse
            cx = (aw * bx + ax * fw + ay * bz - az * by) * inverse
            cy = (aw * by - ax * bz + ay * fw + az * bx) * inverse
            cz = (aw * bz + ax * by - ay * bx + az * fw) * inverse
            for i, q, (vx, vy, vz) in hanging:
                bw, bx, by, bz = frames[i]
                frames[i] = (
                    cw * bw - cx * bx - cy * by - cz * bz,
                    cw * bx + cx * bw + cy * bz - cz * by,
                    cw * by - cx * bz + cy * bw + cz * bx,
                    cw * bz + cx * by - cy * bx + cz * bw,
                )
                qw, qx, qy, qz = frames[q]
                hx, hy, hz = heads[q]
                ux, uy, uz = 2.0 * (qy * vz - qz * vy), 2.0 * (qz * vx - qx * vz), 2.0 * (qx * vy - qy * vx)
                heads[i] = (
                    hx + (vx + qw * ux + (qy * uz - qz * uy)),
                    hy + (vy + qw * uy + (qz * ux - qx * uz)),
                    hz + (vz + qw * uz + (qx * uy - qy * ux)),
                )

    return sweep


def _one_pair(a: tuple, b: tuple) -> tuple:
    """floats.best_rotation of one pair (a onto b): the minimal swing of unit a onto unit b."""
    ax, ay, az = a
    n = math.sqrt(ax * ax + ay * ay + az * az)
    bx, by, bz = b
    m = math.sqrt(bx * bx + by * by + bz * bz)
    if not (n > 0.0 and m > 0.0):
        return IDENTITY
    ux, uy, uz = ax / n, ay / n, az / n
    vx, vy, vz = bx / m, by / m, bz / m
    dot = ux * vx + uy * vy + uz * vz
    if dot >= 0.0:  # floats.swing's common case
        w, x, y, z = 1.0 + dot, uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
        r = math.sqrt(w * w + x * x + y * y + z * z)
        return (w / r, x / r, y / r, z / r) if r > 0.0 else (0.0, 0.0, 0.0, 0.0)
    u = (ux, uy, uz)
    return swing(u, (vx, vy, vz), perpendicular(u))
