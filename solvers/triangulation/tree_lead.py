"""A sub-base's lead: the frame its trunk would give it if every joint from the trunk's first bone
down to the effectors took its least-norm share of the way to the goals.

The paper's chain lets its upper joints lead; in a tree the trunk (a segment ending on a sub-base)
must decide how much of its branches' turn to take before they move. Rounds of the least-norm
(Gauss-Newton) step of all those joints toward the effectors' goals, taken on a scratch copy of
the pose, say where the sub-base's frame then is; the segment is then triangulated to that frame
(tree_frame.sub_base_frame fits it for reach) and each branch by the paper's pass from there, so
the pose itself is still made by one root-first pass. One round (the linear split) left the arms
turning nearly as much as before; the rounds converge toward the split a least-squares solver
settles on (docs/design.md, "Tree triangulation: turn and speed").
"""

from __future__ import annotations

from math import cos, sin, sqrt

from ..maths.floats import IDENTITY, conjugate, multiply, normalize4
from ..skeleton import Effector, Skeleton
from ..skeleton_floats import end_point
from .tree_frame import solve_small
from .tree_plan import joints_below

# Least-norm steps. bench/bench_tree.py's rotation cost against Blender's (two hands / hands and
# head / five from the hips) in 1, 2, 3, 4 rounds: 1.29/1.29/1.20x, 1.15/1.23/1.16x,
# 1.10/1.16/1.11x, 1.10/1.13/1.08x (before, the chest's 2/3 facing turn: 1.34/1.23/1.22x).
ROUNDS = 4
# x the mean diagonal of J J^T, per effector x (heaviest weight / its weight); 0.1 and 0.03
# measured 1.06/1.15/1.10x and 1.18/1.13/1.09x, 0.05 the only one leaving every conflicting
# sum of squares no worse than before.
DAMPING = 0.05


