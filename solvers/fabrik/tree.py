"""FABRIK on a tree: several end effectors (Aristidou & Lasenby 2011, §4.1 "multiple end effectors").

Each iteration is two passes over the moved bones (solvers.common.tree_plan):

- backward, tips to root: every goal point of a bone (its effector's end, or a moved child's
  head) asks for the bone's head where FABRIK puts it for that point alone: on the line from
  the point's target (the effector's position, or the child's new head) toward the head's
  current place, at the point's distance from the head. A bone with several goal points is a
  sub-base: its head goes to their weighted centroid (weights: the ranked weights of the
  effectors below each point, solvers.common.tree_plan: a higher priority level, pins first,
  dominates). Nested sub-bases follow, as the pass is children first.
- forward, root to tips: each bone hangs from its parent's new frame (a root's head stays) and
  turns to send its goal points toward their targets: the backward pass's child heads and
  the effector positions. One point is FABRIK's line (the minimal swing); several take the
  weighted least-squares rotation (solvers.maths.floats.best_rotation), a branch held by the
  backward pass at the weight it had there (HOLD). Then, as in chain FABRIK
  with limits, the turn is scaled by 1 - the bone's mean stiffness and its local rotation
  clamped into its limits, so every iteration ends in an allowed pose.

The iterations start from the input pose moved by a few least-squares steps (Method.
tree_start_steps, taken by solvers.skeleton_solve.stepped_start, as a bake's frames start): from
the input pose itself these passes turn the joints near the tips far more than the goals ask (on
Rigify's metarig 1.6-2x the rotation of Blender's own IK); from that start they close what the
steps leave, in fewer iterations.

An effector with an orientation turns its bone toward it by its rotation weight in both
passes (a pin's is 1: its bone holds its input frame). After the iterations, unlimited bones
whose twist no goal sees are given the minimal swing from their input rotation (as chain
FABRIK's swing_rotations), and each effector with a pole spins its own branch segment below
its sub-base (solvers.common.tree_poles).
"""

from __future__ import annotations

import math

import numpy as np

from .. import limits as joint_limits
from ..common.tree_plan import free_twist, make_plan
from ..common.tree_run import run
from ..maths.floats import (
    IDENTITY,
    X_AXIS,
    conjugate,
    multiply,
    normalize4,
    rotate,
    scaled,
    side,
    slerp,
    sphere_point,
    swing,
    unit,
)
from ..skeleton_floats import rows
from .tree_segments import chain_segments, settled_segments
from .tree_turns import on_spheres, pairs_turn

# Chain passes per iteration on each segment of a tree with sub-bases.
INNER = 8
SHELL_MARGIN = 1e-2
# The weight left to a branch that reaches as things stand when its sub-base is placed (its head
# and its turn): it lets the branches that cannot reach move the sub-base nearly as far as they
# need (at full weight in the turn, a reaching branch pulled the sub-base back each iteration and
# the other crept: on the metarig's five from the hips 2.6 iterations on average, up to 22, -> 1.7).
HOLD = 0.1
# Plain one-point bones placed by the written-out `place_plain`, and one-point heads estimated by
# `estimate`'s written-out terms (off: by `place`'s helper calls and `estimate`'s loop, the same
# bits; tests/solvers/test_tree_fabrik_floats.py compares them).
WRITTEN_OUT = True


def solve(skeleton, local: np.ndarray, effectors, tolerance: float, max_iterations: int, options: dict):
    """The registry's `tree` kernel for FABRIK (solvers.registry)."""
    if options.get("placement", "line") != "line":
        return "the tree passes place joints on lines (placement 'line'); sphere placement is for chains"
    plan = make_plan(skeleton, effectors)
    step = plan.steps.get(("fabrik", tolerance))
    if step is None:
        step = plan.steps[("fabrik", tolerance)] = make_step(skeleton, plan, tolerance)
    free = plan.steps.get("free")
    if free is None:
        free = plan.steps["free"] = free_twist(skeleton, plan)
    return run(skeleton, local, effectors, plan, step, tolerance, max_iterations, "fabrik", free)


