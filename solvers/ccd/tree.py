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

Where several effectors share bones, plain sweeps converge linearly and slowly: the shared
bones take a compromise turn each sweep, the branches undo part of it, and the errors shrink
by a steady factor close to 1 (five effectors from the hips on Rigify's metarig: 10% of jointly
reachable poses within 1e-4 after 100 sweeps, 65% after 800; near full extension a lone branch
crawls the same way). So after each sweep the solve mixes the last sweeps' results (Anderson
acceleration of the sweep as a fixed-point map, in the moved joints' rotation vectors from the
solve's start): the combination whose sweep residuals cancel best, kept only when it lowers
the weighted squared error below the plain sweep's (a pose no sweep would reach is never kept
for worse). Each sweep is still CCD's; the mixing needs no Jacobian, only the sweeps' results.
Of the other Jacobian-free remedies, more sweeps cost linearly for a linear gain (400 sweeps for
98% on five effectors), and inner passes per branch or a shared bone aiming each branch head
into the shell it reaches from did not help: the branches themselves crawl.

Afterwards, as for FABRIK: unlimited bones whose twist no goal sees take the minimal swing
from their input rotation, and each pole spins its effector's own segment.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from .. import limits as joint_limits
from ..common.tree_plan import free_twist, make_plan
from ..common.tree_run import run
from ..maths.floats import (
    best_rotation,
    conjugate,
    from_rotation_vector,
    multiply,
    normalize4,
    rotate,
    scaled,
)
from ..skeleton import end_point, forward, rows

AXES = ((1.0, 0.0, 0.0), (0.0, 0.0, 1.0))
# Sweeps remembered for the mixing (Anderson's depth): on the metarig's five effectors 2 reach 88%
# of jointly reachable poses in 100 sweeps, 4 92%, 8 96%, 12 95%.
DEPTH = 8


def solve(skeleton, local: np.ndarray, effectors, tolerance: float, max_iterations: int, options: dict):
    """The registry's `tree` kernel for CCD (solvers.registry)."""
    plan = make_plan(skeleton, effectors)
    step = plan.steps.get("ccd")
    if step is None:
        step = plan.steps["ccd"] = make_step(skeleton, plan, effectors)
    free = plan.steps.get("free")
    if free is None:
        free = plan.steps["free"] = free_twist(skeleton, plan)
    if len(effectors) > 1:  # shared bones: the sweeps mixed (one effector: chain CCD's own sweeps)
        step = partial(step, memory={})
    return run(skeleton, local, effectors, plan, step, tolerance, max_iterations, "ccd", free)


