"""CCD's tree step near the goals: one sweep, then its turns rescaled together.

Near the goals (every effector within NEAR x the moved bones' length: a bake's frames, which
start from a least-squares prediction a few tolerances off, and a solve's last corrections) plain
sweeps crawl: each bone removes the error across its own line to the effectors and leaves the
error along it, so the errors shrink by a steady factor near 1 a sweep (five effectors from the
hips of Rigify's metarig: 1.5 tolerances down to 1 in up to 9 sweeps even with the mixing,
common.tree_mixing, which needs several sweeps before it mixes at all).

So near the goals a step is one sweep as tree.make_sweep's (tips to roots, each bone turned
whole, times 1 - its stiffness, by the best rotation of its effectors' points onto their
goals, clamped into its limits) that records what each bone's turn did to the goals' points
(each point turned about the bone's head: measured, not a Jacobian), then the least-squares
rescale of those turns: every bone turns by (1 + beta_j) times its sweep's turn, beta of least
norm with the points' linearised residual sum_j beta_j d_j = -(the sweep's residual). Near the
goals the residual is linear in the turns' scales, so one step usually meets the tolerance (a
bake's frame: 1 sweep instead of 2.7-8). The rescaled pose is kept where its weighted squared
error is below the plain sweep's, else the sweep's own pose stands: a step is never worse than
chain CCD's sweep. The turns' directions stay CCD's (each bone about the axis its own best
rotation picks), only how far each turns is chosen jointly.

Within a sweep a bone's head and frame are not moved by the bones visited before it (its
descendants and other branches); only the effectors' points are, so those alone are tracked,
and forward kinematics runs once, on the rescaled pose.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .. import limits as joint_limits
from ..common.tree_mixing import AXES
from ..maths.floats import normalize4, profile_rotation, rotate, scaled
from ..skeleton_floats import cached_rows, forward
from . import tree_near_written

# Earlier near steps whose turns' measured moves join this step's in the rescale (the near steps'
# columns span the goals' error only together on five effectors from the hips: 17 bones' turns
# for 15 residuals, several of them alike).
HISTORY = 2
# The least-squares rescale's ridge, as a share of its normal matrix's mean diagonal: a bone
# whose sweep turn moved nothing (its column ~0) is left at its sweep's turn. (A ridge per
# residual, its own diagonal's share, let five effectors' rank-deficient rescale steer along
# near-null directions: 161 steps against 141 on bench_tree's bake.) Under ranked weights (1e6 a level) a
# level two below the top sees this ridge swamp its rows: its bones keep their whole CCD turns.
RIDGE = 1e-9


def turned_local(turn: tuple, frame: tuple, sw: float, sx: float, sy: float, sz: float) -> tuple:
    """A bone's new local rotation after its world frame turns by `turn`: normalize4(rest^-1
    (turn frame)) with rest = (sw, sx, sy, sz) its parent's frame x its reference, written out
    (the sweeps' and the near step's one formula, in one order: their results to the bit)."""
    aw, ax, ay, az = turn
    fw, fx, fy, fz = frame
    bw = aw * fw - ax * fx - ay * fy - az * fz
    bx = aw * fx + ax * fw + ay * fz - az * fy
    by = aw * fy - ax * fz + ay * fw + az * fx
    bz = aw * fz + ax * fy - ay * fx + az * fw
    aw, ax, ay, az = sw, -sx, -sy, -sz
    return normalize4(
        (
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        )
    )


def make_near_step(skeleton, plan, effectors, visits: list, one_pair, write_out: bool = True):
    """near(local, frames, heads, near, history) -> bool: the near step in place (lists of tuples),
    or False (nothing done) where some effector is further than `near` from its target; `history`:
    a list kept over a solve's near steps (cleared when a step is not near).

    `visits`: tree.make_sweep's bone visits, tips to roots; `one_pair`: tree's one-pair turn;
    `write_out` off: the general sweep even where tree_near_written's serves (tests compare them)."""
    reach = cached_rows(skeleton, "reach")
    base = tuple(skeleton.base_frame.tolist())
    limits = skeleton.limits
    moved = plan.moved
    bones = [e.bone for e in effectors]
    lengths = [float(skeleton.lengths[b]) for b in bones]
    weights = plan.weights
    root_weights = [math.sqrt(w) for w in weights]  # (a plan's weights are fixed: tree_plan.make_plan)
    keep = {j: 1.0 if limits is None else 1.0 - float(np.mean(limits.stiffness[j])) for j in moved}
    # visits as (bone, parent, reference, effectors below (their indices), clamped)
    order = [(j, p, reference, [k for k, _, _ in effs], clamps) for j, p, reference, effs, clamps, _ in visits]
    visited = [j for j, *_ in order]
    rests = [reference for _, _, reference, _, _ in order]
    clamping = [clamps for *_, clamps in order]
    structure: dict = {}
    written: list = []  # the written-out sweep of this layout, compiled on first use

    def points_of(oriented: frozenset):
        """Per visit, the indices of its goal points; per point its effector and axis (None: the end)."""
        got = structure.get(oriented)
        if got is None:
            kinds, first = [], []
            for k in range(len(bones)):
                first.append(len(kinds))
                kinds.append((k, None))
                if bones[k] in oriented:
                    kinds += [(k, axis) for axis in AXES]
            count = [1 + 2 * (bones[k] in oriented) for k in range(len(bones))]
            per_visit = [[first[k] + i for k in effs for i in range(count[k])] for _, _, _, effs, _ in order]
            got = structure[oriented] = (kinds, per_visit)
        return got

    def near_step(local: list, frames: list, heads: list, near: float, history: list) -> bool:
        targets, orientation = plan.targets, plan.orientation
        ends = []
        for b, (vx, vy, vz), (tx, ty, tz) in zip(bones, (reach[b] for b in bones), targets, strict=True):
            qw, qx, qy, qz = frames[b]
            hx, hy, hz = heads[b]
            # skeleton_floats.end_point (floats.rotate) written out
            ux, uy, uz = 2.0 * (qy * vz - qz * vy), 2.0 * (qz * vx - qx * vz), 2.0 * (qx * vy - qy * vx)
            ex = hx + (vx + qw * ux + (qy * uz - qz * uy))
            ey = hy + (vy + qw * uy + (qz * ux - qx * uz))
            ez = hz + (vz + qw * uz + (qx * uy - qy * ux))
            if math.dist((ex, ey, ez), (tx, ty, tz)) > near:
                return False
            ends.append((ex, ey, ez))
        kinds, per_visit = points_of(frozenset(orientation))
        before = [local[j] for j in visited]
        plain_tree = write_out and limits is None and not orientation
        if plain_tree and not written:  # the sweep written out for this layout (None: too big to compile)
            plain = [(j, p, points) for (j, p, _, _, _), points in zip(order, per_visit, strict=True)]
            written.append(tree_near_written.make(plain, len(bones)))
        if plain_tree and written[0] is not None:
            root = root_weights
            rows = 3 * len(bones)
            have = [c for end in ends for c in end]
            want = [c for target in targets for c in target]
            turns, columns, trace, residual, swept = written[0](
                frames, heads, have, want, root, weights, one_pair, rests, base
            )
        else:
            turns, columns, trace, residual, swept, root, rows = sweep(local, frames, heads, ends, kinds, per_visit)
        return rescale(
            local, frames, heads, history, before, turns, columns, trace, residual, swept, root, rows, kinds, ends
        )

    def sweep(local, frames, heads, ends, kinds, per_visit):
        """The near step's sweep on any tree (limits, orientation goals): (each visit's turn of its
        local, each visit's column of moves, the columns' squared sum, the residual after it, its
        squared sum, the points' root weights, the residual's length)."""
        targets, orientation = plan.targets, plan.orientation
        have, want, pull = [], [], []  # the goals' points now, where they should be, their weights
        for k, axis in kinds:
            ex, ey, ez = ends[k]
            tx, ty, tz = targets[k]
            if axis is None:
                have.append([ex, ey, ez])
                want.append((tx, ty, tz))
                pull.append(weights[k])
                continue
            goal, rotation_weight = orientation[bones[k]]
            length = lengths[k]
            ax, ay, az = rotate(frames[bones[k]], axis)
            gx, gy, gz = rotate(goal, axis)
            have.append([ex + length * ax, ey + length * ay, ez + length * az])
            want.append((tx + length * gx, ty + length * gy, tz + length * gz))
            pull.append(weights[k] * rotation_weight)
        root = [math.sqrt(w) for w in pull]
        rows = 3 * len(have)
        columns = []  # per visit its sqrt-weighted moves of the goals' points, all visits in one flat list
        trace = 0.0
        turns = []  # each visit's turn of its local (new x old^-1, w >= 0)
        for (j, p, (rw, rx, ry, rz), _, clamps), points in zip(order, per_visit, strict=True):
            ox, oy, oz = heads[j]
            if len(points) == 1:  # the minimal swing (tree._one_pair; its common case written out)
                (px, py, pz), (tx, ty, tz) = have[points[0]], want[points[0]]
                ax, ay, az = px - ox, py - oy, pz - oz
                bx, by, bz = tx - ox, ty - oy, tz - oz
                n = math.sqrt(ax * ax + ay * ay + az * az)
                m = math.sqrt(bx * bx + by * by + bz * bz)
                if n > 0.0 and m > 0.0 and ax * bx + ay * by + az * bz >= 0.0:
                    ax, ay, az, bx, by, bz = ax / n, ay / n, az / n, bx / m, by / m, bz / m
                    cw, cx, cy, cz = (
                        1.0 + ax * bx + ay * by + az * bz,
                        ay * bz - az * by,
                        az * bx - ax * bz,
                        ax * by - ay * bx,
                    )
                    r = math.sqrt(cw * cw + cx * cx + cy * cy + cz * cz)
                    turn = (cw / r, cx / r, cy / r, cz / r)
                else:
                    turn = one_pair((ax, ay, az), (bx, by, bz))
            else:  # floats.best_rotation's sums, written out
                sxx = sxy = sxz = syx = syy = syz = szx = szy = szz = 0.0
                size = 0.0
                lightest = heaviest = pull[points[0]]
                for i in points:
                    px, py, pz = have[i]
                    tx, ty, tz = want[i]
                    ax, ay, az = px - ox, py - oy, pz - oz
                    bx, by, bz = tx - ox, ty - oy, tz - oz
                    wk = pull[i]
                    lightest, heaviest = min(lightest, wk), max(heaviest, wk)
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
                turn = profile_rotation((sxx, sxy, sxz, syx, syy, syz, szx, szy, szz), size, lightest, heaviest)
            if keep[j] != 1.0:
                turn = scaled(turn, keep[j])
            # rest = parent frame x reference (the parent not visited yet: its frame as it was)
            aw, ax, ay, az = base if p == -1 else frames[p]
            sw = aw * rw - ax * rx - ay * ry - az * rz
            sx = aw * rx + ax * rw + ay * rz - az * ry
            sy = aw * ry - ax * rz + ay * rw + az * rx
            sz = aw * rz + ax * ry - ay * rx + az * rw
            if clamps:  # new local = the limits' clamp of normalize4(rest^-1 turn frame)
                fw, fx, fy, fz = frames[j]
                new_local = turned_local(turn, frames[j], sw, sx, sy, sz)
                new_local = tuple(joint_limits.clamp(limits, j, np.array(new_local)).tolist())
                # the turn the bone took, in its local axes (new local x old^-1) and in the world's
                # (rest x new local x frame^-1)
                aw, ax, ay, az = new_local
                bw, bx, by, bz = local[j]
                bx, by, bz = -bx, -by, -bz
                tw = aw * bw - ax * bx - ay * by - az * bz
                tx = aw * bx + ax * bw + ay * bz - az * by
                ty = aw * by - ax * bz + ay * bw + az * bx
                tz = aw * bz + ax * by - ay * bx + az * bw
                bw, bx, by, bz = new_local
                aw = sw * bw - sx * bx - sy * by - sz * bz
                ax = sw * bx + sx * bw + sy * bz - sz * by
                ay = sw * by - sx * bz + sy * bw + sz * bx
                az = sw * bz + sx * by - sy * bx + sz * bw
                inverse = 1.0 / (fw * fw + fx * fx + fy * fy + fz * fz)
                bx, by, bz = -fx, -fy, -fz
                cw = (aw * fw - ax * bx - ay * by - az * bz) * inverse
                cx = (aw * bx + ax * fw + ay * bz - az * by) * inverse
                cy = (aw * by - ax * bz + ay * fw + az * bx) * inverse
                cz = (aw * bz + ax * by - ay * bx + az * fw) * inverse
            else:  # unclamped, the world turn is the turn itself; in local axes rest^-1 turn rest
                cw, cx, cy, cz = turn
                bw = cw * sw - cx * sx - cy * sy - cz * sz
                bx = cw * sx + cx * sw + cy * sz - cz * sy
                by = cw * sy - cx * sz + cy * sw + cz * sx
                bz = cw * sz + cx * sy - cy * sx + cz * sw
                aw, ax, ay, az = sw, -sx, -sy, -sz
                tw = aw * bw - ax * bx - ay * by - az * bz
                tx = aw * bx + ax * bw + ay * bz - az * by
                ty = aw * by - ax * bz + ay * bw + az * bx
                tz = aw * bz + ax * by - ay * bx + az * bw
            turns.append((tw, tx, ty, tz) if tw >= 0.0 else (-tw, -tx, -ty, -tz))
            column = [0.0] * rows
            for i in points:
                point = have[i]
                vx, vy, vz = point[0] - ox, point[1] - oy, point[2] - oz
                ux, uy, uz = 2.0 * (cy * vz - cz * vy), 2.0 * (cz * vx - cx * vz), 2.0 * (cx * vy - cy * vx)
                dx = cw * ux + (cy * uz - cz * uy)
                dy = cw * uy + (cz * ux - cx * uz)
                dz = cw * uz + (cx * uy - cy * ux)
                point[0], point[1], point[2] = point[0] + dx, point[1] + dy, point[2] + dz
                s = root[i]
                column[3 * i], column[3 * i + 1], column[3 * i + 2] = s * dx, s * dy, s * dz
                trace += s * s * (dx * dx + dy * dy + dz * dz)
            columns += column
        residual = []
        swept = 0.0
        for (px, py, pz), (tx, ty, tz), s in zip(have, want, root, strict=True):
            rx, ry, rz = s * (px - tx), s * (py - ty), s * (pz - tz)
            residual += (rx, ry, rz)
            swept += rx * rx + ry * ry + rz * rz
        return turns, columns, trace, residual, swept, root, rows

    def rescale(local, frames, heads, history, before, turns, columns, trace, residual, swept, root, rows, kinds, ends):
        """The sweep's turns rescaled together (with the last steps'), kept where that beats the sweep."""
        count = len(order)
        # (each step's columns an array once: numpy reads a flat list of floats fastest, and the
        # history's arrays join without reading them again)
        history.append((turns, np.array(columns).reshape(count, rows), trace))
        if len(history) > 1 + HISTORY:
            del history[0]
        if swept > 0.0 and trace > 0.0:
            # amounts = D^T (D D^T + ridge)^-1 residual, D's columns the moves of this sweep's turns
            # and of the last steps' (each column: one more whole turn of one bone's sweep turn)
            d = history[0][1] if len(history) == 1 else np.concatenate([block for _, block, _ in history])
            normal = d.T @ d
            normal += identity(rows) * (RIDGE * sum([t for _, _, t in history]) / rows)
            amounts = (d @ _solve(normal, residual)).tolist()
            last = len(history) - 1
            shares = [(turns_h, h * count, 1.0 if h == last else 0.0) for h, (turns_h, _, _) in enumerate(history)]
            for n, (j, clamps) in enumerate(zip(visited, clamping, strict=True)):
                bw, bx, by, bz = before[n]
                for turns_h, at, whole in shares:  # _turned(turn, whole - amount, q), written out
                    tw, tx, ty, tz = turns_h[n]
                    sine = math.sqrt(tx * tx + ty * ty + tz * tz)
                    if not sine > 1e-300:
                        continue
                    half = math.atan2(sine, tw) * (whole - amounts[at + n])
                    f = math.sin(half) / sine
                    aw, ax, ay, az = math.cos(half), tx * f, ty * f, tz * f
                    bw, bx, by, bz = (
                        aw * bw - ax * bx - ay * by - az * bz,
                        aw * bx + ax * bw + ay * bz - az * by,
                        aw * by - ax * bz + ay * bw + az * bx,
                        aw * bz + ax * by - ay * bx + az * bw,
                    )
                size = math.sqrt(bw * bw + bx * bx + by * by + bz * bz)  # (floats.normalize4 written out)
                q = (bw / size, bx / size, by / size, bz / size)
                if clamps:
                    q = tuple(joint_limits.clamp(limits, j, np.array(q)).tolist())
                local[j] = q
            forward(skeleton, local, moved, frames, heads)
            if _cost(frames, heads, bones, reach, lengths, plan, kinds, root, ends) < swept:
                return True
        for j, turn, q, clamps in zip(visited, turns, before, clamping, strict=True):  # no better: the sweep's pose
            q = normalize4(_turned(turn, 1.0, q))
            local[j] = tuple(joint_limits.clamp(limits, j, np.array(q)).tolist()) if clamps else q
        forward(skeleton, local, moved, frames, heads)
        return True

    return near_step