def lead(
    skeleton: Skeleton, bones: list[int], frames: list, heads: list, under: list[Effector], weight: dict
) -> tuple[tuple, tuple]:
    """(turn of the sub-base's frame about its head, shift of that head) after ROUNDS least-norm
    steps of every joint from the segment `bones`' first down to the effectors `under` (their
    ranked weights `weight`, by bone: a lighter effector's goal is damped more). Plain floats."""
    effs = tuple(e.bone for e in under)
    joints = joints_below(skeleton, bones[0], effs)
    goals = [tuple(e.position.tolist()) for e in under]
    k = len(effs)
    n = 3 * k
    heaviest = max(weight[b] for b in effs)
    damping = [DAMPING * heaviest / weight[b] for b in effs]
    base = tuple(skeleton.base_frame.tolist())
    first = bones[0]
    frames = {j: frames[j] for j, *_ in joints} | ({} if joints[0][1] == -1 else {joints[0][1]: frames[joints[0][1]]})
    heads = {j: heads[j] for j, *_ in joints}
    top = bones[-1]
    start_frame, start_head = frames[top], heads[top]
    for _ in range(ROUNDS):
        tips = [end_point(skeleton, frames, heads, b) for b in effs]
        normal = [[0.0] * n for _ in range(n)]  # J J^T, 3 x 3 blocks per pair of effectors
        levers = []
        for j, _, ks, _, _ in joints:
            hx, hy, hz = heads[j]
            arms = [(tips[a][0] - hx, tips[a][1] - hy, tips[a][2] - hz) for a in ks]
            levers.append(arms)
            for ia, a in enumerate(ks):
                ax, ay, az = arms[ia]
                for ib in range(ia + 1):
                    b = ks[ib]
                    bx, by, bz = arms[ib]
                    d = ax * bx + ay * by + az * bz
                    # block (a, b) += (la . lb) I - lb la^T ([la]x [lb]x^T), written out (the
                    # same sums: the loops over its entries were most of a round)
                    row, col = 3 * a, 3 * b
                    line = normal[row]
                    line[col] += d - bx * ax
                    line[col + 1] += 0.0 - bx * ay
                    line[col + 2] += 0.0 - bx * az
                    line = normal[row + 1]
                    line[col] += 0.0 - by * ax
                    line[col + 1] += d - by * ay
                    line[col + 2] += 0.0 - by * az
                    line = normal[row + 2]
                    line[col] += 0.0 - bz * ax
                    line[col + 1] += 0.0 - bz * ay
                    line[col + 2] += d - bz * az
        for i in range(n):  # the lower blocks' mirror (a block above the diagonal transposed)
            for j in range(i + 1, n):
                normal[i][j] = normal[j][i]
        mean = sum(normal[i][i] for i in range(n)) / n
        for a in range(k):
            for r in range(3):
                normal[3 * a + r][3 * a + r] += damping[a] * mean
        miss = []
        for a in range(k):
            miss.extend((goals[a][0] - tips[a][0], goals[a][1] - tips[a][1], goals[a][2] - tips[a][2]))
        y = solve_small(normal, miss)
        if y is None:
            break
        # Each joint turns by J^T y (the world rotation vector sum of lever x y) about its head,
        # relative to its parent: its local rotation, read with the parents as they are, turned.
        turned = {}
        for (j, p, ks, (qw, qx, qy, qz), _), arms in zip(joints, levers, strict=True):
            wx = wy = wz = 0.0
            for a, (lx, ly, lz) in zip(ks, arms, strict=True):
                yx, yy, yz = y[3 * a], y[3 * a + 1], y[3 * a + 2]
                wx += ly * yz - lz * yy
                wy += lz * yx - lx * yz
                wz += lx * yy - ly * yx
            # normalize4(multiply(conjugate(multiply(parent, reference)), multiply(from_rotation_vector(w),
            # frames[j]))) written out (the same terms in their order: the helpers' calls were most of it)
            angle = sqrt(wx * wx + wy * wy + wz * wz)
            half = 0.5 * angle
            scale = sin(half) / angle if angle > 1e-12 else 0.5
            rw, rx, ry, rz = cos(half), wx * scale, wy * scale, wz * scale
            bw, bx, by, bz = frames[j]
            tw = rw * bw - rx * bx - ry * by - rz * bz
            tx = rw * bx + rx * bw + ry * bz - rz * by
            ty = rw * by - rx * bz + ry * bw + rz * bx
            tz = rw * bz + rx * by - ry * bx + rz * bw
            pw, px, py, pz = base if p == -1 else frames[p]
            sw = pw * qw - px * qx - py * qy - pz * qz
            sx = -(pw * qx + px * qw + py * qz - pz * qy)
            sy = -(pw * qy - px * qz + py * qw + pz * qx)
            sz = -(pw * qz + px * qy - py * qx + pz * qw)
            uw = sw * tw - sx * tx - sy * ty - sz * tz
            ux = sw * tx + sx * tw + sy * tz - sz * ty
            uy = sw * ty - sx * tz + sy * tw + sz * tx
            uz = sw * tz + sx * ty - sy * tx + sz * tw
            norm = sqrt(uw * uw + ux * ux + uy * uy + uz * uz)
            turned[j] = (uw / norm, ux / norm, uy / norm, uz / norm) if norm > 0.0 else (0.0, 0.0, 0.0, 0.0)
        _carry(joints, frames, heads, turned, base, first)
    turn = normalize4(multiply(frames[top], conjugate(start_frame)))
    return (IDENTITY if turn == IDENTITY else turn), tuple(a - b for a, b in zip(heads[top], start_head, strict=True))


def _carry(joints: list[tuple], frames: dict, heads: dict, turned: dict, base: tuple, first: int) -> None:
    """Forward kinematics over `joints` (parents first) from their `turned` local rotations (the
    first joint's parent stays: its head too)."""
    for j, p, _, (qw, qx, qy, qz), (vx, vy, vz) in joints:
        # frames[j] = multiply(multiply(parent, reference), turned[j]); heads[j] = heads[p] +
        # rotate(parent, offset): written out (the same terms in their order)
        pw, px, py, pz = base if p == -1 else frames[p]
        rw = pw * qw - px * qx - py * qy - pz * qz
        rx = pw * qx + px * qw + py * qz - pz * qy
        ry = pw * qy - px * qz + py * qw + pz * qx
        rz = pw * qz + px * qy - py * qx + pz * qw
        bw, bx, by, bz = turned[j]
        frames[j] = (
            rw * bw - rx * bx - ry * by - rz * bz,
            rw * bx + rx * bw + ry * bz - rz * by,
            rw * by - rx * bz + ry * bw + rz * bx,
            rw * bz + rx * by - ry * bx + rz * bw,
        )
        if j != first:
            tx, ty, tz = 2.0 * (py * vz - pz * vy), 2.0 * (pz * vx - px * vz), 2.0 * (px * vy - py * vx)
            hx, hy, hz = heads[p]
            heads[j] = (
                hx + (vx + pw * tx + (py * tz - pz * ty)),
                hy + (vy + pw * ty + (pz * tx - px * tz)),
                hz + (vz + pw * tz + (px * ty - py * tx)),
            )