def make_step(skeleton, plan, effectors):
    """step(local, frames, heads, memory=None): one sweep, tips to roots, then (given `memory`, a
    dict per solve) the mixing of the last sweeps, in place on lists of tuples."""
    parents = skeleton.parents
    reference = rows(skeleton.reference)
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
    # (plan.targets and plan.orientation are read at each step: a cached plan refreshes them)
    targets, weights, orientation = plan.targets, plan.weights, plan.orientation
    lengths = skeleton.lengths.tolist()

    def pairs(k: int, origin: tuple, frames: list, heads: list, have: list, want: list, pair_weights: list) -> None:
        """Effector k's vectors from `origin` to its end (and axes) and to its goal, weighted."""
        hx, hy, hz = origin
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

    def cost(frames: list, heads: list) -> float:
        """What a sweep lowers: the weighted squared distances of every pair (about the origin)."""
        have, want, pair_weights = [], [], []
        for k in range(len(bones)):
            pairs(k, (0.0, 0.0, 0.0), frames, heads, have, want, pair_weights)
        return sum(w * math.dist(a, b) ** 2 for a, b, w in zip(have, want, pair_weights, strict=True))

    def sweep(local: list, frames: list, heads: list) -> None:
        for j in reversed(moved):
            head = heads[j]
            have, want, pair_weights = [], [], []
            for k in below[j]:
                pairs(k, head, frames, heads, have, want, pair_weights)
            turn = best_rotation(have, want, pair_weights)
            if keep[j] != 1.0:
                turn = scaled(turn, keep[j])
            p = parents[j]
            rest = multiply(base if p == -1 else frames[p], reference[j])
            new_local = normalize4(multiply(conjugate(rest), multiply(turn, frames[j])))
            if j in clamped:
                new_local = tuple(joint_limits.clamp(limits, j, np.array(new_local)).tolist())
            local[j] = new_local
            frame = multiply(rest, new_local)
            # The bones below turn rigidly with it (one product each, not their chains again).
            applied = multiply(frame, conjugate(frames[j]))
            frames[j] = frame
            hx, hy, hz = head
            for i in subtree[j]:
                frames[i] = multiply(applied, frames[i])
                x, y, z = heads[i]
                x, y, z = rotate(applied, (x - hx, y - hy, z - hz))
                heads[i] = (hx + x, hy + y, hz + z)

    def chart(local: list, start: list) -> list:
        """The moved bones' rotation vectors from the solve's start, one flat list."""
        out = []
        for j, q0 in zip(moved, start, strict=True):
            w, x, y, z = multiply(conjugate(q0), local[j])
            if w < 0.0:
                w, x, y, z = -w, -x, -y, -z
            s = math.sqrt(x * x + y * y + z * z)
            f = 2.0 * math.atan2(s, w) / s if s > 1e-300 else 2.0
            out += (x * f, y * f, z * f)
        return out

    def step(local: list, frames: list, heads: list, memory: dict | None = None) -> None:
        if memory is None:
            sweep(local, frames, heads)
            return
        if "start" not in memory:
            memory["start"] = [local[j] for j in moved]
            memory["x"], memory["g"], memory["at"] = [], [], None
        start, xs, gs = memory["start"], memory["x"], memory["g"]
        x = memory["at"] if memory["at"] is not None else chart(local, start)
        sweep(local, frames, heads)
        after = cost(frames, heads)
        g = memory["at"] = chart(local, start)
        xs.append(x)
        gs.append(g)
        if len(xs) > DEPTH + 1:
            del xs[0], gs[0]
        if len(xs) < 2 or after <= 0.0:
            return
        # Anderson's mixing: the combination of the remembered sweeps' results whose residuals
        # (result - start of the sweep) cancel best in the least-squares sense.
        xa, ga = np.array(xs), np.array(gs)
        f = ga - xa
        df, dg = np.diff(f, axis=0), np.diff(ga, axis=0)
        gamma = _solve_small((df @ df.T).tolist(), (df @ f[-1]).tolist())
        mixed = (ga[-1] - gamma @ dg).tolist()
        swept = [local[j] for j in moved]
        for n, (j, q0) in enumerate(zip(moved, start, strict=True)):
            turned = normalize4(multiply(q0, from_rotation_vector(*mixed[3 * n : 3 * n + 3])))
            if j in clamped:
                turned = tuple(joint_limits.clamp(limits, j, np.array(turned)).tolist())
            local[j] = turned
        forward(skeleton, local, moved, frames, heads)
        if cost(frames, heads) < after:
            memory["at"] = None  # (clamped: the chart is measured again)
            return
        for j, q in zip(moved, swept, strict=True):  # no better than the sweep: keep the sweep's pose
            local[j] = q
        forward(skeleton, local, moved, frames, heads)
        del xs[:-1], gs[:-1]

    return step


def _solve_small(a: list, b: list) -> np.ndarray:
    """x with (a + a tiny ridge) x = b for a small symmetric positive semi-definite `a` (lists of
    floats), by Cholesky on floats: numpy's solvers go through threaded LAPACK, slow on a busy
    machine for a matrix this small."""
    n = len(b)
    ridge = 1e-12 * sum(a[i][i] for i in range(n)) + 1e-300
    low = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1):
            t = a[i][j] - sum(low[i][k] * low[j][k] for k in range(j))
            low[i][j] = math.sqrt(max(t + ridge, 1e-300)) if i == j else t / low[j][j]
    y = [0.0] * n
    for i in range(n):
        y[i] = (b[i] - sum(low[i][k] * y[k] for k in range(i))) / low[i][i]
    x = [0.0] * n
    for i in reversed(range(n)):
        x[i] = (y[i] - sum(low[k][i] * x[k] for k in range(i + 1, n))) / low[i][i]
    return np.array(x)