def _cost(frames, heads, bones, reach, lengths, plan, kinds, root, ends) -> float:
    """The weighted squared residual of the goals' points at frames/heads (near_step's measure);
    `ends`: a list the effectors' end points are put in."""
    targets, orientation = plan.targets, plan.orientation
    total = 0.0
    ends.clear()
    for b, (vx, vy, vz) in zip(bones, (reach[b] for b in bones), strict=True):
        qw, qx, qy, qz = frames[b]
        hx, hy, hz = heads[b]
        # skeleton_floats.end_point (floats.rotate) written out
        ux, uy, uz = 2.0 * (qy * vz - qz * vy), 2.0 * (qz * vx - qx * vz), 2.0 * (qx * vy - qy * vx)
        ends.append(
            (
                hx + (vx + qw * ux + (qy * uz - qz * uy)),
                hy + (vy + qw * uy + (qz * ux - qx * uz)),
                hz + (vz + qw * uz + (qx * uy - qy * ux)),
            )
        )
    for (k, axis), s in zip(kinds, root, strict=True):
        ex, ey, ez = ends[k]
        tx, ty, tz = targets[k]
        if axis is not None:
            b = bones[k]
            ax, ay, az = rotate(frames[b], axis)
            gx, gy, gz = rotate(orientation[b][0], axis)
            length = lengths[k]
            ex, ey, ez = ex + length * ax, ey + length * ay, ez + length * az
            tx, ty, tz = tx + length * gx, ty + length * gy, tz + length * gz
        rx, ry, rz = s * (ex - tx), s * (ey - ty), s * (ez - tz)
        total += rx * rx + ry * ry + rz * rz
    return total