def make_step(skeleton, plan, tolerance: float):
    """step(local, frames, heads): one iteration, in place on lists of tuples."""
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
    reverse = [i for i in reversed(order) if parents[i] != -1]  # a root's head never moves
    targets, points, orientation = plan.targets, plan.points, plan.orientation
    segments = chain_segments(parents, plan) if any(len(points[i]) > 1 for i in order) else []
    tops = {seg[0]: seg for seg in segments}
    settled = settled_segments(segments, keep, clamped, orientation)
    schedule = [i for i in order if not any(i in seg[1:] for seg in segments)]
    spans = {seg[0]: [math.dist((0.0, 0.0, 0.0), points[i][0][0]) for i in seg] for seg in segments}
    reach_of = {seg[0]: sum(spans[seg[0]]) for seg in segments}
    # Segments whose chain passes may be the article's spheres, and the shells they reach from.
    shells = {}
    for seg in segments:
        if seg[-1] in orientation or any(i in clamped for i in seg):
            continue
        outer = sum(spans[seg[0]])
        inner = max(0.0, 2.0 * max(spans[seg[0]]) - outer)
        margin = min(SHELL_MARGIN * outer, 0.5 * (outer - inner))  # FABRIK creeps held at full reach
        shells[seg[0]] = (inner + margin, outer - margin)
    holding: set[int] = set()
    # Unlimited bones without an orientation goal estimate their heads with the article's
    # spheres (at its offset from the parent's head as well as at its span from the target).
    # (A tree without sub-bases is one chain: the chain's line passes, as fabrik.chain_numpy.)
    pivots = {i: math.dist((0.0, 0.0, 0.0), offsets[i]) for i in reverse if i not in clamped | orientation.keys()}
    pivots = pivots if segments else {}
    pivots = {i: r for i, r in pivots.items() if r > 0.0}
    # Bones placed by place_plain: one goal point, no stiffness, limits or orientation goal.
    plain = {i: points[i][0][:3] for i in order if len(points[i]) == 1 and keep[i] == 1.0}
    plain = {i: v for i, v in plain.items() if i not in clamped and i not in orientation} if WRITTEN_OUT else {}
    # Bones with one goal point and no orientation goal on it: (effector, child, its distance, weight).
    lone = {}
    for i in reverse if WRITTEN_OUT else ():
        if len(points[i]) == 1 and not (points[i][0][2] == -1 and i in orientation):
            (vx, vy, vz), effector, child, w = points[i][0]
            lone[i] = (effector, child, math.sqrt(vx * vx + vy * vy + vz * vz), w)

    def goal(i: int, new_heads: dict) -> tuple:
        """Where bone i's only goal point is to go."""
        _, effector, child, _ = points[i][0]
        return targets[effector] if child == -1 else new_heads[child]

    def far_end(i: int, frames: list, heads: list) -> tuple:
        x, y, z = rotate(frames[i], points[i][0][0])
        hx, hy, hz = heads[i]
        return (hx + x, hy + y, hz + z)

    def estimate(i: int, new_heads: dict, frames: list, heads: list) -> None:
        """Backward: bone i's head where its goal points put it (their weighted centroid)."""
        hx, hy, hz = heads[i]
        if i in lone and lone[i][1] not in holding:
            # One goal point: the loop's terms below written out (w x e / w: the loop's very bits).
            effector, child, d, w = lone[i]
            tx, ty, tz = targets[effector] if child == -1 else new_heads[child]
            if i in pivots:
                ex = on_spheres(tx, ty, tz, heads[parents[i]], d, pivots[i], hx, hy, hz)
                if ex is None:  # (the target on the parent's head, or the head on their line)
                    tie = rotate(frames[i], X_AXIS)
                    ex = sphere_point((tx, ty, tz), heads[parents[i]], d, pivots[i], heads[i], tie)
                ex, ey, ez = ex
                new_heads[i] = (w * ex / w, w * ey / w, w * ez / w)
                return
            dx, dy, dz = hx - tx, hy - ty, hz - tz
            r = math.sqrt(dx * dx + dy * dy + dz * dz)
            if r > 1e-300:
                ex, ey, ez = tx + d * dx / r, ty + d * dy / r, tz + d * dz / r
                new_heads[i] = (w * ex / w, w * ey / w, w * ez / w)
                return
        sx = sy = sz = total = 0.0
        for vec, effector, child, w in points[i]:
            tx, ty, tz = targets[effector] if child == -1 else new_heads[child]
            if child in holding:
                w *= HOLD
            if child == -1 and i in orientation:
                # The bone turned about its end toward its old head, then toward the wanted frame.
                have = rotate(frames[i], vec)
                back = unit((-have[0], -have[1], -have[2]))
                turn = swing(back, unit((hx - tx, hy - ty, hz - tz)), side(frames[i], back))
                wanted, weight = orientation[i]
                ox, oy, oz = rotate(slerp(multiply(turn, frames[i]), wanted, weight), vec)
                ex, ey, ez = tx - ox, ty - oy, tz - oz
            else:
                dx, dy, dz = hx - tx, hy - ty, hz - tz
                r = math.sqrt(dx * dx + dy * dy + dz * dz)
                d = math.sqrt(vec[0] * vec[0] + vec[1] * vec[1] + vec[2] * vec[2])
                if i in pivots:
                    # The article's spheres: at d from the target and its offset from its
                    # parent's head as it stands, nearest where it is (the tie read only on their line).
                    p = parents[i]
                    e = on_spheres(tx, ty, tz, heads[p], d, pivots[i], hx, hy, hz)
                    if e is None:
                        e = sphere_point((tx, ty, tz), heads[p], d, pivots[i], heads[i], rotate(frames[i], X_AXIS))
                    ex, ey, ez = e
                elif r > 1e-300:
                    ex, ey, ez = tx + d * dx / r, ty + d * dy / r, tz + d * dz / r
                else:  # target on the head: keep the bone's direction
                    vx, vy, vz = rotate(frames[i], vec)
                    ex, ey, ez = tx - vx, ty - vy, tz - vz
            sx += w * ex
            sy += w * ey
            sz += w * ez
            total += w
        new_heads[i] = (sx / total, sy / total, sz / total)

    def hold(seg: list, new_heads: dict, frames: list, heads: list) -> None:
        """A segment asks its sub-base to move only as far as it must: not at all when its goal
        is within its reach from where its top head is, else (shells) onto the nearest head from
        which it reaches. (FABRIK's own estimate pulls a sub-base even when every branch
        reaches, each branch differently, so the trunk would drift for many iterations.)"""
        top = seg[0]
        here = heads[top]
        if top not in shells:
            if math.dist(far_end(seg[-1], frames, heads), goal(seg[-1], new_heads)) <= tolerance:
                new_heads[top] = here
                holding.add(top)
            return
        inner, outer = shells[top]
        tx, ty, tz = goal(seg[-1], new_heads)
        dx, dy, dz = here[0] - tx, here[1] - ty, here[2] - tz
        r = math.sqrt(dx * dx + dy * dy + dz * dz)
        if inner <= r <= outer or r <= 0.0:
            new_heads[top] = here
            holding.add(top)
            return
        radius = outer if r > outer else inner
        new_heads[top] = (tx + radius * dx / r, ty + radius * dy / r, tz + radius * dz / r)

    def place(i: int, new_heads: dict, local: list, frames: list, heads: list) -> None:
        """Forward: bone i hung from its parent, turned to send its goal points to their targets
        (`placer[i]`: a plain bone by `place_plain`, the same bits)."""
        p = parents[i]
        if p == -1:
            parent, head = base, offsets[i]
        else:
            parent = frames[p]
            ox, oy, oz = rotate(parent, offsets[i])
            hx, hy, hz = heads[p]
            head = (hx + ox, hy + oy, hz + oz)
        rest = multiply(parent, reference[i])
        inherited = multiply(rest, local[i])
        hx, hy, hz = head
        if len(points[i]) == 1:
            vec, effector, child, _ = points[i][0]
            tx, ty, tz = targets[effector] if child == -1 else new_heads[child]
            ua, ub = unit(rotate(inherited, vec)), unit((tx - hx, ty - hy, tz - hz))
            if ub == (0.0, 0.0, 0.0):
                turn = IDENTITY
            else:  # (the tie-breaker axis only matters near a half turn)
                near_half = ua[0] * ub[0] + ua[1] * ub[1] + ua[2] * ub[2] < -0.5
                turn = swing(ua, ub, side(inherited, ua) if near_half else X_AXIS)
        else:  # floats.best_rotation of the goal points (on floats: tree_turns), held branches at HOLD
            turn = pairs_turn(points[i], inherited, head, targets, new_heads, holding, HOLD)
        if keep[i] != 1.0:
            turn = scaled(turn, keep[i])
        frame = multiply(turn, inherited)
        if i in orientation:
            wanted, weight = orientation[i]
            frame = slerp(frame, wanted, weight)
        new_local = normalize4(multiply(conjugate(rest), frame))
        if i in clamped:
            new_local = tuple(joint_limits.clamp(limits, i, np.array(new_local)).tolist())
            frame = multiply(rest, new_local)
        local[i], frames[i], heads[i] = new_local, frame, head

    def place_plain(i: int, new_heads: dict, local: list, frames: list, heads: list) -> None:
        """`place` of a bone with one goal point, no stiffness, limits or orientation goal: its
        floats.rotate / multiply / unit / swing / normalize4 written out, term by term in their
        order (the same bits: tests/solvers/test_tree_fabrik_floats.py), for the helpers' calls
        cost more than their arithmetic here."""
        vec, effector, child = plain[i]
        p = parents[i]
        if p == -1:
            pw, px, py, pz = base
            head = offsets[i]
        else:
            pw, px, py, pz = frames[p]
            vx, vy, vz = offsets[i]
            tx, ty, tz = 2.0 * (py * vz - pz * vy), 2.0 * (pz * vx - px * vz), 2.0 * (px * vy - py * vx)
            hx, hy, hz = heads[p]
            head = (
                hx + (vx + pw * tx + (py * tz - pz * ty)),
                hy + (vy + pw * ty + (pz * tx - px * tz)),
                hz + (vz + pw * tz + (px * ty - py * tx)),
            )
        bw, bx, by, bz = reference[i]  # rest = parent x reference
        rw = pw * bw - px * bx - py * by - pz * bz
        rx = pw * bx + px * bw + py * bz - pz * by
        ry = pw * by - px * bz + py * bw + pz * bx
        rz = pw * bz + px * by - py * bx + pz * bw
        bw, bx, by, bz = local[i]  # inherited = rest x local
        iw = rw * bw - rx * bx - ry * by - rz * bz
        ix = rw * bx + rx * bw + ry * bz - rz * by
        iy = rw * by - rx * bz + ry * bw + rz * bx
        iz = rw * bz + rx * by - ry * bx + rz * bw
        vx, vy, vz = vec  # ua = unit(rotate(inherited, vec))
        tx, ty, tz = 2.0 * (iy * vz - iz * vy), 2.0 * (iz * vx - ix * vz), 2.0 * (ix * vy - iy * vx)
        ax, ay, az = (
            vx + iw * tx + (iy * tz - iz * ty),
            vy + iw * ty + (iz * tx - ix * tz),
            vz + iw * tz + (ix * ty - iy * tx),
        )
        n = math.sqrt(ax * ax + ay * ay + az * az)
        ax, ay, az = (ax / n, ay / n, az / n) if n > 0.0 else (0.0, 0.0, 0.0)
        hx, hy, hz = head
        tx, ty, tz = targets[effector] if child == -1 else new_heads[child]
        tx, ty, tz = tx - hx, ty - hy, tz - hz  # ub = unit(goal - head)
        n = math.sqrt(tx * tx + ty * ty + tz * tz)
        if not n > 0.0:
            tw, tx, ty, tz = IDENTITY
        else:
            tx, ty, tz = tx / n, ty / n, tz / n
            dot = ax * tx + ay * ty + az * tz
            if dot >= 0.0:  # swing's short arc, normalize4'd
                tw, tx, ty, tz = 1.0 + dot, ay * tz - az * ty, az * tx - ax * tz, ax * ty - ay * tx
                n = math.sqrt(tw * tw + tx * tx + ty * ty + tz * tz)
                tw, tx, ty, tz = (tw / n, tx / n, ty / n, tz / n) if n > 0.0 else (0.0, 0.0, 0.0, 0.0)
            else:  # (the tie-breaker axis only matters near a half turn)
                inherited, ua = (iw, ix, iy, iz), (ax, ay, az)
                tw, tx, ty, tz = swing(ua, (tx, ty, tz), side(inherited, ua) if dot < -0.5 else X_AXIS)
        fw = tw * iw - tx * ix - ty * iy - tz * iz  # frame = turn x inherited
        fx = tw * ix + tx * iw + ty * iz - tz * iy
        fy = tw * iy - tx * iz + ty * iw + tz * ix
        fz = tw * iz + tx * iy - ty * ix + tz * iw
        cx, cy, cz = -rx, -ry, -rz  # local = normalize4(conjugate(rest) x frame)
        lw = rw * fw - cx * fx - cy * fy - cz * fz
        lx = rw * fx + cx * fw + cy * fz - cz * fy
        ly = rw * fy - cx * fz + cy * fw + cz * fx
        lz = rw * fz + cx * fy - cy * fx + cz * fw
        n = math.sqrt(lw * lw + lx * lx + ly * ly + lz * lz)
        local[i] = (lw / n, lx / n, ly / n, lz / n) if n > 0.0 else (0.0, 0.0, 0.0, 0.0)
        frames[i], heads[i] = (fw, fx, fy, fz), head

    def spheres(seg: list, new_heads: dict, frames: list, heads: list) -> None:
        """The article's CGA passes (fabrik.chain_numpy, placement "sphere") on an unlimited
        segment: each joint where the spheres about its two neighbours meet, nearest where it
        is. A near-straight segment (a leg reaching far) then reaches in a pass or two, where
        line passes creep."""
        lengths = spans[seg[0]]
        n = len(seg)
        p = [heads[i] for i in seg]
        p.append(goal(seg[-1], new_heads))
        # floats.sphere_point, written out where it reads no tie (on_spheres: the same bits)
        for j in range(n - 1, 0, -1):
            a, b, near = p[j + 1], p[j - 1], p[j]
            q = on_spheres(*a, b, lengths[j], lengths[j - 1], *near)
            if q is None:
                q = sphere_point(a, b, lengths[j], lengths[j - 1], near, rotate(frames[seg[j]], X_AXIS))
            p[j] = q
        for j in range(n - 1):
            a, b, near = p[j], p[j + 2], p[j + 1]
            q = on_spheres(*a, b, lengths[j], lengths[j + 1], *near)
            if q is None:  # (the tie of the bone above, as ever)
                q = sphere_point(a, b, lengths[j], lengths[j + 1], near, rotate(frames[seg[j]], X_AXIS))
            p[j + 1] = q
        for j in range(1, n):
            new_heads[seg[j]] = p[j]

    def chain(seg: list, new_heads: dict, local: list, frames: list, heads: list) -> None:
        """A segment placed from its (placed) parent, then up to INNER chain passes toward its
        goal: its effector's position, or the head its sub-base child is to take."""
        for i in seg:
            placer[i](i, new_heads, local, frames, heads)
        if seg[0] in settled:
            return
        top = heads[seg[0]]
        gx, gy, gz = goal(seg[-1], new_heads)
        dx, dy, dz = gx - top[0], gy - top[1], gz - top[2]
        r = math.sqrt(dx * dx + dy * dy + dz * dz)
        if r >= reach_of[seg[0]] - tolerance and r > 0.0:
            # Beyond reach: straight toward the goal at once (the chain's far answer).
            along = 0.0
            for j in range(1, len(seg)):
                along += spans[seg[0]][j - 1] / r
                new_heads[seg[j]] = (top[0] + along * dx, top[1] + along * dy, top[2] + along * dz)
            for i in seg:
                placer[i](i, new_heads, local, frames, heads)
            return
        inner = seg[1:][::-1]
        end = far_end(seg[-1], frames, heads)
        for _ in range(INNER):
            if math.dist(end, goal(seg[-1], new_heads)) <= tolerance:
                break
            if seg[0] in shells:
                spheres(seg, new_heads, frames, heads)
            else:
                for i in inner:
                    estimate(i, new_heads, frames, heads)
            for i in seg:
                placer[i](i, new_heads, local, frames, heads)
            last, end = end, far_end(seg[-1], frames, heads)
            if math.dist(last, end) <= 0.01 * tolerance:
                break  # as near as it gets (a goal beyond reach)

    def step(local: list, frames: list, heads: list) -> None:
        new_heads: dict = {}
        holding.clear()
        for i in reverse:
            estimate(i, new_heads, frames, heads)
            if i in tops:
                hold(tops[i], new_heads, frames, heads)
        for i in schedule:
            if i in tops:
                chain(tops[i], new_heads, local, frames, heads)
            else:
                placer[i](i, new_heads, local, frames, heads)

    placer = {i: place_plain if i in plain else place for i in order}
    return step
