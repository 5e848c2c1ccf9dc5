"""Anderson mixing of a tree kernel's iterations (CCD's sweeps, FABRIK's passes).

Where several effectors share bones, CCD's sweeps and FABRIK's passes converge linearly: the
shared bones take a compromise each iteration, the branches undo part of it, and the errors
shrink by a steady factor near 1 (CCD, five effectors from the hips of Rigify's metarig: 10%
of jointly reachable poses within 1e-4 after 100 sweeps, 65% after 800). Seen as a fixed-point
map on the moved joints' rotation vectors (from the solve's start), the iteration is sped up
by Anderson's mixing: after each iteration, the combination of the last DEPTH results whose
residuals (result - the iteration's start) cancel best in the least-squares sense. The mixed
pose is kept only when it lowers the weighted squared error (the goals' pairs: each effector's
end to its target, and for an orientation goal its bone's X and Z axes at its length) below
the plain iteration's; otherwise the iteration's own pose stands and the memory restarts. Each
iteration is still the method's own; the mixing needs no Jacobian, only its results.
"""

from __future__ import annotations

import math

import numpy as np

from .. import limits as joint_limits
from ..maths.floats import from_rotation_vector, multiply, normalize4, rotate
from ..skeleton_floats import cached_rows, end_point, forward

AXES = ((1.0, 0.0, 0.0), (0.0, 0.0, 1.0))  # an orientation goal's pairs: its bone's X and Z axes
# Iterations remembered (Anderson's depth): CCD on the metarig's five effectors reaches 88% of
# jointly reachable poses in 100 sweeps with 2, 92% with 4, 96% with 8, 95% with 12.
DEPTH = 8


def goal_pairs(skeleton, plan, bones: list[int], k: int, origin: tuple, frames: list, heads: list, out: tuple) -> None:
    """Effector k's vectors from `origin` to its end (and axes) and to its goal, with their
    weights, appended to `out` = (have, want, weights) (plan.targets/orientation read now)."""
    have, want, pair_weights = out
    hx, hy, hz = origin
    b = bones[k]
    ex, ey, ez = end_point(skeleton, frames, heads, b)
    tx, ty, tz = plan.targets[k]
    have.append((ex - hx, ey - hy, ez - hz))
    want.append((tx - hx, ty - hy, tz - hz))
    pair_weights.append(plan.weights[k])
    if b in plan.orientation:
        goal, rotation_weight = plan.orientation[b]
        w, length = plan.weights[k] * rotation_weight, float(skeleton.lengths[b])
        for axis in AXES:
            ax, ay, az = rotate(frames[b], axis)
            gx, gy, gz = rotate(goal, axis)
            have.append((ex - hx + length * ax, ey - hy + length * ay, ez - hz + length * az))
            want.append((tx - hx + length * gx, ty - hy + length * gy, tz - hz + length * gz))
            pair_weights.append(w)


def mixed(skeleton, plan, bones: list[int], iterate):
    """step(local, frames, heads, memory): `iterate(local, frames, heads)` (in place on lists of
    tuples) followed by the mixing; `memory` is a new dict per solve."""
    moved = plan.moved
    limits = skeleton.limits
    clamped = set() if limits is None else {i for i in moved if limits.active[i]}
    origin = (0.0, 0.0, 0.0)

    reach = cached_rows(skeleton, "reach")
    ends = [(k, b, reach[b]) for k, b in enumerate(bones)]

    def cost(frames: list, heads: list) -> float:
        if plan.orientation:
            pairs = ([], [], [])
            for k in range(len(bones)):
                goal_pairs(skeleton, plan, bones, k, origin, frames, heads, pairs)
            return sum(w * math.dist(a, b) ** 2 for a, b, w in zip(*pairs, strict=True))
        # Positions only: the same sum written out (end_point's arithmetic; `- 0.0` from the
        # origin changes no number).
        total, targets, weights = 0, plan.targets, plan.weights
        for k, b, (vx, vy, vz) in ends:
            qw, qx, qy, qz = frames[b]
            hx, hy, hz = heads[b]
            ux, uy, uz = 2.0 * (qy * vz - qz * vy), 2.0 * (qz * vx - qx * vz), 2.0 * (qx * vy - qy * vx)
            end = (hx + (vx + qw * ux + (qy * uz - qz * uy)), hy + (vy + qw * uy + (qz * ux - qx * uz)),
                   hz + (vz + qw * uz + (qx * uy - qy * ux)))  # fmt: skip
            total += weights[k] * math.dist(end, targets[k]) ** 2
        return total

    def chart(local: list, start: list) -> list:
        """The moved bones' rotation vectors from the solve's start, one flat list."""
        out = []
        for j, (aw, ax, ay, az) in zip(moved, start, strict=True):
            ax, ay, az = -ax, -ay, -az  # floats.multiply(floats.conjugate(q0), local[j]) written out
            bw, bx, by, bz = local[j]
            w = aw * bw - ax * bx - ay * by - az * bz
            x = aw * bx + ax * bw + ay * bz - az * by
            y = aw * by - ax * bz + ay * bw + az * bx
            z = aw * bz + ax * by - ay * bx + az * bw
            if w < 0.0:
                w, x, y, z = -w, -x, -y, -z
            s = math.sqrt(x * x + y * y + z * z)
            f = 2.0 * math.atan2(s, w) / s if s > 1e-300 else 2.0
            out += (x * f, y * f, z * f)
        return out

    def step(local: list, frames: list, heads: list, memory: dict) -> None:
        # (An iteration's result is charted when the next iteration needs it, and its cost when it
        # is mixed: a solve that stops after one iteration, a bake's usual frame, mixes nothing.)
        if "start" not in memory:
            memory["start"] = [local[j] for j in moved]
            memory["x"], memory["g"], memory["at"] = [], [], None
        start, xs, gs = memory["start"], memory["x"], memory["g"]
        x = memory["at"]
        if x is None:
            x = chart(local, start)
        elif type(x) is tuple:  # the last iteration's result, not charted yet
            x = gs[-1] = chart(x, start)
        iterate(local, frames, heads)
        memory["at"] = g = tuple(local)  # charted when needed (above, or for the mixing below)
        xs.append(x)
        gs.append(g)
        if len(xs) > DEPTH + 1:
            del xs[0], gs[0]
        if len(xs) < 2:
            return
        after = cost(frames, heads)
        if after <= 0.0:
            return
        g = memory["at"] = gs[-1] = chart(local, start)
        xa, ga = np.array(xs), np.array(gs)
        f = ga - xa
        df, dg = np.diff(f, axis=0), np.diff(ga, axis=0)
        gamma = solve_small((df @ df.T).tolist(), (df @ f[-1]).tolist())
        mix = (ga[-1] - gamma @ dg).tolist()
        plain = [(local[j], frames[j], heads[j]) for j in moved]
        for n, (j, q0) in enumerate(zip(moved, start, strict=True)):
            turned = normalize4(multiply(q0, from_rotation_vector(mix[3 * n], mix[3 * n + 1], mix[3 * n + 2])))
            if j in clamped:
                turned = tuple(joint_limits.clamp(limits, j, np.array(turned)).tolist())
            local[j] = turned
        forward(skeleton, local, moved, frames, heads)
        if cost(frames, heads) < after:
            memory["at"] = None  # (a clamp may have moved it: charted again)
            return
        for j, (q, frame, head) in zip(moved, plain, strict=True):  # no better: the iteration's pose
            local[j], frames[j], heads[j] = q, frame, head
        del xs[:-1], gs[:-1]

    return step


def solve_small(a: list, b: list) -> np.ndarray:
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