def _solve(normal: np.ndarray, residual: list) -> np.ndarray:
    """np.linalg.solve(normal, residual) by the LAPACK gufunc it calls (the same routine on the same
    float64 arrays: the same bits), without its wrapper's shape and type checks and error state (6-8
    µs of a ~10 µs call on 6-9 unknowns). The rescale's normal matrix is symmetric positive definite
    (its ridge), never singular: the wrapper's LinAlgError cannot arise. A numpy without that
    private gufunc (present in 1.26 to 2.4) takes the public wrapper: the same routine and bits."""
    if _SOLVE1 is None:
        return np.linalg.solve(normal, np.asarray(residual, dtype=float))
    return _SOLVE1(normal, residual, signature="dd->d")


_SOLVE1 = getattr(getattr(np.linalg, "_umath_linalg", None), "solve1", None)


@functools.cache
def identity(n: int) -> np.ndarray:
    """The n x n identity (read only: the rescale adds its ridge times it)."""
    eye = np.eye(n)
    eye.flags.writeable = False
    return eye


def _turned(turn: tuple, amount: float, q: tuple) -> tuple:
    """floats.multiply(floats.scaled(turn, amount), q), written out (`turn` with w >= 0)."""
    tw, tx, ty, tz = turn
    sine = math.sqrt(tx * tx + ty * ty + tz * tz)
    if not sine > 1e-300:
        return q
    half = math.atan2(sine, tw) * amount
    f = math.sin(half) / sine
    aw, ax, ay, az = math.cos(half), tx * f, ty * f, tz * f
    bw, bx, by, bz = q
    return (
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    )
